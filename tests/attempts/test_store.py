"""AttemptStore on real git repositories: sessions, attempts, history, rollback."""

from __future__ import annotations

import hashlib
import json
import subprocess

import pytest

from ks_tui.attempts import AttemptStore
from ks_tui.errors import KsError
from ks_tui.trace import Trace
from tests.attempts.conftest import git, result_for


def user_state(ws):
    """Everything about the user's own checkout that KernelSeek must never change."""
    return {
        "head": git(ws, "rev-parse", "HEAD"),
        "branch": git(ws, "symbolic-ref", "-q", "HEAD", check=False),
        "status": git(ws, "status", "--porcelain=v2", "--untracked-files=all"),
        "index": hashlib.sha256((ws / ".git" / "index").read_bytes()).hexdigest(),
        "staged": git(ws, "diff", "--cached"),
        "unstaged": git(ws, "diff"),
        "kernel": (ws / "kernels/toy/kernel.cpp").read_bytes(),
        "config": (ws / ".git" / "config").read_bytes(),
    }


def edit(path, marker: str) -> None:
    path.write_text(path.read_text() + f"// {marker}\n")


def test_session_gets_its_own_branch_and_worktree_and_leaves_the_user_checkout_alone(workspace):
    # The user is mid-work: an unstaged kernel edit, a staged new file, an untracked file.
    (workspace / "kernels/toy/kernel.cpp").write_text("// user's unfinished idea\n")
    (workspace / "notes.txt").write_text("staged\n")
    git(workspace, "add", "notes.txt")
    (workspace / "scratch.txt").write_text("untracked\n")
    before = user_state(workspace)

    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    assert s.branch == f"ks/toy/{s.id}"
    assert kernel == s.worktree.resolve() / "kernels/toy/kernel.cpp"
    # The session starts from HEAD, not from the user's uncommitted edit (and says so).
    assert "user's unfinished idea" not in kernel.read_text()
    assert store.uncommitted_task_changes("toy") == ["kernels/toy/kernel.cpp"]

    store.record(s.id, result_for(kernel, speedup=1.0))
    edit(kernel, "agent try")
    store.record(s.id, result_for(kernel, status="incorrect", n_ok=1))
    edit(kernel, "human try")
    store.commit_human_edit(s.id)
    store.rollback(s.id, 1)

    assert user_state(workspace) == before
    assert (workspace / "notes.txt").read_text() == "staged\n"


