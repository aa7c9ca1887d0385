"""variants.py --at: a candidate (or the best kernel) as an earlier commit had it, from real git history."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.flash_attn_fwd.scripts import variants as today

REPO = Path(__file__).resolve().parents[3]
SCRIPT = Path(today.__file__)
RUN = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.variants"]  # from the repository root (cwd or PYTHONPATH)
BEST_KERNEL = REPO / "kernels/flash_attn_fwd/best/kernel.cu"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def history(tmp_path):
    """A repository whose first commit holds today's variants.py (where the task folder kept it then) and
    best/kernel.cu, and whose second commit moves variants.py to the lab and changes both: the kernel gains a
    line, and variants.py loses every candidate."""
    repo = tmp_path / "repo"
    old_scripts = repo / "kernels/flash_attn_fwd/scripts"
    scripts = repo / "lab/flash_attn_fwd/scripts"
    best = repo / "kernels/flash_attn_fwd/best"
    old_scripts.mkdir(parents=True)
    best.mkdir(parents=True)
    shutil.copy(SCRIPT, old_scripts / "variants.py")
    shutil.copy(BEST_KERNEL, best / "kernel.cu")
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    first = git(repo, "rev-parse", "HEAD")
    scripts.parent.mkdir(parents=True)
    git(repo, "mv", "kernels/flash_attn_fwd/scripts", "lab/flash_attn_fwd/scripts")
    (best / "kernel.cu").write_text("// v99\n" + BEST_KERNEL.read_text())
    text = (scripts / "variants.py").read_text()
    start = text.index("VARIANTS: dict[str, tuple[str, str, list[tuple]]] = {")
    end = text.index("\n}\n", start)
    (scripts / "variants.py").write_text(text[:start] + "VARIANTS: dict[str, tuple[str, str, list[tuple]]] = {" + text[end:])
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "second")
    spec = importlib.util.spec_from_file_location("variants_now", scripts / "variants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return repo, first, module


def test_a_candidate_comes_back_as_it_was_rendered_at_its_commit(history):
    repo, first, module = history
    assert module.VARIANTS == {}  # gone from the file at HEAD
    name = next(iter(today.VARIANTS))
    # The same bytes today's file renders from today's best/kernel.cu: the first commit held exactly those.
    assert module.render_at(first, name, repo) == today.render(name)
    assert module.render_at(first, "kernel", repo) == BEST_KERNEL.read_text()
    assert module.render_at("HEAD", "kernel", repo).startswith("// v99\n")
    assert module.short_sha(first, repo) == first[:7]


def test_a_missing_commit_or_name_is_one_clear_error(history):
    repo, first, module = history
    with pytest.raises(module.VariantError, match="Needed a single revision|unknown revision"):
        module.render_at("no-such-commit", "kernel", repo)
    with pytest.raises(module.VariantError, match="no variant 'next_q4' at"):
        module.render_at(first, "next_q4", repo)
    with pytest.raises(module.VariantError, match="no variant"):
        module.render_at("HEAD", "next_anything", repo)  # HEAD's variants.py has none


def test_the_command_writes_nothing_and_exits_2_on_bad_input():
    out = subprocess.run([*RUN, "--at", "no-such-commit", "kernel"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.startswith("variants.py: git rev-parse") and "Traceback" not in out.stderr
    out = subprocess.run([*RUN, "--at", "HEAD"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--at COMMIT NAME" in out.stderr
