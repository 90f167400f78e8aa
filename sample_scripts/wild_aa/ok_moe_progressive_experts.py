# expect: no_leak
# pattern: small mixture-of-experts language model (2 blocks of causal attention + top-2 routed MoE FFN with 16 experts per layer and a capacity limit, Switch-style load-balancing loss, torch.optim.Adam, ~100 ms steps, 16 s budget, code in main() + MoEFFN/MoEBlock/TinyMoELM classes) trained on a synthetic multi-domain token corpus with progressive expert activation: training starts with 2 routable experts per layer and 2 more are unmasked every 6 steps until all 16 are live; zero_grad(set_to_none=True) means an expert that has never received a token has .grad None and Adam creates no exp_avg/exp_avg_sq for it, so optimizer state (and the per-step gradient buffers) step up 7 times during the first ~25-35% of the run; once every expert is live the state is complete and memory is flat - it only looks like a staircase leak
# step_ms: 100
"""Tiny MoE LM with progressive expert activation ("expert warm-up").

Starting with few experts lets the router form stable clusters before the
capacity is spread out; the remaining experts are unmasked on a schedule.
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

VOCAB = 512
D = 128
D_FF = 1024
N_EXPERTS = 16
TOP_K = 2
SEQ = 64
BATCH = 16
RUN_SECONDS = 16.0
UNLOCK_EVERY = 6
CAPACITY_FACTOR = 1.25


class SyntheticCorpus:
    """Four 'domains', each a different sparse Markov chain over a part of the vocabulary."""

    def __init__(self, rng, n_domains=4):
        self.rng = rng
        self.tables = []
        for d in range(n_domains):
            lo = d * (VOCAB // n_domains)
            trans = np.zeros((VOCAB, 6), dtype=np.int64)
            for t in range(VOCAB):
                trans[t] = rng.integers(lo, lo + VOCAB // n_domains, 6)
            self.tables.append(trans)

    def batch(self, b):
        out = np.empty((b, SEQ + 1), dtype=np.int64)
        for i in range(b):
            table = self.tables[self.rng.integers(len(self.tables))]
            tok = self.rng.integers(VOCAB)
            choices = self.rng.integers(0, 6, SEQ + 1)
            for t in range(SEQ + 1):
                out[i, t] = tok
                tok = table[tok, choices[t]]
        x = torch.from_numpy(out)
        return x[:, :-1], x[:, 1:]


class Expert(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(D, D_FF)
        self.w2 = nn.Linear(D_FF, D)

    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))


class MoEFFN(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(D, N_EXPERTS, bias=False)
        self.experts = nn.ModuleList(Expert() for _ in range(N_EXPERTS))
        self.n_active = N_EXPERTS
        self.last_aux = None
        self.last_load = None

    def forward(self, x):
        b, t, d = x.shape
        flat = x.reshape(-1, d)
        n_tok = flat.shape[0]
        logits = self.router(flat)
        if self.n_active < N_EXPERTS:
            logits = logits.masked_fill(torch.arange(N_EXPERTS) >= self.n_active, float("-inf"))
        probs = logits.softmax(-1)
        gate, idx = probs.topk(TOP_K, dim=-1)
        gate = gate / gate.sum(-1, keepdim=True)
        capacity = int(math.ceil(CAPACITY_FACTOR * n_tok * TOP_K / self.n_active))
        out = torch.zeros_like(flat)
        load = torch.zeros(N_EXPERTS)
        for e in range(self.n_active):
            tok_ids, slot = (idx == e).nonzero(as_tuple=True)
            if tok_ids.numel() == 0:
                continue
            tok_ids, slot = tok_ids[:capacity], slot[:capacity]
            y = self.experts[e](flat[tok_ids])
            out.index_add_(0, tok_ids, y * gate[tok_ids, slot, None])
            load[e] = tok_ids.numel()
        frac_tokens = F.one_hot(idx[:, 0], N_EXPERTS).float().mean(0)
        self.last_aux = N_EXPERTS * (frac_tokens * probs.mean(0)).sum()
        self.last_load = load / max(1.0, float(load.sum()))
        return out.reshape(b, t, d)


class MoEBlock(nn.Module):
    def __init__(self, n_heads=4):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.moe = MoEFFN()
        self.n_heads = n_heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.n_heads, d // self.n_heads).unbind(2)
        att = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                             is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.moe(self.ln2(x))


class TinyMoELM(nn.Module):
    def __init__(self, n_layers=2):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.randn(SEQ, D) * 0.02)
        self.blocks = nn.ModuleList(MoEBlock() for _ in range(n_layers))
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB, bias=False)

    def moe_layers(self):
        return [blk.moe for blk in self.blocks]

    def forward(self, x):
        h = self.emb(x) + self.pos[: x.shape[1]]
        for blk in self.blocks:
            h = blk(h)
        return self.head(self.ln(h))


def main():
    rng = np.random.default_rng(4)
    torch.manual_seed(4)
    corpus = SyntheticCorpus(rng)
    model = TinyMoELM()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n_active = 2
    for m in model.moe_layers():
        m.n_active = n_active
    t0 = time.perf_counter()
    last = t0
    step = 0
    ema = None
    while time.perf_counter() - t0 < RUN_SECONDS:
        step += 1
        if step % UNLOCK_EVERY == 0 and n_active < N_EXPERTS:
            n_active += 2
            for m in model.moe_layers():
                m.n_active = n_active
        x, y = corpus.batch(BATCH)
        logits = model(x)
        ce = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        aux = sum(m.last_aux for m in model.moe_layers())
        loss = ce + 0.01 * aux
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        ema = ce.item() if ema is None else 0.95 * ema + 0.05 * ce.item()
        if time.perf_counter() - last > 2.0:
            load = model.moe_layers()[0].last_load[:n_active]
            n_state = sum(1 for p in model.parameters() if p in opt.state)
            print(f"step {step:4d}  ce {ema:.3f}  active experts {n_active:2d}  "
                  f"max/min load {float(load.max()):.3f}/{float(load.min()):.3f}  params with Adam state {n_state}")
            last = time.perf_counter()
    print(f"done: {step} steps, final ce {ema:.3f}")


if __name__ == "__main__":
    main()
