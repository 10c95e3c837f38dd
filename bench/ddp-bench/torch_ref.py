"""PyTorch reference for ddp-bench (bench/ddp-bench/run.ts runs it): char-rnn, gpt-nano, resnet20.

Trains the model exactly as src/zoo/models.ts and src/zoo/recipes.ts define it (same layers,
parameter names, default inits, optimizer, schedule and batch) on the samples run.ts exported
(the same subset of the Brown Corpus and vocabulary, or the same standardized MNIST images),
for the same epochs and steps, and prints the eval per epoch (validation cross-entropy, or
test accuracy for resnet20). The last stdout line is JSON.

    /usr/bin/python3 bench/ddp-bench/torch_ref.py --model gpt-nano --data seq.json --epochs 2 --batch 64

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


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with BatchNorm and a residual; a 1x1 projection where the shape changes."""

    def __init__(self, cin, c, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, c, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.shortcut = None
        if stride != 1 or cin != c:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, c, 1, stride=stride, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNet20(nn.Module):
    """src/zoo/resnet.ts's twin: 1 input channel; stem_padding 3 puts 28x28 MNIST on the 32x32 grid."""

    def __init__(self, stem_padding=1):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=stem_padding, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        stage = lambda a, b, s: nn.Sequential(BasicBlock(a, b, s), BasicBlock(b, b, 1), BasicBlock(b, b, 1))
        self.layer1, self.layer2, self.layer3 = stage(16, 16, 1), stage(16, 32, 2), stage(32, 64, 2)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        h = self.layer3(self.layer2(self.layer1(F.relu(self.bn1(self.conv1(x))))))
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


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
    """src/zoo/gpt_nano.ts: token + learned position embedding, 4 pre-norm blocks, LayerNorm, head."""

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


def rows(split, d):
    """One split as tensors: sequences (ids and next ids, [n, seqLen]) or images ([n, 1, 28, 28], labels [n])."""
    n = split["n"]
    if "seqLen" in d:
        shape = lambda v: torch.tensor(v, dtype=torch.long).view(n, d["seqLen"])
        return shape(split["input"]), shape(split["target"])
    x = torch.tensor(split["input"], dtype=torch.float32).view(n, *d["imageShape"])
    return x, torch.tensor(split["target"], dtype=torch.long)


def ce(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def accuracy(model, x, y):
    return (model(x).argmax(1) == y).sum().item() / x.shape[0]


def multistep(base, total):
    """MultiStepLR(base, [total // 2, total * 3 // 4], 0.1), as src/zoo/recipes.ts's resnet20."""
    return lambda step: base * 0.1 ** sum(step >= m for m in (total // 2, total * 3 // 4))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["char-rnn", "gpt-nano", "resnet20"], required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    d = json.load(open(a.data))
    xt, yt = rows(d["train"], d)
    xv, yv = rows(d["validation"], d)
    total_steps = a.epochs * (xt.shape[0] // a.batch)
    evaluate = lambda: sum(ce(model, xv[i:i + 64], yv[i:i + 64]).item() * min(64, xv.shape[0] - i)
                           for i in range(0, xv.shape[0], 64)) / xv.shape[0]
    eval_name = "validation CE"
    if a.model == "char-rnn":
        model = CharRnn(len(d["vocab"]))
        opt = torch.optim.RMSprop(model.parameters(), lr=2e-3, alpha=0.99, eps=1e-8)
        schedule = None
    elif a.model == "gpt-nano":
        model = GptNano(len(d["vocab"]))
        opt = torch.optim.Adam(model.parameters(), lr=3e-4)
        schedule = warmup_cosine(3e-4, 1e-5, total_steps)
    else:
        model = ResNet20(stem_padding=3)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        schedule = multistep(0.1, total_steps)
        evaluate = lambda: sum(accuracy(model, xv[i:i + 500], yv[i:i + 500]) * min(500, xv.shape[0] - i)
                               for i in range(0, xv.shape[0], 500)) / xv.shape[0]
        eval_name = "test accuracy"
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
            loss = ce(model, xt[idx], yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step_s.append(time.time() - ts)
            total += loss.item()
            step += 1
        losses.append(total / max(1, steps_per_epoch))
        model.eval()
        with torch.no_grad():
            evals.append(evaluate())
        print(f"epoch {epoch + 1}/{a.epochs} loss {losses[-1]:.4f} {eval_name} {evals[-1]:.4f}", flush=True)
    step_s.sort()
    print(json.dumps({
        "model": a.model, "torch": torch.__version__, "epochs": a.epochs, "batch": a.batch, "steps": step,
        "loss": losses[-1], "eval": evals[-1], "lossCurve": losses, "evalCurve": evals,
        "totalS": round(time.time() - t0, 3), "stepMs": round(1e3 * step_s[len(step_s) // 2], 3) if step_s else 0,
    }))


if __name__ == "__main__":
    main()
