"""`ks report SESSION --html FILE` end to end: a session built on attention_cpu with the real store and harness
(`ks try` as child processes: a timed run, a compile error after a question, a result timed elsewhere, an
unchecked edit after another question), its page written, carried to a fresh clone by `ks session export` /
`import`, and opened in headless Chromium (Debian's package, driven by Playwright; no browser download).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest

# One session built through `ks try` children, exported, imported and drawn in Chromium: every test here reads it.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Flags for a closed network: nothing phones home. Playwright adds --headless, and --user-data-dir for the fresh
# profile folder each run gets (launch_persistent_context).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
# A summary that would run script if any part of the page put it into the DOM as markup.
INJECTION = '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script> broken on purpose'


def ks(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ks_tui", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def ok(out: subprocess.CompletedProcess, code: int = 0) -> subprocess.CompletedProcess:
    assert out.returncode == code, out.stdout + out.stderr
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("html_report")
    home = root / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Test User\n\temail = test@example.com\n"
                                     "[init]\n\tdefaultBranch = main\n")
    env = {k: v for k, v in os.environ.items() if k not in ("KS_WORKSPACE", "GIT_DIR", "GIT_WORK_TREE")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", PYTHONPATH=str(ROOT))
    ok(ks("init", "ws", cwd=root, env=env))
    ws = root / "ws"
    # Few timed calls: the test wants a timed result, not a precise one.
    task_yaml = ws / "kernels" / "attention_cpu" / "task.yaml"
    text = task_yaml.read_text()
    for old, new in (("warmup: 2", "warmup: 1"), ("min_reps: 5", "min_reps: 3"), ("max_reps: 100", "max_reps: 3"),
                     ("budget_s: 0.2", "budget_s: 0.01")):
        assert old in text
        text = text.replace(old, new)
    task_yaml.write_text(text)
    subprocess.run(["git", "commit", "-qam", "fewer timed calls"], cwd=ws, env=env, check=True)
    sid = ok(ks("session", "new", "attention_cpu", cwd=ws, env=env)).stdout.split()[0]
    kernel = ws / "sessions" / sid / "worktree" / "kernels" / "attention_cpu" / "kernel.cpp"
    seed = kernel.read_text()

    first = json.loads(ok(ks("try", "-s", sid, "--quick", "--summary", "seed kernel", "--json",
                             cwd=ws, env=env)).stdout)
    kernel.write_text(seed + "\nthis is not C++;\n")
    ok(ks("try", "-s", sid, "--quick", "--question", "layer-overlap", "--summary", INJECTION, cwd=ws, env=env), 1)
    # A kernel timed on another machine, recorded with its result: the seed's result, 20% faster, with the
    # speed-of-light fraction results carry per scenario.
    candidate = root / "candidate.cpp"
    loop = "for (int t = 0; t < d; ++t) s += qi[t] * kj[t];"
    assert loop in seed
    candidate.write_text(seed.replace(loop, "#pragma GCC unroll 4\n                    " + loop))
    result = first["result"]
    result["kernel_sha256"] = hashlib.sha256(candidate.read_bytes()).hexdigest()
    for s in result["scenarios"]:
        s["time_ms"] *= 0.8
        s["speedup"] /= 0.8
        s["speed_of_light"] = {"bound": "compute", "limit_ms": s["time_ms"] * 0.25, "fraction": 0.25}
    result["geomean_speedup"] /= 0.8
    (root / "r3.json").write_text(json.dumps(result))
    ok(ks("try", "-s", sid, "--kernel", str(candidate), "--result", str(root / "r3.json"),
          "--summary", "unrolled dot product (timed elsewhere)", cwd=ws, env=env))
    kernel.write_text(candidate.read_text().replace("#pragma GCC unroll 4", "#pragma GCC unroll 8"))
    ok(ks("try", "-s", sid, "--no-run", "--question", "layer-thread-roles", "--summary", "unroll by 8",
          cwd=ws, env=env))

    page = root / "page.html"
    written = ok(ks("report", sid, "--html", str(page), cwd=ws, env=env))
    # The same session in a fresh clone of the workspace's main branch, through an export.
    ok(ks("session", "export", sid, str(root / "s.tgz"), cwd=ws, env=env))
    clone = root / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ws), str(clone)], env=env, check=True)
    ok(ks("session", "import", str(root / "s.tgz"), cwd=clone, env=env))
    imported = root / "imported.html"
    doc = json.loads(ok(ks("report", "--session", sid, "--html", str(imported), "--json", cwd=clone, env=env)).stdout)
    return SimpleNamespace(root=root, ws=ws, clone=clone, sid=sid, env=env, page=page, imported=imported,
                           written=written.stdout, doc=doc)


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_the_page_is_one_file_that_fetches_nothing_and_escapes_attempt_text(built):
    text = built.page.read_text(encoding="utf-8")
    assert f"wrote {built.page}" in built.written
    assert built.page.stat().st_size < 6_000_000
    parser = _Tags()
    parser.feed(text)
    tags = parser.tags
    assert not [t for t, a in tags if t in ("img", "link", "iframe", "object", "embed")]
    assert not [a for t, a in tags if t == "script" and "src" in a]
    assert "<img src=x" not in text and "window.__pwned=2</script>" not in text
    # the summary is there, escaped (plotly's labels show &lt; as <)
    assert "&lt;img src=x onerror" in text
    # the question asked before the failed attempt, in the efficacy table
    assert "layer-overlap" in text and "layer-thread-roles" in text


def test_an_imported_session_gives_the_same_page(built):
    assert built.doc["session"] == built.sid and built.doc["attempts"] == 4 and built.doc["best_attempt"] == 3

    def body(p: Path) -> str:  # all but the footer's time of making
        return p.read_text(encoding="utf-8").rsplit("<footer>", 1)[0]

    assert body(built.imported) == body(built.page)


def test_the_text_report_is_unchanged_and_a_bad_destination_is_one_line(built):
    out = ok(ks("report", built.sid, cwd=built.ws, env=built.env)).stdout
    assert "attempts (4):" in out and "<html" not in out
    bad = ks("report", built.sid, "--html", str(built.root / "no" / "such" / "page.html"), cwd=built.ws, env=built.env)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "no folder" in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def _artifacts_dir() -> Path:
    return Path(os.environ.get("KS_TEST_ARTIFACTS") or ROOT / "tests" / "artifacts")


def test_the_page_draws_in_headless_chromium_without_a_request_or_an_error(built):
    if not CHROMIUM:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is missing in CI: .ci/run installs Debian's chromium package")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra")
    url = built.imported.resolve().as_uri()
    requests, problems, dialogs = [], [], []
    shot = built.root / "report.png"
    with sync_api.sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        browser = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                       args=CHROMIUM_ARGS, viewport={"width": 1360, "height": 900})
        try:
            page = browser.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(url, wait_until="load")
            page.wait_for_selector("#timeline .scatterlayer .point", timeout=30_000)
            # every attempt a point, and the two questions asked (the best-so-far line is a path)
            assert page.locator("#timeline .scatterlayer .point").count() == 4 + 2
            assert page.locator("#timeline .scatterlayer .js-line").count() >= 1
            # both masks, for the speedup and for the speed-of-light fraction
            assert page.locator("#heat-speedup .hm image").count() == 2
            assert page.locator("#heat-sol .hm image").count() == 2
            assert page.locator("table tbody tr").count() >= 3
            hover = _hover_attempt(page, "#2")
            assert "<img src=x" in hover and "compile error" in hover.replace("_", " ")
            assert page.evaluate("window.__pwned === undefined")
            assert page.locator("img").count() == 0
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert problems == [] and dialogs == []
    assert requests == [url]
    assert shot.stat().st_size > 10_000
    dest = _artifacts_dir()
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, dest / "html_report.png")
    print(f"screenshot: {shot} (copied to {dest / 'html_report.png'})")


def _hover_attempt(page, label: str) -> str:
    """Move the mouse over each attempt's point until plotly's hover label names `label`; its text.

    Waits for a label with that text, not for any label: on a loaded machine plotly redraws late, and the label
    still showing is the previous point's."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    points = page.locator("#timeline .scatterlayer .point").all()
    for point in points + points:  # a second pass: on a loaded machine a hover can be missed
        box = point.bounding_box()
        if not box:
            continue
        page.mouse.move(0, 0)  # off the plot first, so each point is a new hover
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=3)
        wanted = page.locator("#timeline .hoverlayer .hovertext", has_text=label).first
        try:
            wanted.wait_for(timeout=4_000)
        except PlaywrightTimeout:  # this point is another attempt's (or its label came too late)
            continue
        return wanted.text_content() or ""
    raise AssertionError(f"no hover label names attempt {label}")
