"""What the compiler made of a kernel file, function by function: compare two files, or show the order
of the matrix, exponential and barrier instructions.

Usage (repo root; needs nvcc, and nvdisasm on PATH or from pip's nvidia-cuda-nvdisasm):
    python3 -m lab.flash_attn_fwd.scripts.sass diff A.cu B.cu [--match REGEX]
        one line per kernel instantiation: SAME (the same instructions, names and labels aside) or
        DIFF with the opcodes whose counts differ; "only A" / "only B" for instantiations one lacks
    python3 -m lab.flash_attn_fwd.scripts.sass diff A.cu B.cu --strip-b REGEX [--match REGEX]
        the same, for a B whose functions gained a template argument: B's instantiations whose names
        contain REGEX, with it deleted from their names, against A's (session 12: the unmasked d256
        instantiations of next_d256split against v24's, `--strip-b 'ELb0(?=EEEv)'`), or whose kernel
        gained parameters (session 17: next_tailsplit's float*, int, int, `--strip-b 'Pfii$'`)
    python3 -m lab.flash_attn_fwd.scripts.sass flow FILE.cu [--match REGEX]
        per instantiation, the order of HGMMA (wgmma), WARPGROUP.DEPBAR (its waits), MUFU.EX2,
        BAR.SYNC, BRA.DIV and the O stores, runs of one kind counted (HGMMAx18)
    python3 -m lab.flash_attn_fwd.scripts.sass loops FILE.cu [--match REGEX] [--op OPCODE]
        per instantiation, the loops (a branch back to an earlier label) whose body holds OPCODE
        (default HGMMA), smallest first: instructions, OPCODE count, MUFU.EX2, SYNCS (mbarrier
        operations), MEMBAR, BRA.DIV. The smallest one with a block's wgmmas is the key loop (v28's
        d128 160-key loop: 989 instructions, 18 HGMMA); larger ones are the tile loop, or spans that a
        wait's out-of-line retry path jumps back across
    python3 -m lab.flash_attn_fwd.scripts.sass keyloop A.cu B.cu [--match REGEX] [--ops HGMMA,MUFU.EX2]
        per instantiation, the key loop (the smallest loop holding every opcode of --ops) of A against B's:
        SAME (the same opcodes in the same order, registers and labels aside) or DIFF with the opcodes whose
        counts differ. Where `diff` says DIFF for a change outside the loop (the producer's code, say), this
        says whether the consumers' loop came out the same (session 21: next_prodloop1)

Sessions 6 and 7 used these checks before spending device time: a candidate whose SASS equals the
measured file's in a function needs no new measurement there, and a BRA.DIV in a loop or a changed
wgmma order is reason enough to stop. Exit code 2, with one message, for a file that does not compile
or a missing tool.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NVCC_FLAGS = ["-O3", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a", "-cubin"]
# Parts of a name or operand that differ between two files of the same code.
_ANON = re.compile(r"_ZN\d+_GLOBAL__N__\w+?_cu_[0-9a-f]{8}\d*")  # the anonymous namespace, named per file
_LABEL = re.compile(r"\.L_x_\d+")
_INTERNAL = re.compile(r"__internal_\d+_")  # nvcc's helper subroutines (rcp slow path), numbered per file
_INSN = re.compile(r"\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;")
_FLOW = [("HGMMA", r"\bHGMMA\b"), ("DEPBAR", r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)"), ("EX2", r"MUFU\.EX2"),
         ("BARSYNC", r"\bBAR\.SYNC"), ("BRA.DIV", r"BRA\.DIV"), ("STG", r"\bSTG\b"), ("STS", r"\bSTS\b"),
         ("UTMASTG", r"UTMASTG")]


class SassError(Exception):
    pass


def cuda_tool(name: str) -> str:
    """A CUDA binary from PATH, else the one NVIDIA's pip wheel puts under nvidia/cu*/bin (nvidia-cuda-nvdisasm,
    nvidia-cuda-cuobjdump: the lab extra)."""
    exe = shutil.which(name)
    if exe:
        return exe
    try:
        import nvidia  # type: ignore[import-untyped]  # namespace package of NVIDIA's pip wheels
    except ImportError:
        nvidia = None
    for root in getattr(nvidia, "__path__", []):
        for cand in sorted(Path(root).glob(f"cu*/bin/{name}")) + sorted(Path(root).glob(f"cuda_{name}/bin/{name}")):
            return str(cand)
    raise SassError(f"{name} not found: put it on PATH or `pip install nvidia-cuda-{name}` (the lab extra)")


def disassembler() -> list[str]:
    return [cuda_tool("nvdisasm"), "-c"]


def disassemble(source: Path) -> str:
    """nvdisasm's text of the file compiled for sm_90a."""
    if shutil.which("nvcc") is None:
        raise SassError("nvcc not found on PATH")
    dis = disassembler()
    with tempfile.TemporaryDirectory() as tmp:
        # A copy named *.cu: nvcc picks the language by the suffix, and the source may come from a
        # pipe (`<(git show REV:FILE)`). Kernel files are self-contained, so no include path is lost.
        src = Path(tmp) / "kernel.cu"
        src.write_text(source.read_text())
        cubin = Path(tmp) / "k.cubin"
        r = subprocess.run(["nvcc", *NVCC_FLAGS, "-o", str(cubin), str(src)], capture_output=True, text=True)
        if r.returncode:
            raise SassError(f"nvcc failed on {source}:\n{r.stderr.strip()[-2000:]}")
        out = subprocess.run([*dis, str(cubin)], capture_output=True, text=True)
        if out.returncode:
            raise SassError(f"nvdisasm failed: {out.stderr.strip()[-500:]}")
    return out.stdout


