"""Print a compact comparison of harness result JSONs: python3 best_summary.py A.json B.json ...

One column per result (kernel TFLOP/s and speedup vs the fastest baseline), one row per
scenario, then status / correct / geomean lines. Used at the end of a device call.
"""
import json, sys

results = []
for path in sys.argv[1:]:
    try:
        results.append((path.rsplit("/", 1)[-1].removesuffix(".json"), json.load(open(path))))
    except Exception as ex:  # a crashed run leaves no JSON; say so and go on
        print(f"{path}: unreadable ({ex})")
if not results:
    sys.exit(0)
ids = [s["id"] for s in results[0][1].get("scenarios", [])]
print("scenario".ljust(36) + "".join(f"{name[:14]:>16s}" for name, _ in results) + "   best base")
for sid in ids:
    row, base = sid[:35].ljust(36), ""
    for _, r in results:
        sc = next((s for s in r.get("scenarios", []) if s["id"] == sid), None)
        if sc is None or sc.get("speedup") is None:
            row += f"{('ok' if sc and sc.get('ok') else 'FAIL'):>16s}"
        else:
            row += f"{sc['tflops']:7.0f}T {sc['speedup']:5.2f}x "
            b = sc.get("baseline") or {}
            if b.get("time_ms"):
                base = f"{b['name']} {sc['tflops'] * sc['time_ms'] / b['time_ms']:.0f}T"
    print(row + "   " + base)
for key in ("status", "correct", "geomean_speedup"):
    print(key.ljust(36) + "".join(f"{str(r.get(key))[:14]:>16s}" for _, r in results))
for name, r in results:
    k = (r.get("compile") or {}).get("kernels") or []
    regs = sorted({(x.get("registers"), x.get("spills_bytes")) for x in k})
    print(f"{name}: regs/spills {regs} sass {(r.get('compile') or {}).get('sass')} msg {r.get('message', '')[:150]}")
