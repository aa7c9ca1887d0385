"""What a task is: `kernels/<task>/task.yaml` loaded, validated and expanded into scenarios.

Standard library + yaml only (no torch): the CLI and the engine load tasks without the
harness. Every problem becomes an InputFileError naming the file and the line, found from
yaml's node marks, so a user never sees a traceback for a typo.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import keyword
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import AbstractSet

import yaml

from ks_tui.errors import InputFileError, KsError

LANGUAGE_BY_SUFFIX = {".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".cu": "cuda"}
DEFAULT_COMPILER = {"cpp": "g++", "cuda": "nvcc"}
TOLERANCE_RULES = {
    "fp32_relative": {"rtol": 1e-4, "atol": 1e-6},
    "lowp_relative": {"factor": 2.0, "atol": 1e-5},
}
TOP_KEYS = {"name", "description", "kernel", "entry", "build", "reference", "timeout_s",
            "scenarios", "quick", "tolerance", "flops", "baselines", "readonly", "timing",
            "constraints", "bytes", "family"}
BUILD_KEYS = {"compiler", "flags", "arch"}
SCENARIO_KEYS = {"grid", "list", "id", "derive", "defaults"}
TIMING_KEYS = {"warmup", "min_reps", "max_reps", "budget_s", "threads", "draws", "rounds", "quick", "alternate"}
QUICK_TIMING_KEYS = {"warmup", "min_reps", "max_reps", "budget_s", "rounds"}  # what a --quick run may spend less of
EXPR_FUNCS = {"min": min, "max": max, "abs": abs}


@dataclass(frozen=True)
class BuildSpec:
    compiler: str                  # g++ | nvcc (or a path to one)
    flags: list[str]               # added after the harness's defaults
    arch: str | None               # CUDA only, e.g. "sm_90a"


@dataclass(frozen=True)
class Scenario:
    id: str                        # stable readable id
    params: dict                   # task-defined keys (b, s_q, ..., plus derived ones)


@dataclass(frozen=True)
class Timing:
    warmup: int = 3
    min_reps: int = 5
    max_reps: int = 200
    budget_s: float = 0.25         # per scenario and per timed function
    threads: int | None = None     # CPU: same count for kernel and baselines
    draws: int = 2                 # correctness draws per scenario (at least 2)
    rounds: int = 5                # GPU: kernel and baselines timed in this many alternating blocks
    alternate: bool = True         # GPU: inside each block, the kernel's and the libraries' calls take turns
    quick: tuple = ()              # (key, value) overrides of the keys above for --quick runs (QUICK_TIMING_KEYS)

    def for_run(self, quick: bool) -> "Timing":
        """The timing a run uses: a --quick run takes the `quick` overrides; draws and threads never change."""
        if not quick or not self.quick:
            return self
        return dataclasses.replace(self, **dict(self.quick), quick=())


@dataclass(frozen=True)
class Task:
    name: str
    dir: Path
    yaml_path: Path
    kernel: Path
    entry: str
    language: str
    build: BuildSpec
    reference: Path
    scenarios: list[Scenario]
    quick: list[str]
    tolerance: dict
    flops: str
    baselines: list[str]
    readonly: list[Path]
    timeout_s: float
    description: str = ""
    timing: Timing = field(default_factory=Timing)
    bytes: str | None = None       # memory traffic formula: the speed of light's memory limit
    family: str | None = None      # id template grouping scenarios for per-family summaries

    @property
    def device(self) -> str:
        return "cuda" if self.language == "cuda" else "cpu"

    def scenario(self, sid: str) -> Scenario:
        for s in self.scenarios:
            if s.id == sid:
                return s
        raise KsError(f"task {self.name} has no scenario {sid!r}",
                      hint=f"list them with `ks scenarios {self.name}`")

    def select(self, quick: bool = False, ids: list[str] | None = None) -> list[Scenario]:
        """The scenarios a run covers: explicit ids, else the quick subset, else all."""
        if ids:
            return [self.scenario(i) for i in dict.fromkeys(ids)]  # an id given twice runs once
        if quick:
            wanted = set(self.quick)
            return [s for s in self.scenarios if s.id in wanted]
        return list(self.scenarios)

    def flops_of(self, scenario: Scenario) -> float:
        return float(eval_expr(self.flops, scenario.params))

    def bytes_of(self, scenario: Scenario) -> float | None:
        """Bytes the scenario must move at least (None when the task gives no formula)."""
        return None if self.bytes is None else float(eval_expr(self.bytes, scenario.params))

    def family_of(self, scenario: Scenario) -> str:
        """The scenario's family: the task's `family` template, else its id without the length parts."""
        if self.family is not None:
            return str(eval_expr(self.family, scenario.params, template=True))
        return default_family(scenario.id)


_LENGTH_PART = re.compile(r"^(s|q|k|n|len|seq)\d+$")


def default_family(sid: str) -> str:
    """`d128-h32-8-s4096-causal` -> `d128-h32-8-causal`: the id's dash-parts that are lengths dropped."""
    parts = [x for x in sid.split("-") if not _LENGTH_PART.match(x)]
    return "-".join(parts) or sid


