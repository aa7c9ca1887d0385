"""FlashAttention-3's compiled key loops beside ours: the hdim-128 bf16 kernels of the fa3-fwd wheel (the FA3 the
device calls time) disassembled, each one's steady key loop found as `sass.py loops` finds ours, and the two put
side by side: size, matrix / exponential / mbarrier counts, the order of the wgmmas, waits, turns and exponentials
(as `sass.py flow`), and the opcodes whose counts differ (FA3's `.FTZ` forms counted as the plain ones).

Which FA3 kernels: the mainloop's template names them (stages, cluster, tile M x N x K, head dim V, element, then
Is_causal, Is_local, Has_softcap, Varlen, PagedKV, AppendKV, HasQv, MmaPV_is_RS, IntraWGOverlap, PackGQA, Split,
V_colmajor); taken are the plain ones a grid launch runs: causal on 128 x 128 tiles, unmasked on 128 x 176 without
a cluster, neither varlen, split, softcapped nor GQA-packed. Their smallest loop holding 16 or more wgmmas and 60 or
more exponentials is the steady loop (FA3's causal launches run a masked loop beside it: the next larger one).

Needs the wheel's file (`.whl/fa3_fwd-*.whl`, as the device calls carry it), cuobjdump (pip's
nvidia-cuda-cuobjdump, the lab extra), nvdisasm and nvcc (for ours) and c++filt. Exit code 2, with one message,
where one is missing.

    python3 -m lab.flash_attn_fwd.scripts.fa3_sass
    python3 -m lab.flash_attn_fwd.scripts.fa3_sass --wheel .whl/fa3_fwd-0.0.3-cp39-abi3-manylinux_2_24_x86_64.whl \\
        --kernel kernels/flash_attn_fwd/best/kernel.cu
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from lab.flash_attn_fwd.scripts import sass

REPO = Path(__file__).resolve().parents[3]
MAINLOOP = re.compile(r"CollectiveMainloopFwdSm90<(\d+), cute::tuple<cute::C<(\d+)>, cute::C<1>, cute::C<1> >, "
                      r"cute::tuple<cute::C<(\d+)>, cute::C<(\d+)>, cute::C<(\d+)> >, (\d+), cutlass::(\w+), float, "
                      r"cutlass::arch::Sm90, ([a-z, ]+)>")
FLAGS = ("causal", "local", "softcap", "varlen", "paged", "append_kv", "qv", "pv_rs", "overlap", "pack_gqa", "split",
         "v_colmajor")
# (label, tile N, causal): the FA3 kernels a grid launch of hdim 128 in bf16 runs
WANTED = (("FA3 causal 128x128", 128, True), ("FA3 unmasked 128x176", 176, False))
# ours: the 128-row d128 functions (the unmasked one, the causal one), by their template arguments
OURS = (("ours unmasked 128x128", r"bfloat16Li128ELi128ELi8ELb1ELi128ELb0E"),
        ("ours causal 128x128", r"bfloat16Li128ELi128ELi8ELb1ELi128ELb1E"))
EXTRA_FLOW = (("BAR.ARV", r"\bBAR\.ARV"), ("TRYWAIT", r"TRYWAIT"), ("ARRIVE", r"SYNCS\.ARRIVE"))


def parse_mainloop(demangled: str) -> dict | None:
    """The mainloop's template arguments of one demangled FA3 kernel name, or None for another kernel."""
    m = MAINLOOP.search(demangled)
    if not m:
        return None
    stages, cluster, tm, tn, tk, dv, element, flags = m.groups()
    values = [f.strip() == "true" for f in flags.split(",")]
    if len(values) != len(FLAGS):
        return None
    return {"stages": int(stages), "cluster": int(cluster), "tile": (int(tm), int(tn), int(tk)), "dv": int(dv),
            "element": element, **dict(zip(FLAGS, values))}


def wanted(args: dict) -> str | None:
    """The label of WANTED that a kernel with these template arguments is, if any."""
    if args["element"] != "bfloat16_t" or args["dv"] != 128 or args["tile"][2] != 128 or args["cluster"] != 1:
        return None
    if any(args[f] for f in ("local", "softcap", "varlen", "paged", "append_kv", "qv", "pack_gqa", "split")):
        return None
    for label, n, causal in WANTED:
        if args["tile"][:2] == (128, n) and args["causal"] == causal:
            return label
    return None


