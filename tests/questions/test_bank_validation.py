"""`ks questions validate`: every malformed bank exits 2 naming the problem and its line;
the shipped bank passes."""

import json
import subprocess
import sys
import textwrap

import pytest

from ks_tui.cli import main
from ks_tui.questions import BankError, load_bank
from ks_tui.questions.bank import default_bank_path

GOOD = """\
version: 1
thresholds:
  plateau_n: 4
  noise: 0.03
questions:
  - id: first
    category: layer
    points: [plateau]
    text: Which layer has not changed yet?
  - id: second
    category: limit
    points: [agent_stop, plateau]
    requires: [has_losing_scenarios]
    weight: 2
    text: What is the floor?
"""

# (name, bank text, words the message must contain, line it must name or None)
MALFORMED = [
    ("yaml syntax", GOOD.replace("points: [plateau]\n", "points: [plateau\n", 1), ["YAML syntax error"], 9),
    ("duplicate id", GOOD.replace("id: second", "id: first"), ["duplicate question id 'first'", "line 6"], 10),
    ("unknown category", GOOD.replace("category: limit", "category: vibes"), ["unknown category 'vibes'"], 11),
    ("reserved human category", GOOD.replace("category: limit", "category: human"), ["'human' is reserved"], 11),
    ("unknown point", GOOD.replace("[agent_stop, plateau]", "[agent_stop, lunch]"), ["unknown decision point 'lunch'"], 12),
    ("empty text", GOOD.replace("text: What is the floor?", "text: '  '"), ["empty text"], 15),
    ("missing text", GOOD.replace("    text: What is the floor?\n", ""), ["missing 'text'"], 10),
    ("not a question", GOOD.replace("What is the floor?", "Use a bigger tile."), ["must be a question"], 15),
    ("unknown question key", GOOD.replace("    weight: 2\n", "    colour: 2\n"), ["unknown key 'colour'"], 14),
    ("unknown top key", GOOD + "extras: 1\n", ["unknown top-level key 'extras'"], 16),
    ("unknown condition", GOOD.replace("has_losing_scenarios", "has_vibes"), ["unknown condition 'has_vibes'"], 13),
    ("bad threshold type", GOOD.replace("plateau_n: 4", "plateau_n: four"), ["plateau_n must be an integer", "'four'"], 3),
    ("bool threshold", GOOD.replace("plateau_n: 4", "plateau_n: true"), ["plateau_n must be an integer"], 3),
    ("threshold out of range", GOOD.replace("noise: 0.03", "noise: 3"), ["noise must be >= 0 and < 1"], 4),
    ("unknown threshold", GOOD.replace("noise: 0.03", "nois: 0.03"), ["unknown threshold 'nois'"], 4),
    ("bad peak table", GOOD.replace("noise: 0.03", "peak_tflops: {H200: lots}"), ["peak_tflops must map"], 4),
    ("bad weight", GOOD.replace("weight: 2", "weight: -1"), ["weight must be a positive number"], 14),
    ("bad id", GOOD.replace("id: second", "id: Second Q"), ["id must be lowercase"], 10),
    ("duplicate key", GOOD.replace("    weight: 2\n", "    weight: 2\n    weight: 3\n"), ["key 'weight' appears twice"], 15),
    ("no questions", "version: 1\nquestions: []\n", ["'questions' must be a non-empty list"], 2),
    ("not a mapping", "- just\n- a list\n", ["must be a mapping"], 1),
    ("empty file", "", ["must be a mapping"], None),
    ("bad version", GOOD.replace("version: 1", "version: 7"), ["unsupported bank version 7"], 1),
    ("list category", GOOD.replace("category: limit", "category: [limit]"), ["unknown category ['limit']"], 11),
    ("nested condition", GOOD.replace("[has_losing_scenarios]", "[[has_losing_scenarios]]"),
     ["unknown condition ['has_losing_scenarios']"], 13),
    ("nan threshold", GOOD.replace("noise: 0.03", "noise: .nan"), ["noise must be a number"], 4),
    ("inf weight", GOOD.replace("weight: 2", "weight: .inf"), ["weight must be a positive number"], 14),
    ("question not a mapping", GOOD.replace("questions:\n", "questions:\n  - just text\n"), ["question #1 must be a mapping"], 6),
]


