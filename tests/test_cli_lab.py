"""`ks --help` lists the day-one commands; the lab's options live under `ks lab`, and their old
spellings still parse, unlisted, with a one-line notice."""

from __future__ import annotations

import re

import pytest

from ks_tui.cli import build_parser, main

DAY_ONE = ["tui", "init", "doctor", "scenarios", "check", "bench", "compare", "session", "sessions", "try",
           "log", "show", "rollback", "questions", "run", "report", "task", "lab",
           "profile", "mcp",  # a kernel's profile (Nsight Compute) and the MCP server are product commands too
           "standby"]  # the harness child kept waiting between one-shot check/bench commands


def _listed(help_text: str) -> list[str]:
    return re.findall(r"^    (\S+)", help_text, flags=re.M)


def test_help_lists_the_day_one_commands_and_one_lab_line():
    listed = _listed(build_parser().format_help())
    assert sorted(listed) == sorted(c for c in listed if c in DAY_ONE)  # nothing else listed
    assert {"init", "check", "bench", "try", "log", "task", "lab"} <= set(listed)
    assert "remark" not in listed


@pytest.mark.parametrize("argv, hidden", [
    (["bench", "--help"], ["--pair", "--cached-baselines", "--remeasure-baselines"]),
    (["compare", "--help"], ["--by", "--times", "--cached-baselines"]),
    (["try", "--help"], ["--result", "--kernel", "--again"]),
    (["questions", "--help"], ["settle", "next"]),
])
def test_day_one_help_leaves_the_lab_options_out(argv, hidden, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    text = capsys.readouterr().out
    for word in hidden:
        assert word not in text


@pytest.mark.parametrize("argv, shown", [
    (["lab", "bench", "--help"], ["--pair", "--cached-baselines"]),
    (["lab", "compare", "--help"], ["--by", "--times"]),
    (["lab", "record", "--help"], ["--result", "--kernel", "--again", "--no-run"]),
    (["lab", "remark", "--help"], ["--same-call", "--question"]),
    (["lab", "settle", "--help"], ["--keep-open"]),
])
def test_the_lab_lists_them(argv, shown, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    text = capsys.readouterr().out
    for word in shown:
        assert word in text


def test_an_old_spelling_still_parses_and_names_the_new_one(tmp_path, capsys):
    # `ks bench --pair` with a bad tag: refused as bad input after the notice, nothing run.
    assert main(["bench", "attention_cpu", "--pair", "two words"]) == 2
    err = capsys.readouterr().err
    assert "`ks bench --pair` is now `ks lab bench --pair`" in err and "--pair wants a tag" in err
    # `ks remark` outside a workspace: the notice, then the usual one-line error.
    assert main(["--workspace", str(tmp_path), "remark", "1", "x"]) == 2
    err = capsys.readouterr().err
    assert "`ks remark` is now `ks lab remark`" in err
    assert main(["--workspace", str(tmp_path), "questions", "settle"]) == 2
    assert "`ks questions settle` is now `ks lab settle`" in capsys.readouterr().err
