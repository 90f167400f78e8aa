# expect: no_leak
# holder:
# pattern: small causal transformer LM on synthetic motif sequences (torch.optim.SGD with momentum + warm-up/cosine LR, ~90 ms steps, code in main() + a Bf16ActivationPacker class + TinyLM) trained with activation compression through torch.autograd.graph.saved_tensors_hooks; it looks like the stash-every-saved-tensor pattern (the packer object is long-lived, pack() receives every tensor autograd saves and the packer keeps per-step lists), but pack() returns the bfloat16 copy itself so it is owned by the autograd graph and freed by backward(), parameters are passed through untouched, the packer's own per-step list only holds (shape, bytes) tuples and is replaced in begin_step(), and the byte statistics go to a deque(maxlen=200), so memory is flat after the first steps
# step_ms: 90
"""Train a tiny causal transformer LM with bf16-compressed activations.

Activations saved for backward are stored in bfloat16 (pack) and restored to
float32 on use (unpack) with torch.autograd.graph.saved_tensors_hooks, which
roughly halves activation memory for long contexts at a small accuracy cost.
Parameters that autograd saves are left alone.  The packer also reports how
many bytes were saved per step.

The corpus is synthetic: sequences built from a bank of motifs with noisy
copies and long-range repeats, so a model with attention can beat a bigram
baseline by a wide margin.

Usage:  python lm_bf16_activation_packing.py [--steps 220] [--ctx 128]
"""
import argparse
import collections
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 96


class Bf16ActivationPacker:
    def __init__(self, min_numel=2048):
        self.min_numel = min_numel
        self.step_log = []
        self.history = collections.deque(maxlen=200)   # (raw bytes, packed bytes) per step

    def begin_step(self):
        if self.step_log:
            raw = sum(r for _, r, _ in self.step_log)
            packed = sum(p for _, _, p in self.step_log)
            self.history.append((raw, packed))
        self.step_log = []

    def pack(self, t):
        if t.dtype != torch.float32 or t.numel() < self.min_numel or (t.requires_grad and t.grad_fn is None):
            return t                                   # parameters / small tensors: keep as is
        half = t.to(torch.bfloat16)
        self.step_log.append((tuple(t.shape), t.numel() * 4, t.numel() * 2))
        return (half, t.dtype)

    def unpack(self, packed):
        if isinstance(packed, tuple):
            half, dtype = packed
            return half.to(dtype)
        return packed

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, D // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D // self.heads)
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, d=96, heads=4, layers=3, ctx=128):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.zeros(1, ctx, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.out = nn.Linear(d, VOCAB)

    def forward(self, idx):
        x = self.tok(idx) + self.pos[:, :idx.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.out(self.ln(x))


def motif_batch(gen, motifs, batch, ctx):
    seqs = torch.empty(batch, ctx + 1, dtype=torch.long)
    for b in range(batch):
        out = []
        while len(out) < ctx + 1:
            m = motifs[torch.randint(len(motifs), (1,), generator=gen).item()]
            if out and torch.rand(1, generator=gen).item() < 0.3:       # long-range repeat
                start = torch.randint(max(1, len(out) - 8), (1,), generator=gen).item()
                m = torch.tensor(out[start:start + 8])
            m = m.clone()
            noise = torch.rand(len(m), generator=gen) < 0.05
            m[noise] = torch.randint(VOCAB, (int(noise.sum()),), generator=gen)
            out.extend(m.tolist())
        seqs[b] = torch.tensor(out[:ctx + 1])
    return seqs[:, :-1], seqs[:, 1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=220)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.15)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    motifs = [torch.randint(VOCAB, (int(torch.randint(4, 12, (1,), generator=gen)),), generator=gen)
              for _ in range(60)]
    model = TinyLM(ctx=args.ctx)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    warm = max(1, args.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps)))
    packer = Bf16ActivationPacker()

    t0 = time.time()
    ema = None
    for step in range(args.steps):
        x, y = motif_batch(gen, motifs, args.batch, args.ctx)
        packer.begin_step()
        with packer.hooks():
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        if step % 20 == 0:
            raw, packed = packer.history[-1] if packer.history else (0, 0)
            print(f"[{time.time() - t0:6.1f}s] step {step:4d}  loss={ema:.3f}  "
                  f"saved activations {raw / 2**20:6.1f} MB -> {packed / 2**20:6.1f} MB", flush=True)
    print(f"done in {time.time() - t0:.1f}s, final loss {ema:.3f}")


if __name__ == "__main__":
    main()