@pytest.mark.parametrize("text,words,line", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_bank_exits_2_naming_the_problem(tmp_path, capsys, text, words, line):
    bank = tmp_path / "bank.yaml"
    bank.write_text(text)
    assert main(["questions", "validate", str(bank)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    first = out.err.splitlines()[0]
    prefix = f"ks: error: {bank}:{line}: " if line else f"ks: error: {bank}: "
    assert first.startswith(prefix), first
    for w in words:
        assert w in first, first


def test_validate_lists_every_problem(tmp_path, capsys):
    bank = tmp_path / "bank.yaml"
    bank.write_text(GOOD.replace("category: limit", "category: vibes").replace("plateau_n: 4", "plateau_n: x"))
    assert main(["questions", "validate", str(bank)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert any(":3: thresholds: plateau_n" in e for e in err) and any(":11: question 'second'" in e for e in err)


def test_loading_a_broken_bank_elsewhere_is_one_line_with_exit_2(tmp_path, capsys):
    bank = tmp_path / "bank.yaml"
    bank.write_text(GOOD.replace("category: limit", "category: vibes"))
    assert main(["questions", "list", "--bank", str(bank)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ks: error: {bank}:11: question 'second': unknown category 'vibes'")
    with pytest.raises(BankError) as e:
        load_bank(bank)
    assert e.value.line == 11


def test_missing_bank_file(tmp_path, capsys):
    assert main(["questions", "validate", str(tmp_path / "nope.yaml")]) == 2
    assert "no such question bank file" in capsys.readouterr().err


def test_a_good_bank_loads_with_its_thresholds(tmp_path):
    bank_file = tmp_path / "bank.yaml"
    bank_file.write_text(GOOD)
    bank = load_bank(bank_file)
    assert [q.id for q in bank.questions] == ["first", "second"]
    assert bank.questions[1].requires == ("has_losing_scenarios",)
    assert bank.questions[1].weight == 2.0
    assert (bank.config.plateau_n, bank.config.noise, bank.config.failure_n) == (4, 0.03, 3)


def test_the_shipped_bank_validates_in_a_child_process():
    shipped = default_bank_path(None)
    out = subprocess.run([sys.executable, "-m", "ks_tui", "questions", "validate", str(shipped)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ok:" in out.stdout


def test_a_malformed_bank_in_a_child_process_has_no_traceback(tmp_path):
    bank = tmp_path / "bank.yaml"
    bank.write_text(GOOD.replace("id: second", "id: first"))
    out = subprocess.run([sys.executable, "-m", "ks_tui", "questions", "validate", str(bank)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert f"{bank}:10: duplicate question id 'first'" in out.stderr


def test_shipped_bank_meets_the_brief():
    bank = load_bank(default_bank_path(None))
    assert len(bank.questions) >= 40
    assert len(bank.categories()) >= 6
    for q in bank.questions:
        assert q.text.endswith("?") and len(q.text) > 20, q.id


def test_list_filters_by_category_and_prints_json(capsys):
    assert main(["questions", "list", "--category", "correctness", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["questions"] and {q["category"] for q in doc["questions"]} == {"correctness"}
    assert main(["questions", "list", "--category", "nonsense"]) == 2
    assert "unknown category 'nonsense'" in capsys.readouterr().err


def test_list_text_shows_every_question(capsys):
    assert main(["questions", "list"]) == 0
    text = capsys.readouterr().out
    bank = load_bank(default_bank_path(None))
    assert all(f"  {q.id}  [" in text for q in bank.questions)
    assert textwrap.shorten(bank.questions[0].text, 40, placeholder="")[:30] in " ".join(text.split())
