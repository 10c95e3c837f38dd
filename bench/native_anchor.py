"""The native side of bench/native_anchor.ts: the same W1 and W2 workloads on this CPU in native
code, numpy (f32 matmul through whatever BLAS numpy loaded) and PyTorch CPU (the MLP).

    /usr/bin/python3 bench/native_anchor.py DIR [--n 1024] [--threads CORES] [--profile]

DIR holds the operands bench/native_anchor.ts wrote (raw little-endian): w1_a.f32, w1_b.f32
(n×n, W1's seeded A and B), w2_x.f32 [64,784], w2_y.i32 [64], w2_w1.f32 [784,256] and
w2_w2.f32 [256,10] (in×out, as bench/workloads.ts defines them). Prints one JSON line:
GFLOP/s of numpy's and torch's n×n matmul (median of 7 after 2 warm-ups), W2 samples/s (and per
CPU-second) with the loss read at the end and every step, with every core and with one thread (5 warm-up steps, 50 timed, Adam 1e-3), the losses
at step 1 and 55, and which BLAS library the process mapped (from /proc/self/maps).
"""
import argparse
import json
import os
import pathlib
import statistics
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

B, D, H, C = 64, 784, 256, 10
LR, BETAS, EPS = 1e-3, (0.9, 0.999), 1e-8
WARMUP, STEPS = 5, 50


def load(d, name, dtype, shape):
    return np.fromfile(d / name, dtype=dtype).reshape(shape)


def time_matmul(f, n):
    """GFLOP/s of the median run, GFLOP per CPU-second of this process (all threads), runs ms."""
    for _ in range(2):
        f()
    runs, cpu = [], []
    for _ in range(7):
        c0, t0 = time.process_time(), time.perf_counter()
        f()
        runs.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    flop = 2 * n**3
    return flop / statistics.median(runs) / 1e9, flop / statistics.median(cpu) / 1e9, [round(r * 1e3, 2) for r in runs]


def mlp_run(d, every_step):
    x = torch.from_numpy(load(d, "w2_x.f32", np.float32, (B, D)).copy())
    y = torch.from_numpy(load(d, "w2_y.i32", np.int32, (B,)).astype(np.int64))
    model = nn.Sequential(nn.Linear(D, H), nn.ReLU(), nn.Linear(H, C))
    with torch.no_grad():
        model[0].weight.copy_(torch.from_numpy(load(d, "w2_w1.f32", np.float32, (D, H)).T.copy()))
        model[0].bias.zero_()
        model[2].weight.copy_(torch.from_numpy(load(d, "w2_w2.f32", np.float32, (H, C)).T.copy()))
        model[2].bias.zero_()
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        return loss

    first = step().item()
    for _ in range(WARMUP - 1):
        step().item()
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(STEPS):
        loss = step()
        if every_step or i == STEPS - 1:
            last = loss.item()
    s, c = time.perf_counter() - t0, time.process_time() - c0
    return {"samplesPerS": round(STEPS * B / s, 1), "samplesPerCpuS": round(STEPS * B / c, 1),
            "firstLoss": round(first, 4), "lastLoss": round(last, 4)}


def mlp_profile(d, steps=20):
    """PyTorch's own ops of one MLP step (loss read every step, one thread: no OpenMP stalls on a
    shared machine), self CPU ms per step, largest first."""
    torch.set_num_threads(1)
    x = torch.from_numpy(load(d, "w2_x.f32", np.float32, (B, D)).copy())
    y = torch.from_numpy(load(d, "w2_y.i32", np.int32, (B,)).astype(np.int64))
    model = nn.Sequential(nn.Linear(D, H), nn.ReLU(), nn.Linear(H, C))
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(WARMUP):
        step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in rows) / steps / 1e3
    top = [{"op": e.key, "calls": e.count // steps, "ms": round(e.self_cpu_time_total / steps / 1e3, 3)} for e in rows[:12]]
    return {"stepSelfMs": round(total, 3), "ops": top}


def blas_libraries():
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            if "blas" in base or "mkl" in base or "lapack" in base:
                libs.add(os.path.realpath(path))
    return sorted(libs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--profile", action="store_true", help="also PyTorch's ops of one MLP step (torch.profiler)")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()
    # Every core, as lavapipe uses: this torch build's OpenMP starts with 1 thread here.
    torch.set_num_threads(args.threads)
    d = pathlib.Path(args.dir)
    n = args.n
    a = load(d, "w1_a.f32", np.float32, (n, n))
    b = load(d, "w1_b.f32", np.float32, (n, n))
    np_gflops, np_per_cpu, np_runs = time_matmul(lambda: a @ b, n)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    torch_gflops, _, _ = time_matmul(lambda: ta @ tb, n)
    # The same 64 sampled entries check as bench/workloads.ts would be redundant: numpy is the
    # BLAS under test, so one row against float64 guards only against a broken install.
    row = (a[:1].astype(np.float64) @ b.astype(np.float64))[0]
    err = float(np.max(np.abs((a[:1] @ b)[0] - row)))
    out = {
        "numpy": np.__version__,
        "torch": torch.__version__,
        "torchThreads": torch.get_num_threads(),
        "blas": blas_libraries(),
        "openblasEnv": {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS")},
        "matmul": {"n": n, "numpyGflops": round(np_gflops, 2), "numpyGflopsPerCpuS": round(np_per_cpu, 2), "numpyRunsMs": np_runs,
                   "torchGflops": round(torch_gflops, 2), "row0MaxAbsErr": err},
        "mlp": {"lossAtEnd": mlp_run(d, False), "lossEveryStep": mlp_run(d, True)},
    }
    # One thread too: on a shared machine OpenMP's barriers stall when another process holds a
    # core, so the better of the two is the anchor (bench/native_anchor.ts takes the max).
    torch.set_num_threads(1)
    out["mlp1"] = {"lossAtEnd": mlp_run(d, False), "lossEveryStep": mlp_run(d, True)}
    torch.set_num_threads(args.threads)
    if args.profile:
        out["profile"] = mlp_profile(d)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
