"""Can the libraries' first calls overlap the check? One process per mode, the quick scenarios' shapes.

  python3 lab/flash_attn_fwd/device/warmup_probe.py serial|threads

serial: FA3, cuDNN and SDPA-flash first calls one after another, then the references of every quick scenario (two
draws), as the harness does them today. threads: the same first calls on two threads (FA3 on one, the two SDPA
backends on the other, each on its own stream) while the main thread computes the references. Prints one JSON line:
each part's wall seconds and the whole's.
"""
import json
import sys
import threading
import time
from pathlib import Path

t_start = time.monotonic()
import torch  # noqa: E402

from ks_tui.task import load_task  # noqa: E402
from ks_tui.tasklib.attention import baselines as B  # noqa: E402
from ks_tui.tasklib.attention import helpers as H  # noqa: E402

mode = sys.argv[1]
task = load_task("kernels/flash_attn_fwd", Path.cwd())
scs = task.select(quick=True, ids=None)
t_import = time.monotonic() - t_start
torch.cuda.init()
torch.zeros(1, device="cuda")
spent = {"import_s": round(t_import, 3)}


def first_calls(names, key):
    t0 = time.monotonic()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for sc in scs:
            gen = torch.Generator(device="cuda").manual_seed(7)
            inputs = H.make_inputs(sc.params, gen, "cuda")
            for name in names:
                try:
                    B.BASELINES[name](inputs, sc.params)()
                except Exception as e:  # noqa: BLE001
                    spent.setdefault("errors", []).append(f"{name} {sc.id}: {type(e).__name__}")
        stream.synchronize()
    spent[key] = round(time.monotonic() - t0, 3)


def references():
    t0 = time.monotonic()
    for sc in scs:
        for draw in range(2):
            gen = torch.Generator(device="cuda").manual_seed(100 + draw)
            inputs = H.make_inputs(sc.params, gen, "cuda")
            H.reference(inputs, sc.params)
            H.reference_lowp(inputs, sc.params)
    torch.cuda.synchronize()
    spent["references_s"] = round(time.monotonic() - t0, 3)


t0 = time.monotonic()
if mode == "serial":
    first_calls(["fa3"], "fa3_s")
    first_calls(["sdpa_cudnn", "sdpa_flash"], "sdpa_s")
    references()
else:
    threads = [threading.Thread(target=first_calls, args=(["fa3"], "fa3_s")),
               threading.Thread(target=first_calls, args=(["sdpa_cudnn", "sdpa_flash"], "sdpa_s"))]
    for t in threads:
        t.start()
    references()
    for t in threads:
        t.join()
spent["together_s"] = round(time.monotonic() - t0, 3)
print(json.dumps({"mode": mode, **spent}))
