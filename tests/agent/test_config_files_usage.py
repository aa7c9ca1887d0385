"""Config layering, path confinement, cost arithmetic and the harness summary, on their own."""

from __future__ import annotations

import pytest

from ks_tui.agent.conversation import Conversation, conversation_from_events
from ks_tui.agent.files import TaskFiles, ToolRefused
from ks_tui.agent.summary import summarize_result
from ks_tui.agent.tools import ToolBox
from ks_tui.agent.usage import TokenCount, cost_usd
from ks_tui.config import DEFAULT_MODEL, Config, load_config
from ks_tui.errors import InputFileError, KsError


def test_config_layers_user_file_workspace_file_then_environment(tmp_path):
    xdg = tmp_path / "xdg"
    (xdg / "ks").mkdir(parents=True)
    (xdg / "ks" / "config.toml").write_text('model = "claude-user"\nmax_tokens = 1000\nthinking = "off"\n')
    ws = tmp_path / "ws"
    (ws / ".ks").mkdir(parents=True)
    (ws / ".ks" / "config.toml").write_text(
        'max_tokens = 2000\n[prices."claude-user"]\ninput = 1\noutput = 2\ncache_write = 3\ncache_read = 4\n')
    cfg = load_config(ws, env={"XDG_CONFIG_HOME": str(xdg)})
    assert (cfg.model, cfg.max_tokens) == ("claude-user", 2000)  # the workspace file wins over the user's
    assert cfg.sources == [str(xdg / "ks" / "config.toml"), str(ws / ".ks" / "config.toml")]
    cfg = load_config(ws, env={"XDG_CONFIG_HOME": str(xdg), "KS_MAX_TOKENS": "3000", "KS_MODEL": "claude-env"})
    assert (cfg.model, cfg.max_tokens) == ("claude-env", 3000)  # the environment wins over both
    assert cfg.thinking_param() is None
    assert cfg.price_for("claude-user-2") == {"input": 1.0, "output": 2.0, "cache_write": 3.0, "cache_read": 4.0}


def test_bad_config_names_the_file_and_line(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    ws = tmp_path / "ws"
    (ws / ".ks").mkdir(parents=True)
    f = ws / ".ks" / "config.toml"
    f.write_text('model = "x"\nmax_tokns = 5\n')
    with pytest.raises(InputFileError, match="unknown setting 'max_tokns'"):
        load_config(ws, env={})
    f.write_text('thinking = "lots"\n')
    with pytest.raises(InputFileError, match="thinking"):
        load_config(ws, env={})
    f.write_text('[prices.x]\ninput = 1\n')
    with pytest.raises(InputFileError, match="needs exactly"):
        load_config(ws, env={})
    with pytest.raises(KsError, match="KS_MAX_TOKENS"):
        load_config(None, env={"KS_MAX_TOKENS": "many"})


@pytest.mark.parametrize("line, words", [
    ("max_turns = 0", "max_turns = 0 must be a finite number at least 1"),
    ("max_cost_usd = -3", "max_cost_usd = -3 must be a finite number above 0"),
    ("max_tokens = -5", "must be a finite number at least 1"),
    ("max_tokens = 1.5", "max_tokens = 1.5 is not a valid int"),
    ("max_tokens = true", "is not a valid int"),
    ("enable_bash = 5", "enable_bash = 5 is not a valid bool"),
    ("api_timeout_s = nan", "api_timeout_s = nan must be a finite number above 0"),
    ("compact_at = 1.5", "compact_at = 1.5 must be at most 1.0"),
    ("compact_at = 0", "compact_at = 0 must be a finite number above 0"),
    ("context_window = 500", "context_window = 500 must be a finite number at least 1000"),
    ('[prices."m"]\ninput = -1\noutput = 1\ncache_write = 1\ncache_read = 1', "finite and not negative"),
])
def test_a_config_value_the_flags_would_refuse_is_refused_in_the_file_too(tmp_path, line, words):
    ws = tmp_path / "ws"
    (ws / ".ks").mkdir(parents=True)
    (ws / ".ks" / "config.toml").write_text(line + "\n")
    with pytest.raises(InputFileError, match=words.replace("[", r"\[").replace(".", r"\.")):
        load_config(ws, env={})
    assert load_config(None, env={"KS_TURN_RETRIES": "0"}).turn_retries == 0  # zero retries is a real choice


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".ks").mkdir(parents=True)
    (ws / ".ks" / "config.toml").write_bytes(b'model = "caf\xe9"\n')
    with pytest.raises(InputFileError, match="not UTF-8 text"):
        load_config(ws, env={})


def test_default_model_is_one_the_sdk_names_and_has_a_price():
    import typing

    from anthropic.types import Model

    names = [n for arg in typing.get_args(Model) for n in typing.get_args(arg)]
    assert DEFAULT_MODEL in names
    assert Config().resolved_model() == DEFAULT_MODEL
    assert Config().price_for(DEFAULT_MODEL) is not None
    assert Config(model="claude-x").resolved_model() == "claude-x"


def test_cost_uses_every_token_kind():
    price = {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.5}
    t = TokenCount(1_000_000, 1_000_000, 2_000_000, 1_000_000)
    assert cost_usd(t, price) == pytest.approx(5 + 25 + 1 + 6.25)
    assert cost_usd(t, None) is None
    assert (t + t).total == 10_000_000


@pytest.fixture
def task_dir(tmp_path):
    d = tmp_path / "task"
    d.mkdir()
    (d / "kernel.cpp").write_text("int a;\nint b;\n")
    (d / "reference.py").write_text("x = 1\n")
    (tmp_path / "outside.txt").write_text("secret")
    (d / "link").symlink_to(tmp_path / "outside.txt")
    return d


