"""Quick device probe for kernels/flash_attn_fwd/best/kernel.cu, for use before the harness.

Builds the kernel (and optional sed-made variants) into shared libraries, checks a spread of
shapes against an fp32 reference with the FlashAttention rule, prints where errors sit
(column panel / row group) when a shape fails, and times a few large shapes against torch
SDPA's cuDNN and flash backends. The numbers that count come from `ks bench`; this is a
first read. Usage: python3 best_probe.py KERNEL.cu [--variant NAME:OLD=>NEW ...] [--out DIR]
"""
import argparse, ctypes, json, math, os, subprocess, sys
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("kernel")
p.add_argument("--variant", action="append", default=[])
p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
p.add_argument("--no-time", action="store_true")
args = p.parse_args()

def build(src, name):
    so = os.path.join("/tmp", f"ks_probe_{name}.so")
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-shared",
           "-Xcompiler", "-fPIC", "-Xptxas", "-v", src, "-o", so]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        print(r.stderr[-3000:]); sys.exit(1)
    lib = ctypes.CDLL(so)
    fn = lib.flash_attn_fwd
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 7 + [ctypes.c_float, ctypes.c_int, ctypes.c_void_p]
    return fn

kernels = {"base": build(args.kernel, "base")}
src = open(args.kernel).read()
for v in args.variant:
    name, rule = v.split(":", 1)
    old, new = rule.split("=>")
    assert old in src, f"variant {name}: pattern not found"
    path = f"/tmp/ks_probe_{name}.cu"
    open(path, "w").write(src.replace(old, new))
    kernels[name] = build(path, name)

def call(fn, q, k, v, o, causal, scale):
    b, s_q, h_q, d = q.shape
    s_k, h_kv = k.shape[1], k.shape[2]
    dt = 0 if q.dtype == torch.bfloat16 else 1
    return fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), b, s_q, s_k, h_q, h_kv, d,
              int(causal), scale, dt, torch.cuda.current_stream().cuda_stream)

def reference(q, k, v, causal, scale, dtype):
    # fp32 (or lowp) reference with explicit bottom-right mask; rows that see nothing -> 0
    b, s_q, h_q, d = q.shape
    s_k, h_kv = k.shape[1], k.shape[2]
    rep = h_q // h_kv
    qq = q.transpose(1, 2).to(dtype)
    kk = k.transpose(1, 2).repeat_interleave(rep, 1).to(dtype)
    vv = v.transpose(1, 2).repeat_interleave(rep, 1).to(dtype)
    out = torch.empty(b, h_q, s_q, d, dtype=dtype, device=q.device)
    chunk = max(1, 2 ** 26 // (s_k * h_q * b))
    for i0 in range(0, s_q, chunk):
        i1 = min(s_q, i0 + chunk)
        s = (qq[:, :, i0:i1].float() @ kk.float().transpose(-1, -2)) * scale
        if causal:
            i = torch.arange(i0, i1, device=q.device)[:, None]
            j = torch.arange(s_k, device=q.device)[None, :]
            s = s.masked_fill(j > i + s_k - s_q, float("-inf"))
        pm = torch.softmax(s, -1).nan_to_num(0.0)
        if dtype != torch.float32:
            pm = pm.to(dtype)
        out[:, :, i0:i1] = (pm.float() @ vv.float()).to(dtype)
    return out.transpose(1, 2)

CHECK = [  # b, s_q, s_k, h_q, h_kv, d, causal, dtype
    (2, 1024, 1024, 8, 8, 128, False, torch.bfloat16),
    (2, 1024, 1024, 8, 8, 128, True, torch.bfloat16),
    (1, 333, 333, 4, 4, 128, False, torch.bfloat16),
    (2, 512, 512, 8, 8, 64, False, torch.bfloat16),
    (2, 512, 512, 8, 8, 64, True, torch.bfloat16),
    (2, 512, 512, 4, 4, 256, False, torch.bfloat16),
    (2, 512, 512, 4, 4, 256, True, torch.bfloat16),
    (2, 512, 512, 4, 4, 96, True, torch.bfloat16),
    (1, 1024, 1024, 32, 8, 128, True, torch.bfloat16),
    (1, 777, 777, 8, 1, 128, True, torch.bfloat16),
    (1, 256, 1024, 4, 2, 128, True, torch.bfloat16),
    (1, 1024, 256, 4, 2, 128, True, torch.bfloat16),
    (1, 77, 301, 8, 2, 64, True, torch.bfloat16),
    (1, 301, 77, 8, 2, 96, False, torch.bfloat16),
    (2, 1024, 1024, 8, 8, 128, True, torch.float16),
    (1, 4079, 4079, 4, 4, 128, True, torch.bfloat16),
]

def check(fn, shape, seed):
    b, s_q, s_k, h_q, h_kv, d, causal, dt = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, s_q, h_q, d, device="cuda", dtype=dt, generator=g)
    k = torch.randn(b, s_k, h_kv, d, device="cuda", dtype=dt, generator=g)
    v = torch.randn(b, s_k, h_kv, d, device="cuda", dtype=dt, generator=g)
    o = torch.full_like(q, float("nan"))
    scale = 1 / math.sqrt(d)
    rc = call(fn, q, k, v, o, causal, scale)
    torch.cuda.synchronize()
    if rc:
        return dict(ok=False, why=f"rc={rc}")
    ref = reference(q, k, v, causal, scale, torch.float32)
    low = reference(q, k, v, causal, scale, dt)
    err = (o.float() - ref).abs()
    bound = 2 * (low.float() - ref).abs().max().item() + 1e-5
    bad = not torch.isfinite(o.float()).all().item() or err.max().item() > bound
    res = dict(ok=not bad, err=err.nan_to_num(1e9).max().item(), bound=bound)
    if bad:
        e = err.nan_to_num(1e9)
        res["nan"] = int((~torch.isfinite(o.float())).sum().item())
        res["by_panel64"] = [round(e[..., c:c + 64].max().item(), 4) for c in range(0, d, 64)]
        res["by_row64"] = [round(e[:, r:r + 64].max().item(), 4) for r in range(0, min(s_q, 512), 64)]
        res["by_col8"] = [round(e[..., c:c + 8].max().item(), 3) for c in range(0, min(d, 128), 8)]
    return res

