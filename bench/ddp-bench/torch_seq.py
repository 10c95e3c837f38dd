"""PyTorch reference for ddp-bench's character models (bench/ddp-bench/run.ts runs it).

Trains char-rnn or gpt-nano exactly as examples/models.ts and examples/recipes.ts define them
(same layers, parameter names, default inits, optimizer, schedule and batch) on the sequences
run.ts exported (the same subset of the Brown Corpus, same vocabulary), for the same epochs and
steps, and prints the validation cross-entropy per epoch. The last stdout line is JSON.

    /usr/bin/python3 bench/ddp-bench/torch_seq.py --model gpt-nano --data seq.json --epochs 2 --batch 64

Needs Debian's python3-torch (/usr/bin/python3, not the python3 on PATH).
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class CharRnn(nn.Module):
    """Embedding(V,128) -> LSTM(128,256, 2 layers, batch-first) -> Dropout .2 -> Linear(256,V)."""

    def __init__(self, vocab):
        super().__init__()
        self.emb = nn.Embedding(vocab, 128)
        self.lstm = nn.LSTM(128, 256, num_layers=2, batch_first=True)
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(256, vocab)

    def forward(self, ids):
        return self.head(self.drop(self.lstm(self.emb(ids))[0]))


class GptBlock(nn.Module):
    def __init__(self, d, heads, d_ff, p):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.ff_up = nn.Linear(d, d_ff)
        self.ff_down = nn.Linear(d_ff, d)
        self.drop = nn.Dropout(p)

    def forward(self, x, mask):
        n1 = self.ln1(x)
        x = x + self.drop(self.attn(n1, n1, n1, attn_mask=mask, need_weights=False)[0])
        return x + self.drop(self.ff_down(F.gelu(self.ff_up(self.ln2(x)))))


class GptNano(nn.Module):
    """examples/gpt_nano.ts: token + learned position embedding, 4 pre-norm blocks, LayerNorm, head."""

    def __init__(self, vocab, d=128, heads=4, layers=4, d_ff=512, max_len=128, p=0.1):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Embedding(max_len, d)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList(GptBlock(d, heads, d_ff, p) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.drop(self.tok_emb(ids) + self.pos_emb(torch.arange(t)))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)  # True hides a later key
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.ln_f(x))


def warmup_cosine(base, floor, total):
    """WarmupScheduler(CosineScheduler(base, floor, total - w), base, w), w = max(1, total // 5)."""
    w = max(1, total // 5)
    t = max(1, total - w)

    def lr(step):
        if step < w:
            return base * (step + 1) / w
        s = min(step - w, t)
        return floor + 0.5 * (base - floor) * (1 + math.cos(math.pi * s / t))

    return lr


def rows(split, seq_len):
    x = torch.tensor(split["input"], dtype=torch.long).view(split["n"], seq_len)
    y = torch.tensor(split["target"], dtype=torch.long).view(split["n"], seq_len)
    return x, y


def ce(model, logits_of, x, y):
    logits = logits_of(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["char-rnn", "gpt-nano"], required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    d = json.load(open(a.data))
    vocab, seq_len = len(d["vocab"]), d["seqLen"]
    xt, yt = rows(d["train"], seq_len)
    xv, yv = rows(d["validation"], seq_len)
    if a.model == "char-rnn":
        model = CharRnn(vocab)
        opt = torch.optim.RMSprop(model.parameters(), lr=2e-3, alpha=0.99, eps=1e-8)
        schedule = None
    else:
        model = GptNano(vocab)
        opt = torch.optim.Adam(model.parameters(), lr=3e-4)
        steps_per_epoch = xt.shape[0] // a.batch
        schedule = warmup_cosine(3e-4, 1e-5, a.epochs * steps_per_epoch)
    steps_per_epoch = xt.shape[0] // a.batch  # drop-last, as the trainer
    t0 = time.time()
    step, step_s, losses, evals = 0, [], [], []
    for epoch in range(a.epochs):
        model.train()
        perm = torch.randperm(xt.shape[0])
        total = 0.0
        for s in range(steps_per_epoch):
            idx = perm[s * a.batch:(s + 1) * a.batch]
            if schedule:
                for g in opt.param_groups:
                    g["lr"] = schedule(step)
            ts = time.time()
            loss = ce(model, model, xt[idx], yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step_s.append(time.time() - ts)
            total += loss.item()
            step += 1
        losses.append(total / max(1, steps_per_epoch))
        model.eval()
        with torch.no_grad():
            s, n = 0.0, xv.shape[0]
            for i in range(0, n, 64):
                s += ce(model, model, xv[i:i + 64], yv[i:i + 64]).item() * min(64, n - i)
            evals.append(s / n)
        print(f"epoch {epoch + 1}/{a.epochs} loss {losses[-1]:.4f} validation CE {evals[-1]:.4f}", flush=True)
    step_s.sort()
    print(json.dumps({
        "model": a.model, "torch": torch.__version__, "epochs": a.epochs, "batch": a.batch, "steps": step,
        "loss": losses[-1], "eval": evals[-1], "lossCurve": losses, "evalCurve": evals,
        "totalS": round(time.time() - t0, 3), "stepMs": round(1e3 * step_s[len(step_s) // 2], 3) if step_s else 0,
    }))


if __name__ == "__main__":
    main()