def test_paths_are_confined_and_only_the_kernel_is_writable(task_dir):
    files = TaskFiles(task_dir, task_dir / "kernel.cpp", [task_dir / "reference.py"])
    assert files.read("kernel.cpp") == "int a;\nint b;\n"
    assert "kernel.cpp" in files.read(".")
    for bad in ("../outside.txt", "link", str(task_dir.parent / "outside.txt"), "sub/../../outside.txt", ""):
        with pytest.raises(ToolRefused):
            files.read(bad)
    with pytest.raises(ToolRefused, match="read-only"):
        files.write("reference.py", "y")
    with pytest.raises(ToolRefused, match="only the kernel"):
        files.write("notes.txt", "y")
    assert files.edit("kernel.cpp", "int b;", "long b;").startswith("edited kernel.cpp at line 2")
    with pytest.raises(ToolRefused, match="not found"):
        files.edit("kernel.cpp", "int b;", "x")
    files.write("kernel.cpp", "int a;\nint a;\n")
    with pytest.raises(ToolRefused, match="2 times"):
        files.edit("kernel.cpp", "int a;", "x")


def test_read_file_reads_a_part_of_a_large_kernel_by_lines(task_dir):
    kernel = task_dir / "kernel.cpp"
    kernel.write_text("".join(f"line {i}\n" for i in range(1, 3001)))
    box = ToolBox(TaskFiles(task_dir, kernel, [task_dir / "reference.py"]), host=None)
    out, err = box.execute("read_file", {"path": "kernel.cpp", "offset": 1200, "limit": 3})
    assert not err and out == "[kernel.cpp: lines 1200-1202 of 3000]\nline 1200\nline 1201\nline 1202\n"
    out, err = box.execute("read_file", {"path": "kernel.cpp", "offset": "2999"})  # a quoted number is a number
    assert not err and out.endswith("line 2999\nline 3000\n") and "lines 2999-3000 of 3000" in out
    assert box.execute("read_file", {"path": "kernel.cpp"})[0] == kernel.read_text()  # no range: the file as it is
    for bad, words in (({"offset": 3001}, "past the end of kernel.cpp (3000 lines)"), ({"limit": 0}, "at least 1"),
                       ({"offset": -2}, "at least 1"), ({"limit": True}, "whole number"), ({"offset": 1.5}, "whole number")):
        out, err = box.execute("read_file", {"path": "kernel.cpp", **bad})
        assert err and words in out, (bad, out)


def test_conversation_fold_keeps_tool_results_first_and_applies_rollbacks():
    records = [
        {"kind": "user_message", "payload": {"text": "go"}},
        {"kind": "assistant_message", "payload": {"content": [{"type": "tool_use", "id": "t1", "name": "read_file",
                                                              "input": {}}]}},
        {"kind": "user_message", "payload": {"text": "a question"}},
        {"kind": "tool_result", "payload": {"id": "t1", "output": "x", "is_error": True}},
        {"kind": "assistant_message", "payload": {"content": [{"type": "text", "text": "done"}]}},
        {"kind": "rollback", "payload": {"conversation_len": 3}},
        {"kind": "user_message", "payload": {"text": "note"}},
    ]
    conv = conversation_from_events(records)
    assert [b["type"] for b in conv.messages[2]["content"]] == ["tool_result", "text", "text"]
    assert conv.messages[2]["content"][0]["is_error"] is True
    assert len(conv) == 3 and conv.ready_for_model()
    assert not Conversation([{"role": "assistant", "content": [{"type": "tool_use", "id": "z"}]}]).ready_for_model()


def test_summary_names_failures_compile_errors_and_extremes():
    result = {"status": "incorrect", "correct": "1/2", "geomean_speedup": None, "message": "1 scenario failed",
              "compile": {"ok": True, "errors": [], "kernels": [{"name": "k", "registers": 128, "spills_bytes": 8,
                                                                "smem_bytes": 0}]},
              "scenarios": [{"id": "a", "ok": True, "time_ms": 1.0, "speedup": 2.0,
                             "baseline": {"name": "sdpa", "time_ms": 2.0}},
                            {"id": "b", "ok": False, "error": {"max_abs": 0.5, "bound": 1e-4, "where": "[0,3,1,7]"},
                             "time_ms": None, "speedup": None}]}
    s = summarize_result(result, {"number": 7, "sha": "abcdef1234567"})
    assert s.startswith("status: incorrect, correct 1/2") and "attempt 7" in s
    assert "b, FAIL" in s and "at [0,3,1,7]" in s and "128 registers, 8 B spills" in s
    assert "ptxas" not in s  # no performance note, no line
    noted = dict(result, compile={"ok": True, "errors": [], "kernels": [
        {"name": "k", "registers": 168, "spills_bytes": 0, "smem_bytes": 0,
         "perf_warnings": ["C7511: wgmma.mma_async instructions are serialized due to insufficient register resources"]}]})
    assert "    ptxas: C7511: wgmma.mma_async instructions are serialized" in summarize_result(noted, {"number": 8})
    assert "a, ok, 1.000 ms, sdpa 2.000 ms, 2.00x" in s
    failed = summarize_result({"status": "compile_error", "compile": {"ok": False, "errors": [
        {"file": "kernel.cpp", "line": 12, "column": 3, "message": "expected ';'"}]}})
    assert "kernel.cpp:12:3: expected ';'" in failed
    assert "warnings" not in s
    shared = summarize_result(dict(result, warnings=["another process was running kernels on this GPU ..."]))
    assert "warnings:\n  another process was running kernels on this GPU ..." in shared
