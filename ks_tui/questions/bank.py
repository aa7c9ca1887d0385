"""Loading and checking a question bank file (question_bank.yaml).

Every problem is reported with the file and line it sits on; the loader collects all of
them so `ks questions validate` can list them at once, and raises on the first use.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ks_tui.errors import InputFileError
from ks_tui.questions.thresholds import DecisionConfig, check_thresholds
from ks_tui.questions.vocab import CATEGORIES, HUMAN_CATEGORY, POINTS, REQUIREMENTS

BANK_FILE = "question_bank.yaml"
TOP_KEYS = ("version", "thresholds", "questions")
QUESTION_KEYS = ("id", "text", "category", "points", "weight", "requires")
REQUIRED_QUESTION_KEYS = ("id", "text", "category", "points")
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    category: str
    points: tuple[str, ...] = ()
    weight: float = 1.0
    requires: tuple[str, ...] = ()
    line: int | None = field(default=None, compare=False)

    def applies(self, point: str, context: dict[str, Any]) -> bool:
        return point in self.points and all(bool(context.get(r)) for r in self.requires)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "category": self.category,
                "points": list(self.points), "weight": self.weight,
                "requires": list(self.requires)}


@dataclass(frozen=True)
class Bank:
    path: Path | None
    questions: list[Question]
    config: DecisionConfig

    def get(self, question_id: str) -> Question | None:
        return next((q for q in self.questions if q.id == question_id), None)

    def categories(self) -> list[str]:
        return sorted({q.category for q in self.questions})


class BankError(InputFileError):
    """A malformed bank. `problems` holds every (line, message) found, first one in the message."""

    def __init__(self, path, problems: list[tuple[int | None, str]]):
        line, message = problems[0]
        more = len(problems) - 1
        hint = f"{more} more problem(s): run `ks questions validate {path}`" if more else None
        super().__init__(path, message, line, hint=hint)
        self.problems = problems

    def lines(self) -> list[str]:
        return [f"{self.path}:{ln}: {msg}" if ln else f"{self.path}: {msg}" for ln, msg in self.problems]


def human_question(text: str) -> Question:
    """A question a person typed: recorded like a bank question, in category `human`."""
    import hashlib

    clean = " ".join(text.split())
    if not clean:
        raise ValueError("a human question needs some text")
    digest = hashlib.sha1(clean.encode()).hexdigest()[:10]
    return Question(id=f"human-{digest}", text=clean, category=HUMAN_CATEGORY)


def default_bank_path(workspace: Path | None) -> Path:
    """The workspace's bank if it has one, else the bank shipped with KernelSeek."""
    from ks_tui.paths import bundled_root

    if workspace is not None and (workspace / BANK_FILE).is_file():
        return workspace / BANK_FILE
    return bundled_root() / BANK_FILE


def load_bank(path: Path | str) -> Bank:
    """Read and check a bank; raises BankError (an InputFileError, exit 2) on any problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputFileError(path, "no such question bank file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputFileError(path, f"cannot read the question bank: {e}") from None
    return parse_bank(text, path)


def parse_bank(text: str, path: Path | str = "<bank>") -> Bank:
    node, data = _compose(text, path)
    checker = _Checker()
    bank = checker.bank(node, data, Path(path))
    if checker.problems:
        raise BankError(path, checker.problems)
    return bank


def _compose(text: str, path) -> tuple[yaml.Node | None, Any]:
    """The YAML node tree (for line numbers) and the plain data, from one parse."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise BankError(path, [((mark.line + 1) if mark else None, f"YAML syntax error: {problem}")]) from None
    finally:
        loader.dispose()
    return node, data


def _line(node: yaml.Node | None) -> int | None:
    return node.start_mark.line + 1 if node is not None else None


