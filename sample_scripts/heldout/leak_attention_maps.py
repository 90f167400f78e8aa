# expect: leak
# holder: attn_maps|AttentionRecorder|recorder
# pattern: forward hook keeps a detached attention map per layer per step (slow steps)
# step_ms: 300
"""Character-level Transformer language model on a synthetic grammar, with an
"attention recorder" forward hook for the visualisation notebook.

``AttentionRecorder`` registers a forward hook on every attention layer and
keeps ``attn[0].detach().clone()`` (the first sequence of the batch, all
heads) in ``self.attn_maps`` at every training step. The maps are detached,
so no graphs, but 4 layers x 4 heads x 96 x 96 floats is 576 KiB per step,
forever. With slow steps the growth is small per minute, and easy to miss
under the activations' saw.

Fix: record only every N steps into a ``deque(maxlen=...)``, or remove the
hook when not visualising.
"""

import argparse
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ALPHABET = "abcdefghijklmnopqrstuvwxyz .,"
STOI = {c: i for i, c in enumerate(ALPHABET)}


def grammar_text(rng, n_chars):
    words = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "park", "and", "then"]
    out, length = [], 0
    while length < n_chars:
        sent = [rng.choice(words) for _ in range(rng.randint(3, 9))]
        sent[-1] += rng.choice([".", ","])
        out.extend(sent)
        length += sum(len(w) + 1 for w in sent)
    return " ".join(out)[:n_chars]


class SelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.dk = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dk).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.dk)
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        self.last_attn = att
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = SelfAttention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class CharLM(nn.Module):
    def __init__(self, vocab, d=128, heads=4, layers=4, ctx=96):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(ctx, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.out = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.emb(idx) + self.pos[: idx.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.out(self.ln(x))


class AttentionRecorder:
    def __init__(self, model):
        self.attn_maps = []
        self.handles = [
            m.register_forward_hook(self._hook)
            for m in model.modules()
            if isinstance(m, SelfAttention)
        ]

    def _hook(self, module, inputs, output):
        if module.training:
            self.attn_maps.append(module.last_attn[0].detach().clone())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=24)
    ap.add_argument("--ctx", type=int, default=96)
    ap.add_argument("--seed", type=int, default=4)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    data = torch.tensor([STOI[c] for c in grammar_text(rng, 200_000)])
    model = CharLM(len(ALPHABET), ctx=args.ctx)
    recorder = AttentionRecorder(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95))
    t0 = time.time()
    for step in range(1, args.steps + 1):
        ix = torch.randint(0, len(data) - args.ctx - 1, (args.batch,))
        x = torch.stack([data[i : i + args.ctx] for i in ix])
        y = torch.stack([data[i + 1 : i + args.ctx + 1] for i in ix])
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 10 == 0:
            print(
                f"step {step:4d} | loss {loss.item():.3f} | "
                f"{(time.time() - t0) / step * 1e3:.0f} ms/step | maps {len(recorder.attn_maps)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