# ---------------------------------------------------------------- safe expressions

_ALLOWED_NODES = (
    ast.Expression, ast.JoinedStr, ast.FormattedValue, ast.Constant, ast.Name, ast.Load,
    ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
)


class ExprError(ValueError):
    pass


def _check_tree(tree: ast.AST, names: AbstractSet[str]) -> None:
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise ExprError(f"{type(node).__name__} is not allowed in an expression")
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in EXPR_FUNCS) or node.keywords:
                raise ExprError("only min(), max() and abs() may be called")
        if isinstance(node, ast.Name) and node.id not in names and node.id not in EXPR_FUNCS:
            raise ExprError(f"unknown name {node.id!r} (known: {', '.join(sorted(names))})")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            # Bounded exponents keep a typo like 9**9**9 from hanging the loader.
            if not (isinstance(node.right, ast.Constant) and isinstance(node.right.value, (int, float))
                    and abs(node.right.value) <= 64):
                raise ExprError("** needs a constant exponent of at most 64")


def compile_expr(text: str, names: set[str], template: bool = False):
    """Parse and vet an expression (or an f-string template when `template`)."""
    if not isinstance(text, str):
        raise ExprError("expected a string expression")
    return _compiled(text, frozenset(names), template)


@lru_cache(maxsize=1024)
def _compiled(text: str, names: frozenset[str], template: bool):
    # One parse per expression, not per scenario: 182 scenarios x 6 expressions was most of
    # a task load.
    source = "f" + repr(text) if template else text
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"syntax error: {e.msg}") from None
    _check_tree(tree, names)
    tree = ast.fix_missing_locations(_NumericMult().visit(tree))
    return compile(tree, "<task expression>", "eval")