summary = {}
for name, fn in kernels.items():
    ok_all = True
    for shape in CHECK:
        r = check(fn, shape, 1234)
        ok_all &= r["ok"]
        tag = f"{name:6s} b{shape[0]} q{shape[1]} k{shape[2]} h{shape[3]}/{shape[4]} d{shape[5]} {'C' if shape[6] else 'F'} {str(shape[7])[6:]}"
        print(tag, "OK " if r["ok"] else "BAD", {k2: v2 for k2, v2 in r.items() if k2 != "ok"}, flush=True)
    summary[name] = ok_all

def bench(f, n=30):
    for _ in range(5): f()
    st = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    en = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    flush = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    for i in range(n):
        flush.zero_()
        st[i].record(); f(); en[i].record()
    torch.cuda.synchronize()
    ts = sorted(s.elapsed_time(e) for s, e in zip(st, en))
    return ts[n // 2]

TIME = [  # FA3-paper style: 16k tokens, hidden 2048
    (d, causal, s) for d in (64, 128, 256) for causal in (False, True) for s in (512, 2048, 8192)
] + [(128, True, 4096, "gqa")]
rows = []
if not args.no_time and summary.get("base"):
    fn = kernels["base"]
    for item in TIME:
        d, causal, s = item[:3]
        h = 2048 // d
        b = 16384 // s
        h_kv = h // 4 if len(item) > 3 else h
        dt = torch.bfloat16
        q = torch.randn(b, s, h, d, device="cuda", dtype=dt)
        k = torch.randn(b, s, h_kv, d, device="cuda", dtype=dt)
        v = torch.randn(b, s, h_kv, d, device="cuda", dtype=dt)
        o = torch.empty_like(q)
        sc = 1 / math.sqrt(d)
        flops = 4 * b * h * s * d * (s / 2 if causal else s)
        t_me = bench(lambda: call(fn, q, k, v, o, causal, sc))
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        res = {}
        from torch.nn.attention import sdpa_kernel, SDPBackend
        for nm, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel([be]):
                    f = lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=sc, enable_gqa=h_kv != h)
                    f()
                    res[nm] = bench(f)
            except Exception:
                res[nm] = None
        best = min(x for x in res.values() if x)
        rows.append(dict(d=d, causal=causal, s=s, b=b, h=h, h_kv=h_kv, me_ms=t_me, **{k2 + "_ms": v2 for k2, v2 in res.items()},
                         me_tflops=flops / t_me / 1e9, speedup=best / t_me))
    json.dump(rows, open(os.path.join(args.out, "probe_times.json"), "w"), indent=1)
print("\nSUMMARY correct:", summary)
if rows:
    print(f"{'shape':24s} {'me TF':>7s} {'cudnn TF':>8s} {'flash TF':>8s} {'x best':>7s}")
    for r in rows:
        fl = 4 * r['b'] * r['h'] * r['s'] * r['d'] * (r['s'] / 2 if r['causal'] else r['s'])
        tf = lambda ms: f"{fl / ms / 1e9:8.0f}" if ms else "     n/a"
        print(f"d{r['d']} {'C' if r['causal'] else 'F'} s{r['s']} h{r['h']}/{r['h_kv']} b{r['b']}".ljust(24),
              f"{r['me_tflops']:7.0f}", tf(r.get('cudnn_ms')), tf(r.get('flash_ms')), f"{r['speedup']:7.2f}")
    print("geomean x best:", math.exp(sum(math.log(r['speedup']) for r in rows) / len(rows)))