def test_trailers_are_in_git_log_and_parse_with_git_interpret_trailers(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    edit(kernel, "v2")
    a = store.record(s.id, result_for(kernel, speedup=1.25), question="layer-switch", summary="tile 64x64")

    shown = git(workspace, "log", "-1", s.branch)
    assert "tile 64x64" in shown and f"KS-Session: {s.id}" in shown
    message = git(workspace, "log", "-1", "--format=%B", a.sha)
    parsed = subprocess.run(["git", "interpret-trailers", "--parse"], input=message, capture_output=True,
                            text=True, check=True).stdout
    trailers = dict(line.split(": ", 1) for line in parsed.splitlines())
    assert trailers == {
        "KS-Session": s.id, "KS-Attempt": "1", "KS-Author": "agent", "KS-Status": "correct",
        "KS-Correct": "2/2", "KS-Speedup": "1.2500", "KS-Baseline": "torch_ref", "KS-Mode": "bench",
        "KS-Device": "cpu", "KS-Question": "layer-switch",
    }
    # The commit touches only the kernel file.
    touched = git(workspace, "diff-tree", "--no-commit-id", "--name-only", "-r", a.sha).split()
    assert touched == ["kernels/toy/kernel.cpp"]
    assert (a.number, a.question, a.speedup, a.author) == (1, "layer-switch", 1.25, "agent")


def test_unchanged_kernel_is_not_committed_twice_and_failures_are_commits(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    first = store.record(s.id, result_for(kernel))          # the seed itself is attempt 1
    assert first.number == 1
    assert store.record(s.id, result_for(kernel)) is None
    assert store.unchanged_since(s.id).number == 1

    statuses = ["compile_error", "crashed", "timeout", "incorrect"]
    for st in statuses:
        edit(kernel, st)
        store.record(s.id, result_for(kernel, status=st, n_ok=0, speedup=None))
    got = store.attempts(s.id)
    assert [a.status for a in got] == ["correct", *statuses]
    assert [a.number for a in got] == [1, 2, 3, 4, 5]
    assert store.result(s.id, 2)["status"] == "compile_error"


def test_the_seed_is_attempt_one_even_after_the_user_commits_a_new_kernel(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    edit(workspace / "kernels/toy/kernel.cpp", "the user moved on in their checkout")
    git(workspace, "commit", "-qam", "user's own work")
    first = store.record(s.id, result_for(store.kernel_path(s.id)))
    assert first.number == 1 and "moved on" not in store.kernel_at(s.id, 1).decode()


def test_human_edit_becomes_its_own_attempt_before_the_agent_writes(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    store.record(s.id, result_for(kernel, speedup=1.0))
    assert store.commit_human_edit(s.id) is None           # nothing typed yet

    edit(kernel, "typed by a person")
    human_bytes = kernel.read_bytes()
    h = store.commit_human_edit(s.id)
    assert (h.number, h.author, h.status) == (2, "human", "unchecked")
    assert store.kernel_at(s.id, 2) == human_bytes
    assert store.result(s.id, 2) == {}

    edit(kernel, "agent next")
    a = store.record(s.id, result_for(kernel, speedup=1.3))
    assert (a.number, a.author) == (3, "agent")
    # Checked human edits carry the harness result.
    edit(kernel, "person again")
    h2 = store.commit_human_edit(s.id, result=result_for(kernel, speedup=0.9))
    assert (h2.author, h2.status, h2.speedup) == ("human", "correct", 0.9)


def test_rollback_restores_exact_bytes_keeps_every_commit_and_writes_the_trace(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    edit(kernel, "fast")
    store.record(s.id, result_for(kernel, speedup=2.0))
    fast = kernel.read_bytes()
    edit(kernel, "slow")
    store.record(s.id, result_for(kernel, speedup=0.5))
    edit(kernel, "broken")
    store.record(s.id, result_for(kernel, status="compile_error", speedup=None, n_ok=0))
    shas_before = [a.sha for a in store.attempts(s.id)]

    new = store.rollback(s.id, "best")
    assert kernel.read_bytes() == fast
    assert (new.number, new.rollback_of, new.status, new.speedup) == (4, 1, "correct", 2.0)
    assert git(s.worktree, "show", f"{new.sha}:kernels/toy/kernel.cpp").encode() == fast
    after = store.attempts(s.id)
    assert [a.sha for a in after][:3] == shas_before                   # nothing rewritten
    assert git(workspace, "rev-list", "--count", f"{s.base}..{s.branch}").strip() == "4"
    assert store.result(s.id, 4)["geomean_speedup"] == 2.0
    events = Trace.read(store.trace_path(s.id))
    assert events[-1]["kind"] == "rollback"
    assert events[-1]["payload"]["to_attempt"] == 1 and events[-1]["payload"]["new_attempt"] == 4

    with pytest.raises(KsError, match="already has attempt 1"):
        store.rollback(s.id, 1)


def test_rollback_first_saves_an_unrecorded_human_edit(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    store.record(s.id, result_for(kernel))
    edit(kernel, "v2")
    store.record(s.id, result_for(kernel))
    edit(kernel, "person's unsaved idea")
    typed = kernel.read_bytes()
    new = store.rollback(s.id, 1)
    assert new.number == 4
    assert store.kernel_at(s.id, 3) == typed and store.attempts(s.id)[2].author == "human"


def test_two_sessions_on_one_task_do_not_interfere(workspace):
    store = AttemptStore(workspace)
    a, b = store.new_session("toy"), store.new_session("toy")
    ka, kb = store.kernel_path(a.id), store.kernel_path(b.id)
    assert ka != kb
    edit(ka, "session a")
    store.record(a.id, result_for(ka, speedup=1.1))
    edit(kb, "session b")
    store.record(b.id, result_for(kb, speedup=3.0))
    edit(ka, "session a again")
    store.record(a.id, result_for(ka, speedup=1.2))

    assert [x.number for x in store.attempts(a.id)] == [1, 2]
    assert [x.number for x in store.attempts(b.id)] == [1]
    assert "session b" not in ka.read_text() and "session a" not in kb.read_text()
    assert store.resolve(a.id, "best").speedup == 1.2
    assert store.resolve(b.id, "best").speedup == 3.0
    assert store.result(b.id, 1)["geomean_speedup"] == 3.0
    assert {x.id for x in store.sessions()} == {a.id, b.id}


def test_attempts_resolve_by_number_hash_best_latest(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    for i, sp in enumerate((1.0, 1.7, 1.2)):
        edit(kernel, f"v{i}")
        store.record(s.id, result_for(kernel, speedup=sp))
    atts = store.attempts(s.id)
    assert store.resolve(s.id, 2).sha == atts[1].sha
    assert store.resolve(s.id, "#3").number == 3
    assert store.resolve(s.id, atts[0].sha[:10]).number == 1
    assert store.resolve(s.id, "best").number == 2 and [a.best for a in atts] == [False, True, False]
    assert store.resolve(s.id, "latest").number == 3
    assert "v1" in store.diff(s.id, 2) and "-// v0" not in store.diff(s.id, 2)
    assert "+// v1" in store.diff(s.id, 3, against=1)
    for bad in (9, "deadbeef", "nonsense"):
        with pytest.raises(KsError):
            store.resolve(s.id, bad)


def test_result_is_a_git_note_on_the_attempt_commit(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    res = result_for(kernel, speedup=1.4)
    a = store.record(s.id, res)
    note = json.loads(git(workspace, "notes", "--ref=ks", "show", a.sha))
    assert note == res == store.result(s.id, a.sha[:8])


def test_results_of_a_whole_session_match_each_attempts_note(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    store.record(s.id, result_for(kernel, speedup=1.5))
    edit(kernel, "by hand")
    store.commit_human_edit(s.id)                                   # unchecked: no note
    edit(kernel, "broken")
    store.record(s.id, result_for(kernel, status="compile_error", speedup=None, n_ok=0))
    store.rollback(s.id, 1)                                         # copies attempt 1's note
    git(s.worktree, "commit", "-q", "--allow-empty", "-m", "a hand commit, not an attempt")
    got = store.results(s.id)
    assert got == {a.number: store.result(s.id, a.number) for a in store.attempts(s.id)}
    assert [got[n].get("status") for n in (1, 2, 3, 4)] == ["correct", None, "compile_error", "correct"]


def test_result_for_another_kernel_is_refused_and_nothing_is_lost(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    res = result_for(kernel)
    edit(kernel, "changed after the run")
    with pytest.raises(KsError, match="different kernel"):
        store.record(s.id, res)
    assert store.attempts(s.id) == []
    assert "changed after the run" in kernel.read_text()


def test_missing_identity_uses_a_default_without_touching_config(workspace, git_env):
    (git_env / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")   # no user.name/email
    global_before = (git_env / ".gitconfig").read_bytes()
    repo_before = (workspace / ".git" / "config").read_bytes()
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    a = store.record(s.id, result_for(store.kernel_path(s.id)))
    assert git(workspace, "log", "-1", "--format=%an <%ae>|%cn <%ce>", a.sha).strip() == \
        "KernelSeek <ks@localhost>|KernelSeek <ks@localhost>"
    assert (git_env / ".gitconfig").read_bytes() == global_before
    assert (workspace / ".git" / "config").read_bytes() == repo_before


def test_configured_identity_is_kept(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    a = store.record(s.id, result_for(store.kernel_path(s.id)))
    assert git(workspace, "log", "-1", "--format=%an <%ae>", a.sha).strip() == "Test User <test@example.com>"


def test_a_session_can_start_from_a_detached_user_checkout(workspace):
    git(workspace, "checkout", "-q", "--detach")
    before = user_state(workspace)
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    edit(kernel, "v2")
    store.record(s.id, result_for(kernel))
    assert git(workspace, "symbolic-ref", "-q", "HEAD", check=False) == ""       # still detached
    assert user_state(workspace) == before


def test_only_the_kernel_is_committed_even_with_other_files_staged_in_the_worktree(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    (s.worktree / "scratch.md").write_text("notes\n")
    git(s.worktree, "add", "scratch.md")
    edit(kernel, "v2")
    a = store.record(s.id, result_for(kernel))
    assert git(workspace, "diff-tree", "--no-commit-id", "--name-only", "-r", a.sha).split() == \
        ["kernels/toy/kernel.cpp"]
    assert git(s.worktree, "diff", "--cached", "--name-only").split() == ["scratch.md"]


def test_a_failing_hook_or_required_signing_does_not_lose_an_attempt(workspace):
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'hook says no' >&2\nexit 1\n")
    hook.chmod(0o755)
    git(workspace, "config", "commit.gpgSign", "true")
    git(workspace, "config", "gpg.program", "/nonexistent/gpg")
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    edit(kernel, "kept")
    assert store.record(s.id, result_for(kernel)).number == 1


def test_a_summary_cannot_forge_trailers(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    evil = "tried X\n\nKS-Attempt: 99\nKS-Status: correct\nKS-Speedup: 50"
    a = store.record(s.id, result_for(kernel, status="incorrect", n_ok=1, speedup=None), summary=evil)
    assert (a.number, a.status, a.speedup) == (1, "incorrect", None)
    assert "\n" not in a.summary and a.summary.startswith("tried X")



def test_an_all_digit_hash_prefix_resolves_to_its_attempt():
    """A name made only of digits is a number; a hash prefix when no attempt has that number."""
    from datetime import datetime, timezone

    from ks_tui.attempts.model import Attempt
    from ks_tui.attempts.store import resolve_in

    def attempt(n, sha):
        return Attempt(session="s", number=n, sha=sha, time=datetime.now(timezone.utc), author="agent",
                       status="correct", correct="2/2", speedup=1.0, baseline=None, question=None,
                       summary="", rollback_of=None)

    atts = [attempt(1, "1234" + "a" * 36), attempt(2, "98765" + "b" * 35), attempt(1234, "c" * 40)]
    assert resolve_in(atts, "s", "98765").number == 2          # no attempt 98765: the hash
    assert resolve_in(atts, "s", "1234").number == 1234        # the number wins over a hash prefix
    assert resolve_in(atts, "s", "2").number == 2
    for missing in ("99999", "555"):                          # neither a number nor a hash here
        with pytest.raises(KsError, match="no attempt"):
            resolve_in(atts, "s", missing)


def test_best_prefers_a_full_grid_run_over_a_faster_quick_one(workspace):
    """Quick-subset and full-grid geomeans are not comparable: a full run wins the mark."""
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    edit(kernel, "quick run")
    quick = dict(result_for(kernel, speedup=1.5), quick=True)
    store.record(s.id, quick)
    assert store.resolve(s.id, "best").number == 1  # no full run yet: the quick one is best
    edit(kernel, "full run")
    store.record(s.id, result_for(kernel, speedup=1.1))
    atts = store.attempts(s.id)
    assert [a.mode for a in atts] == ["bench-quick", "bench"]
    assert store.resolve(s.id, "best").number == 2


def test_a_scenario_subset_never_takes_the_best_mark_from_a_full_grid_run(workspace):
    """A --scenarios selection (e.g. the short ones a change targets) is scoped 'bench-subset'
    in the trailer and, like a quick run, cannot outrank a slower full-grid run."""
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    edit(kernel, "full run")
    store.record(s.id, result_for(kernel, speedup=1.1))
    edit(kernel, "subset run")
    store.record(s.id, dict(result_for(kernel, speedup=1.4), selection=["a", "b"]))
    atts = store.attempts(s.id)
    assert [a.mode for a in atts] == ["bench", "bench-subset"]
    assert store.resolve(s.id, "best").number == 1


def test_attempts_whose_kernels_differ_only_in_comments_share_their_code(workspace):
    """Attempt.code is the kernel's code identity as committed: a comment or layout edit (a promotion to best/) keeps
    it, a code change does not; the harness's kernel_sha256 (the file's bytes) differs in both cases."""
    from ks_tui.attempts.code_identity import code_identity

    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    store.record(s.id, result_for(kernel, speedup=1.0))
    kernel.write_text("// promoted to best: v2 (+1.2%)\n" + kernel.read_text().replace("    ", "\t")
                      + "/* the end */\n")
    second = store.record(s.id, result_for(kernel, speedup=1.01))
    kernel.write_text(kernel.read_text().replace("2.0f", "3.0f"))
    third = store.record(s.id, result_for(kernel, speedup=1.02))
    a1, a2, a3 = store.attempts(s.id)
    shas = [r["kernel_sha256"] for r in store.results(s.id).values()]
    assert len(set(shas)) == 3
    assert a1.code == a2.code == code_identity(store.kernel_at(s.id, 1)) == code_identity(store.kernel_at(s.id, 2))
    assert a3.code == code_identity(store.kernel_at(s.id, 3)) != a1.code
    assert len(a1.code) == 64 and a1.code not in shas
    # what `ks try` reports and what `ks log --json` writes carry it too
    assert (second.code, third.code) == (a2.code, a3.code)
    assert [a.to_dict()["code"] for a in store.attempts(s.id)] == [a1.code, a2.code, a3.code]


def test_the_code_of_an_attempt_is_read_once_and_kept_by_blob_beside_git(workspace, monkeypatch):
    """One store reads each commit's kernel once; a later store (another `ks log`) finds the identities by blob id
    in the cache file and hashes nothing again. A commit without the kernel file has no code ("")."""
    from ks_tui.attempts import code_identity as ci

    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    store.record(s.id, result_for(kernel, speedup=1.0))
    edit(kernel, "a comment")
    store.record(s.id, result_for(kernel, speedup=1.1))
    codes = [a.code for a in store.attempts(s.id)]
    assert codes[0] == codes[1] != ""

    def no_git(*a, **k):
        raise AssertionError("read again")

    monkeypatch.setattr(store, "_cat_file", no_git)
    assert [a.code for a in store.attempts(s.id)] == codes  # the same store: nothing read again
    cache = store.common_dir / f"ks-code-identity-v{ci.VERSION}"
    blobs = [git(workspace, "rev-parse", f"{a.sha}:kernels/toy/kernel.cpp").strip() for a in store.attempts(s.id)]
    assert sorted(cache.read_text().splitlines()) == sorted(f"{b} {codes[0]}" for b in blobs)  # a line a blob

    def no_hash(data):
        raise AssertionError("hashed again")

    monkeypatch.setattr(ci, "code_identity", no_hash)
    with open(cache, "a") as f:  # a line cut short by a crash, then someone else's
        f.write("0123abc\n" + "f" * 40 + " " + "not-a-code\n")
    assert [a.code for a in AttemptStore(workspace).attempts(s.id)] == codes
    monkeypatch.undo()

    # An attempt commit without the kernel file (made by hand in the worktree) has no code; the others keep theirs.
    wt = s.worktree
    git(wt, "rm", "-q", "kernels/toy/kernel.cpp")
    git(wt, "commit", "-q", "-m", f"gone\n\nKS-Session: {s.id}\nKS-Attempt: 3\nKS-Status: unchecked")
    git(wt, "checkout", "-q", "HEAD~1", "--", "kernels/toy/kernel.cpp")
    assert [a.code for a in AttemptStore(workspace).attempts(s.id)] == [*codes, ""]