def _key_nodes(node: yaml.Node | None) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class _Checker:
    def __init__(self):
        self.problems: list[tuple[int | None, str]] = []

    def add(self, line: int | None, message: str) -> None:
        self.problems.append((line, message))

    def duplicate_keys(self, node: yaml.Node | None, where: str) -> None:
        if not isinstance(node, yaml.MappingNode):
            return
        seen: dict[str, int | None] = {}
        for k, _ in node.value:
            key = str(getattr(k, "value", k))
            if key in seen:
                self.add(_line(k), f"{where}: key '{key}' appears twice (first on line {seen[key]})")
            else:
                seen[key] = _line(k)

    def bank(self, node, data, path: Path) -> Bank:
        if not isinstance(data, dict):
            self.add(_line(node), "a question bank must be a mapping with a 'questions' list")
            return Bank(path, [], DecisionConfig())
        self.duplicate_keys(node, "top level")
        keys = _key_nodes(node)
        for key in data:
            if key not in TOP_KEYS:
                self.add(_line(keys.get(str(key), (None,))[0]),
                         f"unknown top-level key '{key}' (expected one of: {', '.join(TOP_KEYS)})")
        if "version" in data and data["version"] != 1:
            self.add(_line(keys["version"][1]), f"unsupported bank version {data['version']!r} (expected 1)")
        config = self.thresholds(keys.get("thresholds", (None, None))[1], data.get("thresholds"))
        questions = self.questions(keys.get("questions", (None, None))[1], data.get("questions"), _line(node))
        return Bank(path, questions, config)

    def thresholds(self, node, data) -> DecisionConfig:
        if data is None:
            return DecisionConfig()
        if not isinstance(data, dict):
            self.add(_line(node), "'thresholds' must be a mapping of name: value")
            return DecisionConfig()
        self.duplicate_keys(node, "thresholds")
        keys = _key_nodes(node)
        problems = check_thresholds(data)
        for key, message in problems:
            key_node, value_node = keys.get(str(key), (None, None))
            self.add(_line(value_node or key_node or node), f"thresholds: {message}")
        return DecisionConfig().with_overrides(data) if not problems else DecisionConfig()

    def questions(self, node, data, top_line) -> list[Question]:
        if data is None:
            self.add(_line(node) or top_line, "the bank has no 'questions' list")
            return []
        if not isinstance(data, list) or not data:
            self.add(_line(node), "'questions' must be a non-empty list")
            return []
        out: list[Question] = []
        first_line: dict[str, int | None] = {}
        for i, item in enumerate(data):
            item_node = node.value[i] if isinstance(node, yaml.SequenceNode) else None
            q = self.question(item_node, item, i + 1)
            if q is None:
                continue
            if q.id in first_line:
                self.add(q.line, f"duplicate question id '{q.id}' (first on line {first_line[q.id]})")
                continue
            first_line[q.id] = q.line
            out.append(q)
        return out

    def question(self, node, item, index: int) -> Question | None:
        line = _line(node)
        if not isinstance(item, dict):
            self.add(line, f"question #{index} must be a mapping with id, text, category, points")
            return None
        self.duplicate_keys(node, f"question #{index}")
        keys = _key_nodes(node)

        def at(key: str) -> int | None:
            pair = keys.get(key)
            return _line(pair[1]) if pair else line

        qid = item.get("id")
        name = f"question '{qid}'" if isinstance(qid, str) and qid else f"question #{index}"
        before = len(self.problems)
        for key in item:
            if key not in QUESTION_KEYS:
                self.add(_line(keys.get(str(key), (node,))[0]),
                         f"{name}: unknown key '{key}' (expected: {', '.join(QUESTION_KEYS)})")
        for key in REQUIRED_QUESTION_KEYS:
            if key not in item:
                self.add(line, f"{name}: missing '{key}'")
        if "id" in item and not (isinstance(qid, str) and ID_PATTERN.match(qid)):
            self.add(at("id"), f"{name}: id must be lowercase letters, digits, '.', '_' or '-' (got {qid!r})")
        text = item.get("text")
        if "text" in item:
            if not isinstance(text, str) or not text.strip():
                self.add(at("text"), f"{name}: empty text")
            elif not text.strip().endswith("?"):
                self.add(at("text"), f"{name}: text must be a question (end with '?')")
        category = item.get("category")
        if "category" in item and (not isinstance(category, str) or category not in CATEGORIES):
            reserved = " ('human' is reserved for typed questions)" if category == HUMAN_CATEGORY else ""
            self.add(at("category"), f"{name}: unknown category {category!r}{reserved} "
                                     f"(expected one of: {', '.join(CATEGORIES)})")
        points = self.name_list(item, "points", POINTS, name, at, required=True)
        requires = self.name_list(item, "requires", REQUIREMENTS, name, at, required=False)
        weight = item.get("weight", 1.0)
        if not _number(weight) or weight <= 0:
            self.add(at("weight"), f"{name}: weight must be a positive number (got {weight!r})")
        # (id, text and category are then strings: a missing or mistyped one was a problem above)
        if len(self.problems) > before or not (isinstance(qid, str) and isinstance(text, str)
                                               and isinstance(category, str)):
            return None
        return Question(id=qid, text=" ".join(text.split()), category=category, points=points,
                        weight=float(weight), requires=requires, line=line)

    def name_list(self, item, key, allowed, name, at, *, required: bool) -> tuple[str, ...]:
        if key not in item:
            return ()
        value = item[key]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or (required and not value):
            self.add(at(key), f"{name}: '{key}' must be a {'non-empty ' if required else ''}list of names")
            return ()
        kind = "decision point" if key == "points" else "condition"
        for v in value:
            if not isinstance(v, str) or v not in allowed:
                self.add(at(key), f"{name}: unknown {kind} {v!r} (expected one of: {', '.join(allowed)})")
        return tuple(str(v) for v in value)
