# expect: no_leak
# pattern: minGPT-style LM trained with sequence-length warm-up: the context length ramps linearly from 32 to 256 tokens over the first 45% of the steps and then stays fixed, so per-step activation memory (T^2 attention maps) and the allocator's high-water mark rise gradually, then hold; everything is freed each step
# step_ms: 65
"""Character-level GPT on a synthetic Markov "language" with
sequence-length warm-up (short contexts first, as in curriculum / SLW
training of large LMs).  AdamW with cosine decay, grad clipping.
"""
import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


@dataclass
class Config:
    vocab: int = 96
    d_model: int = 96
    n_heads: int = 4
    n_layers: int = 2
    max_len: int = 256
    min_len: int = 32
    batch: int = 4
    steps: int = 240
    warmup_frac: float = 0.45
    lr: float = 1e-3


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.n_heads = cfg.n_heads
        self.register_buffer("mask", torch.tril(torch.ones(cfg.max_len, cfg.max_len)).bool())

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
        att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def markov_corpus(n_tokens, vocab, rng):
    trans = rng.dirichlet(np.full(vocab, 0.05), size=vocab)
    cum = trans.cumsum(-1)
    out = np.empty(n_tokens, np.int64)
    out[0] = rng.integers(0, vocab)
    u = rng.random(n_tokens)
    for i in range(1, n_tokens):
        out[i] = min(np.searchsorted(cum[out[i - 1]], u[i]), vocab - 1)
    return out


def seq_len_at(step, cfg):
    ramp = int(cfg.steps * cfg.warmup_frac)
    if step >= ramp:
        return cfg.max_len
    frac = step / ramp
    return max(cfg.min_len, int(cfg.min_len + frac * (cfg.max_len - cfg.min_len)) // 8 * 8)


def main():
    cfg = Config()
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    data = torch.from_numpy(markov_corpus(200_000, cfg.vocab, rng))
    model = GPT(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 20) * 0.5 * (1 + math.cos(math.pi * s / cfg.steps)))
    t0 = time.time()
    tokens_seen = 0
    ema = None
    for step in range(cfg.steps):
        T = seq_len_at(step, cfg)
        starts = torch.from_numpy(rng.integers(0, len(data) - T - 1, cfg.batch))
        idx = torch.stack([data[s:s + T + 1] for s in starts.tolist()])
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab), idx[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        tokens_seen += cfg.batch * T
        ema = loss.item() if ema is None else 0.9 * ema + 0.1 * loss.item()
        if (step + 1) % 24 == 0:
            print(f"step {step + 1:4d}  seq_len {T:3d}  loss {ema:.3f}  tokens {tokens_seen:7d}  "
                  f"{time.time() - t0:.1f}s", flush=True)
    print(f"done: {cfg.steps} steps, {tokens_seen} tokens, final loss {ema:.3f}, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
