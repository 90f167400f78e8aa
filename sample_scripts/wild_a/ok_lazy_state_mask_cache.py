# expect: no_leak
# pattern: warm-up only: AdamW state is created lazily on the first step and a causal-mask cache keyed by bucketed sequence length fills to 4 entries, then memory is flat
# step_ms: 15
"""Tiny causal transformer LM (nn.TransformerEncoderLayer + causal mask) with a Trainer class.

Memory rises during the first steps: AdamW allocates exp_avg/exp_avg_sq lazily,
and Trainer._mask() caches one causal mask per sequence length.  Sequences are
bucketed to four lengths, so the cache stops at four entries; loss values are
logged as Python floats.  After warm-up nothing accumulates.
"""
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

BUCKETS = (16, 24, 32, 48)


class TinyLM(nn.Module):
    def __init__(self, vocab, d_model=64, nhead=4, layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(max_len, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead, 4 * d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab, bias=False)
        self.out.weight = self.tok.weight

    def forward(self, idx, mask):
        h = self.tok(idx) + self.pos[: idx.shape[1]]
        h = self.blocks(h, mask=mask, is_causal=True)
        return self.out(self.ln(h))


class Trainer:
    def __init__(self, vocab=512, batch_size=24, lr=3e-3, seed=0):
        torch.manual_seed(seed)
        self.rng = random.Random(seed)
        self.vocab = vocab
        self.batch_size = batch_size
        self.model = TinyLM(vocab)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr, betas=(0.9, 0.95))
        self._masks = {}
        self.history = []

    def _mask(self, n):
        if n not in self._masks:
            self._masks[n] = nn.Transformer.generate_square_subsequent_mask(n)
        return self._masks[n]

    def _batch(self):
        n = self.rng.choice(BUCKETS)
        # arithmetic sequences mod vocab: learnable but not trivial
        start = torch.randint(0, self.vocab, (self.batch_size, 1))
        stride = torch.randint(1, 7, (self.batch_size, 1))
        seq = (start + stride * torch.arange(n + 1)) % self.vocab
        return seq[:, :-1], seq[:, 1:]

    def step(self):
        x, y = self._batch()
        logits = self.model(x, self._mask(x.shape[1]))
        loss = F.cross_entropy(logits.reshape(-1, self.vocab), y.reshape(-1))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        return loss.item()

    def train(self, steps):
        t0 = time.time()
        for i in range(1, steps + 1):
            self.history.append(self.step())
            if i % 150 == 0:
                avg = sum(self.history[-150:]) / 150
                print(f"step {i}  loss {avg:.3f}  ppl {math.exp(avg):.1f}  masks cached {len(self._masks)}"
                      f"  ({time.time() - t0:.1f}s)", flush=True)


def main():
    torch.set_num_threads(1)
    Trainer().train(steps=900)


if __name__ == "__main__":
    main()