class _NumericMult(ast.NodeTransformer):
    """`a * b` becomes `_mul(a, b)`, which refuses text: 'a' * 10**10 would fill the memory."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Mult):
            return ast.copy_location(ast.Call(func=ast.Name(id="_mul", ctx=ast.Load()),
                                              args=[node.left, node.right], keywords=[]), node)
        return node


def _mul(a, b):
    if isinstance(a, str) or isinstance(b, str):
        raise ExprError("* works on numbers only, not text")
    return a * b


def eval_expr(text_or_code, params: dict, template: bool = False):
    code = text_or_code
    if isinstance(text_or_code, str):
        code = compile_expr(text_or_code, set(params), template)
    try:
        return eval(code, {"__builtins__": {}}, {**EXPR_FUNCS, **params, "_mul": _mul})  # noqa: S307 - vetted by _check_tree
    except Exception as e:  # ZeroDivisionError, TypeError, ...
        raise ExprError(f"{type(e).__name__}: {e}") from None


# ---------------------------------------------------------------- yaml with line numbers

class _Doc:
    """The parsed YAML plus the line of every key path, for error messages."""

    def __init__(self, path: Path):
        self.path = path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InputFileError(path, f"cannot read: {e}") from None
        self.lines: dict[tuple, int] = {}
        loader = yaml.SafeLoader(text)
        try:  # one parse: the node tree gives the lines, the same tree gives the data
            node = loader.get_single_node()
            if node is None:
                raise InputFileError(path, "the file is empty")
            self._walk(node, ())  # before construction, which keeps a duplicate key silently
            self.data = loader.construct_document(node)  # bad tags, unhashable keys fail here
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            problem = getattr(e, "problem", None) or str(e)
            raise InputFileError(path, f"YAML syntax error: {problem}",
                                 mark.line + 1 if mark else None) from None
        finally:
            loader.dispose()
        if not isinstance(self.data, dict):
            raise InputFileError(path, "expected a mapping of keys at the top level", 1)

    def _walk(self, node, path: tuple) -> None:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for k, v in node.value:
                key = k.value if isinstance(k, yaml.ScalarNode) else None
                if key in seen:
                    raise InputFileError(self.path, f"duplicate key {key!r}", k.start_mark.line + 1)
                seen.add(key)
                self._walk(v, path + (key,))
                self.lines[path + (key,)] = k.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                self._walk(v, path + (i,))

    def line(self, *path) -> int | None:
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path)

    def error(self, path: tuple, message: str, hint: str | None = None) -> InputFileError:
        return InputFileError(self.path, message, self.line(*path), hint=hint)


def _unknown_keys(doc: _Doc, mapping: dict, allowed: set[str], path: tuple) -> None:
    for k in mapping:
        if k not in allowed:
            raise doc.error(path + (k,), f"unknown key {k!r}",
                            hint="allowed here: " + ", ".join(sorted(allowed)))


def _require(doc: _Doc, data: dict, key: str, kind, path: tuple = ()):
    if key not in data:
        raise doc.error(path, f"missing key {key!r}")
    value = data[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else "/".join(t.__name__ for t in kind)
        raise doc.error(path + (key,), f"{key!r} must be a {names}, got {type(value).__name__}")
    return value


def _task_file(doc: _Doc, task_dir: Path, rel: str, key: tuple) -> Path:
    p = (task_dir / rel).resolve()
    if task_dir.resolve() not in p.parents:
        raise doc.error(key, f"{rel!r} is outside the task folder")
    if not p.is_file():
        raise doc.error(key, f"file not found: {rel}")
    return p


# ---------------------------------------------------------------- scenarios

def _is_param_name(k) -> bool:
    return isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k)


def _scalar(v) -> bool:
    return isinstance(v, (int, float, str, bool))


def _expand_grid(doc: _Doc, grid) -> list[tuple[dict, tuple]]:
    path = ("scenarios", "grid")
    if not isinstance(grid, dict) or not grid:
        raise doc.error(path, "grid must be a non-empty mapping of axis -> list of values")
    axes = []
    for axis, values in grid.items():
        apath = path + (axis,)
        if not isinstance(values, list) or not values:
            raise doc.error(apath, f"grid axis {axis!r} must be a non-empty list")
        options = []
        for i, v in enumerate(values):
            if isinstance(v, dict):
                bad = [k for k, x in v.items() if not _is_param_name(k) or not _scalar(x)]
                if bad or not v:
                    raise doc.error(apath + (i,), f"grid axis {axis!r}: item {i} must map parameter names "
                                                  f"to single values (bad: {bad or 'empty'})")
                options.append((dict(v), apath + (i,)))
            elif _scalar(v):
                if not _is_param_name(axis):
                    raise doc.error(apath, f"grid axis {axis!r} is not a valid parameter name")
                options.append(({axis: v}, apath + (i,)))
            else:
                raise doc.error(apath + (i,), f"grid axis {axis!r}: item {i} must be a value or a mapping")
        axes.append(options)
    out = []
    for combo in itertools.product(*axes):
        params: dict = {}
        for part, ppath in combo:
            clash = set(params) & set(part)
            if clash:
                raise doc.error(ppath, f"parameter {sorted(clash)[0]!r} is set by two grid axes")
            params.update(part)
        out.append((params, combo[-1][1]))
    return out


def _expand_list(doc: _Doc, items) -> list[tuple[dict, tuple]]:
    path = ("scenarios", "list")
    if not isinstance(items, list) or not items:
        raise doc.error(path, "list must be a non-empty list of parameter mappings")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not item:
            raise doc.error(path + (i,), f"scenario {i} must be a mapping of parameters")
        bad = [k for k, x in item.items() if not _is_param_name(k) or not _scalar(x)]
        if bad:
            raise doc.error(path + (i,), f"scenario {i}: bad parameter(s) {bad}")
        out.append((dict(item), path + (i,)))
    return out


def _build_scenarios(doc: _Doc, spec) -> list[Scenario]:
    if not isinstance(spec, dict):
        raise doc.error(("scenarios",), "scenarios must be a mapping with grid or list")
    _unknown_keys(doc, spec, SCENARIO_KEYS, ("scenarios",))
    if ("grid" in spec) == ("list" in spec):
        raise doc.error(("scenarios",), "scenarios needs exactly one of 'grid' or 'list'")
    raw = _expand_grid(doc, spec["grid"]) if "grid" in spec else _expand_list(doc, spec["list"])
    defaults = spec.get("defaults", {})
    if not isinstance(defaults, dict) or not all(_is_param_name(k) and _scalar(v) for k, v in defaults.items()):
        raise doc.error(("scenarios", "defaults"), "defaults must map parameter names to single values")
    derive = spec.get("derive", {})
    if not isinstance(derive, dict):
        raise doc.error(("scenarios", "derive"), "derive must map names to expressions")
    id_template = spec.get("id")
    scenarios: list[Scenario] = []
    seen: dict[str, int | None] = {}  # scenario id -> the line that made it
    for params, where in raw:
        params = {**defaults, **params}
        for name, expr in derive.items():
            if not _is_param_name(name):
                raise doc.error(("scenarios", "derive", name), f"{name!r} is not a valid parameter name")
            try:
                params[name] = eval_expr(expr, params)
            except ExprError as e:
                raise doc.error(("scenarios", "derive", name), f"derive.{name}: {e}") from None
        if id_template is None:
            sid = "-".join(f"{k}{v}" for k, v in params.items() if k not in derive)
        else:
            try:
                sid = str(eval_expr(id_template, params, template=True))
            except ExprError as e:
                raise doc.error(("scenarios", "id"), f"scenarios.id: {e}") from None
        if sid in seen:
            raise doc.error(where, f"duplicate scenario id {sid!r} (also from line {seen[sid]})",
                            hint="make scenarios.id include every parameter that varies")
        seen[sid] = doc.line(*where)
        scenarios.append(Scenario(sid, params))
    return scenarios


def _quick_ids(doc: _Doc, quick, scenarios: list[Scenario]) -> list[str]:
    ids = [s.id for s in scenarios]
    if quick is None:
        return ids[: min(4, len(ids))]
    if isinstance(quick, dict):
        _unknown_keys(doc, quick, {"every"}, ("quick",))
        n = quick.get("every")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise doc.error(("quick", "every"), "quick.every must be a positive integer")
        return ids[::n]
    if not isinstance(quick, list) or not quick:
        raise doc.error(("quick",), "quick must be a list of scenario ids or {every: N}")
    known = set(ids)
    for i, q in enumerate(quick):
        if not isinstance(q, str) or q not in known:
            raise doc.error(("quick", i), f"quick id {q!r} is not a scenario of this task",
                            hint="see the ids with `ks scenarios TASK`")
    return list(dict.fromkeys(quick))


def _tolerance(doc: _Doc, tol) -> dict:
    if not isinstance(tol, dict) or "rule" not in tol:
        raise doc.error(("tolerance",), "tolerance must be a mapping with a 'rule'")
    rule = tol["rule"]
    if not isinstance(rule, str) or rule not in TOLERANCE_RULES:
        raise doc.error(("tolerance", "rule"), f"unknown tolerance rule {rule!r}",
                        hint="one of: " + ", ".join(TOLERANCE_RULES))
    out = {"rule": rule, **TOLERANCE_RULES[rule]}
    for k, v in tol.items():
        if k == "rule":
            continue
        if k not in TOLERANCE_RULES[rule]:
            raise doc.error(("tolerance", k), f"unknown key {k!r} for rule {rule}")
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
            raise doc.error(("tolerance", k), f"tolerance.{k} must be a non-negative number")
        out[k] = float(v)
    return out


def _timing(doc: _Doc, spec) -> Timing:
    if spec is None:
        return Timing()
    if not isinstance(spec, dict):
        raise doc.error(("timing",), "timing must be a mapping")
    _unknown_keys(doc, spec, TIMING_KEYS, ("timing",))
    quick = spec.get("quick")
    values = _timing_values(doc, {k: v for k, v in spec.items() if k != "quick"}, ("timing",))
    if quick is not None:
        if not isinstance(quick, dict):
            raise doc.error(("timing", "quick"), "timing.quick must be a mapping",
                            hint="allowed keys: " + ", ".join(sorted(QUICK_TIMING_KEYS)))
        _unknown_keys(doc, quick, QUICK_TIMING_KEYS, ("timing", "quick"))
        values["quick"] = tuple(sorted(_timing_values(doc, quick, ("timing", "quick")).items()))
    t = Timing(**values)
    if t.draws < 2:
        raise doc.error(("timing", "draws"), "timing.draws must be at least 2")
    for where, got in ((("timing",), t), (("timing", "quick"), t.for_run(True))):
        if got.min_reps > got.max_reps:
            raise doc.error(where + ("min_reps",), f"{'.'.join(where)}.min_reps is larger than max_reps")
    return t


def _timing_values(doc: _Doc, spec: dict, path: tuple) -> dict:
    for k, v in spec.items():
        if k == "alternate":
            if not isinstance(v, bool):
                raise doc.error(path + (k,), f"{'.'.join(path)}.{k} must be true or false")
            continue
        kind = (int, float) if k == "budget_s" else int  # counts: 2.5 warm-up calls means nothing
        if not isinstance(v, kind) or isinstance(v, bool) or v <= 0:
            what = "a positive number" if k == "budget_s" else "a positive whole number"
            raise doc.error(path + (k,), f"{'.'.join(path)}.{k} must be {what}")
    return {k: (float(v) if k == "budget_s" else v) for k, v in spec.items()}


def _build_spec(doc: _Doc, spec, language: str) -> BuildSpec:
    spec = {} if spec is None else spec
    if not isinstance(spec, dict):
        raise doc.error(("build",), "build must be a mapping")
    _unknown_keys(doc, spec, BUILD_KEYS, ("build",))
    flags = spec.get("flags", [])
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise doc.error(("build", "flags"), "build.flags must be a list of strings")
    compiler = spec.get("compiler", DEFAULT_COMPILER[language])
    if not isinstance(compiler, str) or not compiler:
        raise doc.error(("build", "compiler"), "build.compiler must be a string")
    arch = spec.get("arch", "sm_90a" if language == "cuda" else None)
    if arch is not None and (language != "cuda" or not isinstance(arch, str) or not arch.startswith("sm_")):
        raise doc.error(("build", "arch"), "build.arch applies to CUDA kernels and looks like sm_90a")
    return BuildSpec(compiler=compiler, flags=list(flags), arch=arch)


# ---------------------------------------------------------------- entry point

def resolve_task_dir(name_or_path: str | os.PathLike, workspace: Path) -> Path:
    """A path to a task folder, else a folder name under <workspace>/kernels/."""
    raw = str(name_or_path)
    as_path = Path(raw).expanduser()
    if as_path.is_dir() and (as_path / "task.yaml").exists():
        return as_path.resolve()
    in_ws = Path(workspace) / "kernels" / raw
    if in_ws.is_dir():
        return in_ws.resolve()
    if as_path.is_dir():
        raise KsError(f"{as_path} has no task.yaml")
    known = sorted(p.name for p in (Path(workspace) / "kernels").glob("*/task.yaml") for p in [p.parent])
    raise KsError(f"no task {raw!r} in {Path(workspace) / 'kernels'}",
                  hint="tasks here: " + (", ".join(known) if known else "none"))


def load_task(name_or_path: str | os.PathLike, workspace: Path) -> Task:
    task_dir = resolve_task_dir(name_or_path, workspace)
    yaml_path = task_dir / "task.yaml"
    if not yaml_path.is_file():
        raise KsError(f"{task_dir} has no task.yaml")
    doc = _Doc(yaml_path)
    d = doc.data
    _unknown_keys(doc, d, TOP_KEYS, ())

    name = _require(doc, d, "name", str)
    if name != task_dir.name:
        raise doc.error(("name",), f"name {name!r} differs from the folder name {task_dir.name!r}")
    kernel_rel = _require(doc, d, "kernel", str)
    kernel = _task_file(doc, task_dir, kernel_rel, ("kernel",))
    language = LANGUAGE_BY_SUFFIX.get(kernel.suffix)
    if language is None:
        raise doc.error(("kernel",), f"unsupported kernel file type {kernel.suffix!r}",
                        hint="use .cpp/.cc (g++) or .cu (nvcc)")
    entry = _require(doc, d, "entry", str)
    if not entry.isidentifier():
        raise doc.error(("entry",), f"entry {entry!r} is not a C identifier")
    reference = _task_file(doc, task_dir, _require(doc, d, "reference", str), ("reference",))
    build = _build_spec(doc, d.get("build"), language)

    timeout = d.get("timeout_s", 300)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout < float("inf"):
        raise doc.error(("timeout_s",), "timeout_s must be a positive number of seconds")

    scenarios = _build_scenarios(doc, _require(doc, d, "scenarios", dict))
    constraints = d.get("constraints", [])
    if not isinstance(constraints, list):
        raise doc.error(("constraints",), "constraints must be a list of expressions")
    for i, c in enumerate(constraints):
        for s in scenarios:
            try:
                ok = eval_expr(c, s.params)
            except ExprError as e:
                raise doc.error(("constraints", i), f"constraint {c!r}: {e}") from None
            if not ok:
                raise doc.error(("constraints", i), f"scenario {s.id} breaks the constraint {c!r}")

    flops = _require(doc, d, "flops", str)
    for s in scenarios:
        try:
            value = eval_expr(flops, s.params)
        except ExprError as e:
            raise doc.error(("flops",), f"flops: {e}") from None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value < float("inf"):
            raise doc.error(("flops",), f"flops must be a positive number; scenario {s.id} gives {value!r}")

    nbytes = d.get("bytes")
    if nbytes is not None:
        if not isinstance(nbytes, str):
            raise doc.error(("bytes",), f"'bytes' must be a str, got {type(nbytes).__name__}")
        for s in scenarios:
            try:
                value = eval_expr(nbytes, s.params)
            except ExprError as e:
                raise doc.error(("bytes",), f"bytes: {e}") from None
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value < float("inf"):
                raise doc.error(("bytes",), f"bytes must be a positive number; scenario {s.id} gives {value!r}")
    family = d.get("family")
    if family is not None:
        if not isinstance(family, str) or not family.strip():
            raise doc.error(("family",), "family must be a template string like the scenario id's")
        for s in scenarios:
            try:
                eval_expr(family, s.params, template=True)
            except ExprError as e:
                raise doc.error(("family",), f"family: {e}") from None

    baselines = d.get("baselines", [])
    if not isinstance(baselines, list) or not all(isinstance(b, str) for b in baselines):
        raise doc.error(("baselines",), "baselines must be a list of names")

    readonly = [yaml_path, reference]
    extra = d.get("readonly", [])
    if not isinstance(extra, list):
        raise doc.error(("readonly",), "readonly must be a list of file names")
    for i, rel in enumerate(extra):
        if not isinstance(rel, str):
            raise doc.error(("readonly", i), "readonly entries must be file names")
        readonly.append(_task_file(doc, task_dir, rel, ("readonly", i)))
    if kernel in readonly:
        raise doc.error(("kernel",), "the kernel file cannot also be read-only")

    description = d.get("description", "")
    if not isinstance(description, str):
        raise doc.error(("description",), "description must be a string")

    return Task(
        name=name, dir=task_dir, yaml_path=yaml_path, kernel=kernel, entry=entry,
        language=language, build=build, reference=reference, scenarios=scenarios,
        quick=_quick_ids(doc, d.get("quick"), scenarios),
        tolerance=_tolerance(doc, _require(doc, d, "tolerance", dict)),
        flops=flops, baselines=list(baselines), readonly=readonly, timeout_s=float(timeout),
        description=description, timing=_timing(doc, d.get("timing")),
        bytes=nbytes, family=family,
    )