def functions(source: Path) -> dict[str, list[str]]:
    """{normalised function name: its instructions, normalised} of the file compiled for sm_90a."""
    funcs: dict[str, list[str]] = collections.OrderedDict()
    cur = None
    for line in disassemble(source).splitlines():
        m = re.match(r"\s*\.section\s+\.text\.(\S+?),", line)
        if m:
            cur = _ANON.sub("", m.group(1))
            funcs[cur] = []
            continue
        m = _INSN.match(line)
        if m and cur is not None:
            funcs[cur].append(_INTERNAL.sub("__internal_", _LABEL.sub("L", _ANON.sub("", m.group(1)))))
    # A helper subroutine returns to its caller by name (`RET.REL.NODEC R4 `(NAME)`): the function's own name
    # is not part of its code, so two instantiations that differ only in name compare equal.
    return {name: [i.replace(f"`({name})", "`(SELF)") for i in insns] for name, insns in funcs.items()}


def strip_names(funcs: dict[str, list[str]], pattern: str) -> dict[str, list[str]]:
    """The functions whose names contain `pattern`, with it deleted from their names; SassError when two of
    them would get one name (the pattern does not single out one instantiation of each)."""
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise SassError(f"--strip-b {pattern!r} is not a regular expression: {e}") from None
    out: dict[str, list[str]] = {}
    for name, insns in funcs.items():
        if not rx.search(name):
            continue
        short = rx.sub("", name)
        if short in out:
            raise SassError(f"--strip-b {pattern!r} gives two functions one name: {short}")
        out[short] = insns
    return out


def opcode(insn: str) -> str:
    """The opcode of one instruction, its predicate dropped (`@!P0 BRA ...` -> BRA)."""
    return re.sub(r"^@!?U?P\w+\s+", "", insn).split()[0]


def diff(a: dict[str, list[str]], b: dict[str, list[str]], match: str) -> list[str]:
    rows = []
    for name in sorted(set(a) | set(b)):
        if not re.search(match, name):
            continue
        if name not in b or name not in a:
            rows.append(f"only {'A' if name in a else 'B'}  {name}")
            continue
        if a[name] == b[name]:
            rows.append(f"SAME  {name}  ({len(a[name])} instructions)")
            continue
        ca, cb = (collections.Counter(opcode(i) for i in f) for f in (a[name], b[name]))
        changed = " ".join(f"{op}:{ca[op]}->{cb[op]}" for op in sorted(set(ca) | set(cb)) if ca[op] != cb[op])
        rows.append(f"DIFF  {name}  ({len(a[name])} -> {len(b[name])} instructions)  {changed or 'same counts, other order'}")
    return rows


def flow_line(insns: list[str], kinds: tuple[tuple[str, str], ...] = tuple(_FLOW)) -> str:
    """The instructions of `kinds` (name, regex) in order, runs of one kind counted (HGMMAx18)."""
    runs: list[list] = []
    for insn in insns:
        for key, rx in kinds:
            m = re.search(rx, insn)
            if m:
                tok = f"{key}:{m.group(1)}" if key == "DEPBAR" else key
                if runs and runs[-1][0] == tok:
                    runs[-1][1] += 1
                else:
                    runs.append([tok, 1])
                break
    return " ".join(f"{t}x{n}" if n > 1 else t for t, n in runs)


def flow(funcs: dict[str, list[str]], match: str) -> list[str]:
    rows = []
    for name, insns in funcs.items():
        if re.search(match, name):
            rows += [name, "   " + flow_line(insns)]
    return rows


_LABEL_LINE = re.compile(r"^\s*(\.L_x_\d+):")
_BRANCH_TO = re.compile(r"\bBRA(?:\.\S+)?\s+`?\(?(\.L_x_\d+)")


def _holds(op: str):
    rx = re.compile(rf"(^|\s){re.escape(op)}\b")
    return lambda insn: bool(rx.search(insn))


