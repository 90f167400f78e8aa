# expect: no_leak
# pattern: transformer on length-bucketed batches with random sequence lengths; activation sizes change every step (allocator wobble) but everything is freed each step
# step_ms: 40
"""Sequence classification (is the bracket string balanced?) with a small
Transformer encoder, trained on batches of random length.

Batches are drawn from random length buckets between 16 and 160 tokens, and
padded only to the longest sequence in the batch, so activation memory
changes from step to step by a factor of up to ~10 (attention is quadratic
in length). RSS goes up and down with the batch shape and the allocator may
hold on to freed blocks for a while, but nothing is kept across steps: only
``loss.item()`` floats are accumulated, and the running statistics are
reset at every log line.
"""

import argparse
import math
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, OPEN, CLOSE, OTHER = 0, 1, 2, 3
VOCAB = 4


def bracket_sequence(rng, length):
    """Half the time a balanced sequence, otherwise a perturbed one."""
    seq, depth = [], 0
    for i in range(length):
        remaining = length - i
        if depth > 0 and (depth >= remaining or rng.random() < 0.45):
            seq.append(CLOSE)
            depth -= 1
        elif rng.random() < 0.15:
            seq.append(OTHER)
        else:
            seq.append(OPEN)
            depth += 1
    if rng.random() < 0.5:
        j = rng.randrange(length)
        seq[j] = OPEN if seq[j] == CLOSE else CLOSE if seq[j] == OPEN else seq[j]
    d, ok = 0, True
    for t in seq:
        d += (t == OPEN) - (t == CLOSE)
        ok &= d >= 0
    return seq, int(ok and d == 0)


def make_batch(rng, batch, lengths):
    max_len = rng.choice(lengths)
    seqs, labels = zip(
        *(bracket_sequence(rng, rng.randint(max(4, max_len // 2), max_len)) for _ in range(batch))
    )
    x = torch.full((batch, max_len), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        x[i, : len(s)] = torch.tensor(s)
    return x, torch.tensor(labels, dtype=torch.float32)


class PositionalEncoding(nn.Module):
    def __init__(self, d, max_len=512):
        super().__init__()
        pos = torch.arange(max_len)[:, None]
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(max_len, d)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.shape[1]]


class BracketClassifier(nn.Module):
    def __init__(self, d=64, heads=4, layers=2):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d, padding_idx=PAD)
        self.pos = PositionalEncoding(d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, 1)

    def forward(self, x):
        pad = x == PAD
        h = self.encoder(self.pos(self.emb(x)), src_key_padding_mask=pad)
        h = h.masked_fill(pad[..., None], 0).sum(1) / (~pad).sum(1, keepdim=True)
        return self.head(h).squeeze(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=350)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    rng = random.Random(args.seed)

    model = BracketClassifier()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    lengths = [16, 24, 32, 48, 64, 96, 128, 160]

    t0 = time.time()
    run_loss, run_acc, run_n, run_tokens = 0.0, 0.0, 0, 0
    for step in range(1, args.steps + 1):
        x, y = make_batch(rng, args.batch, lengths)
        logits = model(x)
        loss = F.binary_cross_entropy_with_logits(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

        run_loss += loss.item()
        run_acc += ((logits > 0).float() == y).float().mean().item()
        run_n += 1
        run_tokens += x.numel()
        if step % 40 == 0:
            ms = (time.time() - t0) / step * 1e3
            print(
                f"step {step:4d}  loss {run_loss / run_n:.3f}  acc {run_acc / run_n:.3f}  "
                f"{run_tokens / run_n:.0f} tok/batch  {ms:.1f} ms/step",
                flush=True,
            )
            run_loss, run_acc, run_n, run_tokens = 0.0, 0.0, 0, 0


if __name__ == "__main__":
    main()
