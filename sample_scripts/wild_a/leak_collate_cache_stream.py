# expect: leak
# holder: collator._cache|_cache
# pattern: memoising collator caches padded batches in a dict keyed by (batch_id, max_len); batch ids come from an endless stream so every key is new
# step_ms: 30
"""Tiny transformer encoder trained on an endless stream of synthetic token documents.

PadCollator memoises its output with `self._cache.setdefault(key, ...)` so that
a batch re-requested after a skipped step (gradient overflow retry) does not have
to be padded again.  The key contains the global batch id, which never repeats
on a streaming source, so the cache grows by one padded batch (token ids and
padding mask, ~10 KB of tensor data) per step for the whole run.  Slow but unbounded.
Fix: drop the cache, or keep only the last batch (or an LRU with maxsize=2).
"""
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD = 0


def document_stream(vocab, min_len=12, max_len=40, seed=0):
    rnd = random.Random(seed)
    while True:
        n = rnd.randint(min_len, max_len)
        topic = rnd.randrange(4)
        base = 1 + topic * (vocab // 4)
        toks = [base + (rnd.randrange(vocab // 4 - 1)) for _ in range(n)]
        yield toks, topic


class PadCollator:
    def __init__(self, pad_id=PAD):
        self.pad_id = pad_id
        self._cache = {}

    def _pad(self, docs):
        max_len = max(len(d) for d in docs)
        tokens = torch.full((len(docs), max_len), self.pad_id, dtype=torch.long)
        for i, d in enumerate(docs):
            tokens[i, :len(d)] = torch.tensor(d)
        mask = tokens.eq(self.pad_id)
        return tokens, mask

    def __call__(self, batch_id, docs):
        key = (batch_id, max(len(d) for d in docs))
        return self._cache.setdefault(key, self._pad(docs))


class TinyEncoder(nn.Module):
    def __init__(self, vocab, d_model=64, nhead=4, layers=2, max_len=128, n_classes=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model, padding_idx=PAD)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=4 * d_model,
                                           dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.cls = nn.Linear(d_model, n_classes)

    def forward(self, tokens, mask):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        h = self.tok(tokens) + self.pos(positions)
        h = self.encoder(h, src_key_padding_mask=mask)
        keep = (~mask).unsqueeze(-1).float()
        pooled = (h * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        return self.cls(pooled)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    vocab = 2000
    batch_size = 24
    total_steps = 650
    warmup = 50

    model = TinyEncoder(vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / total_steps)))
    collate = PadCollator()
    stream = document_stream(vocab)

    t0 = time.time()
    last = t0
    ema = None
    for batch_id in range(total_steps):
        docs, labels = zip(*(next(stream) for _ in range(batch_size)))
        tokens, mask = collate(batch_id, docs)
        y = torch.tensor(labels)

        logits = model(tokens, mask)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()

        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        if time.time() - last > 4.0:
            print(f"batch {batch_id:4d}  loss {ema:.4f}  lr {sched.get_last_lr()[0]:.2e}"
                  f"  ({time.time() - t0:.1f}s)", flush=True)
            last = time.time()
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