def fa3_kernels(wheel: Path) -> dict[str, tuple[str, str]]:
    """{label: (nvdisasm's text of the cubin that holds it, FA3's kernel's name)} for WANTED, from the wheel's
    extension module."""
    cuobjdump, nvdisasm, cxxfilt = sass.cuda_tool("cuobjdump"), sass.cuda_tool("nvdisasm"), shutil.which("c++filt")
    if cxxfilt is None:
        raise sass.SassError("c++filt not found (binutils): FA3's kernels are told apart by their demangled names")
    out: dict[str, tuple[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with zipfile.ZipFile(wheel) as z:
                so = [n for n in z.namelist() if n.startswith("fa3_fwd/") and n.endswith(".so")]
                if not so:
                    raise sass.SassError(f"{wheel} holds no fa3_fwd/*.so")
                lib = Path(z.extract(so[0], tmp))
        except (OSError, zipfile.BadZipFile) as e:
            raise sass.SassError(f"cannot read {wheel}: {e}") from None
        r = subprocess.run([cuobjdump, "--extract-elf", "all", str(lib)], cwd=tmp, capture_output=True, text=True)
        if r.returncode:
            raise sass.SassError(f"cuobjdump failed on {lib.name}: {r.stderr.strip()[-300:]}")
        for cubin in sorted(Path(tmp).glob("*.sm_90a.cubin")):
            names = sorted(set(re.findall(rb"\.text\.([A-Za-z0-9_]+)", cubin.read_bytes())))
            demangled = subprocess.run([cxxfilt], input="\n".join(n.decode() for n in names), capture_output=True,
                                       text=True).stdout.splitlines()
            hits = {n.decode(): label for n, d in zip(names, demangled)
                    if (args := parse_mainloop(d)) and (label := wanted(args)) and label not in out}
            if not hits:
                continue
            text = subprocess.run([nvdisasm, "-c", str(cubin)], capture_output=True, text=True).stdout
            for name, label in hits.items():
                out[label] = (text, name)
    missing = [label for label, _, _ in WANTED if label not in out]
    if missing:
        raise sass.SassError(f"{wheel.name}: no kernel for {', '.join(missing)}")
    return out


def steady_loop(text: str, name: str) -> list[str]:
    """The smallest loop of function `name` (a regex) with 16 or more wgmmas and 60 or more exponentials."""
    bodies = [b for found in sass.loop_bodies(text, name, ("HGMMA", "MUFU.EX2")).values() for b in found]
    steady = [b for b in bodies if sum("HGMMA" in x for x in b) >= 16 and sum("MUFU.EX2" in x for x in b) >= 60]
    if not steady:
        raise sass.SassError(f"no loop with 16 wgmmas and 60 exponentials in a function matching {name}")
    return min(steady, key=len)


def opcodes(body: list[str]) -> collections.Counter:
    return collections.Counter(sass.opcode(i).replace(".FTZ", "") for i in body)


def report(loops: dict[str, list[str]]) -> list[str]:
    lines = []
    for label, body in loops.items():
        ops = opcodes(body)
        hgmma = sum(n for op, n in ops.items() if op.startswith("HGMMA"))
        order = sass.flow_line(body, (*sass._FLOW, *EXTRA_FLOW))
        lines.append(f"{label:24s} {len(body):5d} instructions  HGMMA {hgmma:3d}  EX2 {ops['MUFU.EX2']:3d}  {order}")
    pairs = [("ours unmasked 128x128", "FA3 causal 128x128")]
    for a, b in pairs:
        oa, ob = opcodes(loops[a]), opcodes(loops[b])
        diff = {op: oa[op] - ob[op] for op in set(oa) | set(ob) if oa[op] != ob[op]}
        lines.append(f"{a} - {b}: " + ", ".join(f"{op} {d:+d}" for op, d in sorted(diff.items(), key=lambda x: -x[1])))
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    wheels = sorted((REPO / ".whl").glob("fa3_fwd-*.whl"))
    ap.add_argument("--wheel", type=Path, default=wheels[-1] if wheels else None)
    ap.add_argument("--kernel", type=Path, default=REPO / "kernels/flash_attn_fwd/best/kernel.cu")
    a = ap.parse_args(argv)
    if a.wheel is None or not a.wheel.is_file():
        print(f"fa3_sass: no FA3 wheel {a.wheel or '(.whl/fa3_fwd-*.whl)'}: `pip download --no-deps fa3-fwd==0.0.3 -d .whl`",
              file=sys.stderr)
        return 2
    try:
        loops = {label: steady_loop(text, f"^{re.escape(name)}$") for label, (text, name) in fa3_kernels(a.wheel).items()}
        ours = sass.disassemble(a.kernel)
        for label, pat in OURS:
            loops[label] = steady_loop(ours, pat)
    except sass.SassError as e:
        print(f"fa3_sass: {e}", file=sys.stderr)
        return 2
    print("\n".join(report(loops)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
