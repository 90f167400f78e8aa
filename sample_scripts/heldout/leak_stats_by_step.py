# expect: leak
# holder: stats
# pattern: dict keyed by step holding loss tensors (graphs) and grad-norm tensors
# step_ms: 18
"""Tiny Transformer encoder that learns to sort-detect digit sequences
(label: is the sequence sorted, reversed, or neither), AdamW + warmup/cosine.

``stats[step] = {...}`` collects per-step numbers for a CSV written at the end.
The values are tensors: ``loss`` (with its autograd graph: every node of the
step's forward pass stays allocated) and the grad-norm tensor that
``clip_grad_norm_`` returns. The dict has one entry per step and is only
written out after the last step.

Fix: ``stats[step] = {"loss": loss.item(), "grad_norm": float(gn), ...}``,
or write rows to the CSV as you go.
"""

import argparse
import csv
import io
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class SeqClassifier(nn.Module):
    def __init__(self, vocab=10, d=64, heads=4, layers=2, max_len=32, n_cls=3):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, max_len, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.cls = nn.Linear(d, n_cls)

    def forward(self, x):
        h = self.tok(x) + self.pos[:, : x.shape[1]]
        h = self.enc(h)
        return self.cls(h.mean(1))


def make_batch(batch, length, gen):
    x = torch.randint(0, 10, (batch, length), generator=gen)
    kind = torch.randint(0, 3, (batch,), generator=gen)
    srt = x.sort(dim=1).values
    x = torch.where((kind == 0)[:, None], srt, x)
    x = torch.where((kind == 1)[:, None], srt.flip(1), x)
    return x, kind


def lr_lambda(warmup, total):
    def f(step):
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))

    return f


def dump_csv(stats):
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["step", "loss", "grad_norm", "lr"])
    for step, s in stats.items():
        w.writerow([step, f"{s['loss'].item():.5f}", f"{s['grad_norm'].item():.4f}", s["lr"]])
    return buf.getvalue()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=24)
    ap.add_argument("--lr", type=float, default=1e-3)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(2024)
    gen = torch.Generator().manual_seed(2024)
    model = SeqClassifier(max_len=args.seq_len)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(100, args.steps))

    stats = {}
    tic = time.time()
    for step in range(args.steps):
        x, y = make_batch(args.batch, args.seq_len, gen)
        logits = model(x)
        loss = F.cross_entropy(logits, y, label_smoothing=0.05)
        opt.zero_grad()
        loss.backward()
        gn = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        stats[step] = {"loss": loss, "grad_norm": gn, "lr": sched.get_last_lr()[0]}
        if step % 100 == 0:
            acc = (logits.argmax(-1) == y).float().mean().item()
            print(f"{step:5d} loss={loss.item():.3f} acc={acc:.2f} ({time.time() - tic:.0f}s)")

    table = dump_csv(stats)
    print("wrote", len(table.splitlines()) - 1, "rows")


if __name__ == "__main__":
    main()
