# expect: leak
# holder: counter.records|self.records
# pattern: a home-made FLOP counter is a torch.overrides.TorchFunctionMode that, on every sampled step (`with counter:` every --flops-every steps), appends (func, args, kwargs) of each linear/matmul call to self.records so that the FLOPs can be computed lazily from the shapes in summary(); the records are never reset, so the stored args keep every sampled step's activations (inputs of every linear layer, q/k/v and attention maps) alive (encoder-only transformer on a sorting task, torch.optim.AdamW)
# step_ms: 30
"""Tiny transformer encoder that learns to sort digit sequences.

Each position must predict the token that would sit there after sorting the
input sequence, which needs content-based attention over the whole sequence.
To report model FLOPs utilisation we count the FLOPs of the matmul-like ops
with a small TorchFunctionMode; it is only switched on every few steps since
it adds Python overhead to every op.
"""
import argparse
import math
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode


class FlopCounter(TorchFunctionMode):
    """Counts FLOPs of linear / matmul calls made while the mode is active."""

    TRACKED = {F.linear, torch.matmul, torch.bmm, torch.Tensor.matmul, torch.Tensor.__matmul__}

    def __init__(self):
        super().__init__()
        self.records = []
        self.n_windows = 0

    def __enter__(self):
        self.n_windows += 1
        return super().__enter__()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.TRACKED:
            # shapes are resolved lazily in summary() to keep the hot path cheap
            self.records.append((func, args, kwargs))
        return func(*args, **kwargs)

    @staticmethod
    def _flops(func, args):
        a, b = args[0], args[1]
        if func is F.linear:
            # x: (..., in), w: (out, in)
            return 2 * a.numel() * b.shape[0]
        # batched matmul: (..., n, k) @ (..., k, m)
        return 2 * a.numel() * b.shape[-1]

    def summary(self):
        total = sum(self._flops(f, a) for f, a, _ in self.records)
        return total / max(self.n_windows, 1)


class Block(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)

    def forward(self, x):
        B, T, D = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D // self.heads)
        att = att.softmax(-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, D)
        x = x + self.proj(y)
        x = x + self.ff2(F.gelu(self.ff1(self.ln2(x))))
        return x


class SortNet(nn.Module):
    def __init__(self, vocab, seq_len, d=128, heads=4, ff=512, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(seq_len, d) * 0.02)
        self.blocks = nn.ModuleList(Block(d, heads, ff) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos[: idx.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def make_batch(gen, batch, seq_len, vocab):
    x = torch.randint(0, vocab, (batch, seq_len), generator=gen)
    y, _ = torch.sort(x, dim=1)
    return x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=580)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--flops-every", type=int, default=30)
    ap.add_argument("--log-every", type=int, default=145)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)

    model = SortNet(args.vocab, args.seq_len)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps, pct_start=0.1)
    counter = FlopCounter()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"params={n_params / 1e6:.2f}M  steps={args.steps}")

    t0 = time.time()
    run_loss = run_acc = 0.0
    for step in range(1, args.steps + 1):
        x, y = make_batch(gen, args.batch, args.seq_len, args.vocab)
        if step % args.flops_every == 0:
            with counter:
                logits = model(x)
        else:
            logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()

        run_loss = 0.98 * run_loss + 0.02 * loss.item()
        run_acc = 0.98 * run_acc + 0.02 * (logits.argmax(-1) == y).float().mean().item()
        if step % args.log_every == 0:
            elapsed = time.time() - t0
            fwd_flops = counter.summary()
            # fwd + bwd ~ 3x forward
            gflops = 3 * fwd_flops * step / elapsed / 1e9
            print(
                f"step {step}  loss={run_loss:.3f}  tok_acc={run_acc:.3f}  "
                f"fwd={fwd_flops / 1e6:.1f} MFLOP/step  ~{gflops:.2f} GFLOP/s  ({elapsed:.1f}s)"
            )
    print("done")


if __name__ == "__main__":
    main()