def loop_bodies(text: str, match: str, ops: tuple[str, ...]) -> dict[str, list[list[str]]]:
    """Per function of nvdisasm's text: the bodies (instructions) of the loops that hold every opcode of
    `ops`, smallest first, each body once."""
    tests = [_holds(op) for op in ops]
    bodies: dict[str, list[list[str]]] = collections.OrderedDict()
    name: str | None = None
    labels: dict[str, int] = {}
    insns: list[str] = []

    def close() -> None:
        if name is None or not re.search(match, name):
            return
        found: dict[tuple[int, int], list[str]] = {}
        for i, insn in enumerate(insns):
            m = _BRANCH_TO.search(insn)
            if not m or labels.get(m.group(1), i + 1) > i:
                continue  # not a branch, or a branch forward
            start = labels[m.group(1)]
            body = insns[start:i + 1]
            if all(any(t(x) for x in body) for t in tests):
                found[(len(body), start)] = body
        bodies[name] = [found[k] for k in sorted(found)]

    for line in text.splitlines():
        m = re.match(r"\s*\.section\s+\.text\.(\S+?),", line)
        if m:
            close()
            name, labels, insns = _ANON.sub("", m.group(1)), {}, []
            continue
        m = _LABEL_LINE.match(line)
        if m:
            labels[m.group(1)] = len(insns)
            continue
        m = _INSN.match(line)
        if m and name is not None:
            insns.append(m.group(1))
    close()
    return bodies


def loops(text: str, match: str, op: str) -> list[str]:
    """Per function of nvdisasm's text: the loops whose body holds `op`, smallest first."""
    rows = []
    kinds = ((op, _holds(op)), ("EX2", _holds("MUFU.EX2")), ("SYNCS", lambda x: "SYNCS." in x),
             ("MEMBAR", lambda x: "MEMBAR." in x), ("BRA.DIV", lambda x: "BRA.DIV" in x))
    for fname, found in loop_bodies(text, match, (op,)).items():
        rows.append(fname)
        if not found:
            rows.append(f"   no loop holds {op}")
        seen = set()
        for body in found:
            counts = tuple((k, sum(map(t, body))) for k, t in kinds)
            if (len(body), counts) in seen:
                continue  # the same span reached by two back branches
            seen.add((len(body), counts))
            rows.append(f"   {len(body):5d} instructions  " + "  ".join(f"{k} {v}" for k, v in counts))
    return rows


def keyloop_diff(a_text: str, b_text: str, match: str, ops: tuple[str, ...]) -> list[str]:
    """Per function, the smallest loop holding every opcode of `ops` (the key loop) in A and in B: SAME when
    the two have the same opcodes in the same order (registers and labels aside), else DIFF with the
    opcodes whose counts differ, or "same counts, other order"."""
    a, b = loop_bodies(a_text, match, ops), loop_bodies(b_text, match, ops)
    rows = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            rows.append(f"only {'A' if name in a else 'B'}  {name}")
            continue
        if not a[name] or not b[name]:
            rows.append(f"NONE  {name}  (no loop holds {' and '.join(ops)} in {'A' if not a[name] else 'B'})")
            continue
        x, y = ([opcode(i) for i in f[name][0]] for f in (a, b))
        if x == y:
            rows.append(f"SAME  {name}  ({len(x)} instructions)")
            continue
        ca, cb = collections.Counter(x), collections.Counter(y)
        changed = " ".join(f"{op}:{ca[op]}->{cb[op]}" for op in sorted(set(ca) | set(cb)) if ca[op] != cb[op])
        rows.append(f"DIFF  {name}  ({len(x)} -> {len(y)} instructions)  {changed or 'same counts, other order'}")
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("diff", help="SAME / DIFF per instantiation")
    d.add_argument("a", type=Path)
    d.add_argument("b", type=Path)
    d.add_argument("--strip-b", metavar="REGEX", default=None,
                   help="compare only B's functions whose names contain REGEX, with it deleted from their names")
    f = sub.add_parser("flow", help="order of wgmma, waits, exp2 and barriers")
    f.add_argument("file", type=Path)
    lo = sub.add_parser("loops", help="the loops that hold an opcode (the key loop's size)")
    lo.add_argument("file", type=Path)
    lo.add_argument("--op", default="HGMMA", help="only loops whose body holds this opcode (default HGMMA)")
    kd = sub.add_parser("keyloop", help="the key loop (smallest loop holding HGMMA and MUFU.EX2) of A against B")
    kd.add_argument("a", type=Path)
    kd.add_argument("b", type=Path)
    kd.add_argument("--ops", default="HGMMA,MUFU.EX2",
                    help="comma-separated opcodes the loop must hold (default HGMMA,MUFU.EX2)")
    for p in (d, f, lo, kd):
        p.add_argument("--match", default="", help="only functions whose (mangled) name matches this regex")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "diff":
            b = functions(args.b)
            rows = diff(functions(args.a), strip_names(b, args.strip_b) if args.strip_b else b, args.match)
        elif args.cmd == "loops":
            rows = loops(disassemble(args.file), args.match, args.op)
        elif args.cmd == "keyloop":
            ops = tuple(op.strip() for op in args.ops.split(",") if op.strip())
            rows = keyloop_diff(disassemble(args.a), disassemble(args.b), args.match, ops)
        else:
            rows = flow(functions(args.file), args.match)
    except (SassError, OSError) as e:
        print(f"sass.py: {e}", file=sys.stderr)
        return 2
    print("\n".join(rows) if rows else f"no function matches {args.match!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
