# expect: leak
# holder: _mask_cache|mask_cache
# pattern: transformer LM memoizes its combined causal+padding attention mask in a dict keyed by (batch_size, seq_len, tuple(lengths)); with variable-length batches the key almost never repeats
# step_ms: 35
"""Tiny decoder-only transformer LM on synthetic token streams, bf16 autocast on CPU.

Batches have variable-length sequences padded to the batch max.  To avoid
rebuilding the attention mask every step the model memoizes it in
``self._mask_cache`` keyed by ``(batch_size, seq_len, lengths)``.  The
lengths tuple makes the key unique for practically every batch, so the
"cache" never hits and each entry keeps a ``(B*heads, T, T)`` float mask plus
position ids.  The dict grows by one entry per training step.

Fix: cache only the causal part keyed by ``seq_len`` (a handful of values),
and build the padding part per batch via ``key_padding_mask``; or use an LRU
with a small ``maxsize``.
"""
import math
import random
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(0)
random.seed(0)

VOCAB = 256
PAD = 0


class SyntheticText(Dataset):
    """Sequences from a fixed random bigram model, lengths 16..48."""

    trans = torch.softmax(torch.randn(VOCAB, VOCAB, generator=torch.Generator().manual_seed(123)) * 3, dim=-1)
    trans[:, PAD] = 0

    def __init__(self, n, seed=0, min_len=16, max_len=48):
        g = torch.Generator().manual_seed(seed)
        rng = random.Random(seed)
        tokens = torch.empty(n, max_len, dtype=torch.long)
        tokens[:, 0] = torch.randint(1, VOCAB, (n,), generator=g)
        for t in range(1, max_len):
            tokens[:, t] = torch.multinomial(self.trans[tokens[:, t - 1]], 1, generator=g).squeeze(1)
        self.samples = [tokens[i, : rng.randint(min_len, max_len)].clone() for i in range(n)]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        return self.samples[i]


def pad_collate(batch):
    lengths = [len(s) for s in batch]
    T = max(lengths)
    out = torch.full((len(batch), T), PAD, dtype=torch.long)
    for i, s in enumerate(batch):
        out[i, : len(s)] = s
    return out, torch.tensor(lengths)


class TinyLM(nn.Module):
    def __init__(self, d_model=128, nhead=2, nlayers=2, max_len=128):
        super().__init__()
        self.nhead = nhead
        self.tok = nn.Embedding(VOCAB, d_model, padding_idx=PAD)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=4 * d_model,
                                           dropout=0.1, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.lm_head = nn.Linear(d_model, VOCAB)
        self._mask_cache = {}

    def get_masks(self, lengths, T):
        B = len(lengths)
        key = (B, T, tuple(lengths.tolist()))
        if key not in self._mask_cache:
            causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
            pad = torch.arange(T)[None, :] >= lengths[:, None]              # B,T
            mask = causal[None].expand(B, T, T).clone()
            mask = mask.masked_fill(pad[:, None, :], float("-inf"))
            mask.diagonal(dim1=1, dim2=2).zero_()                           # keep at least self
            mask = mask.repeat_interleave(self.nhead, dim=0)                # B*H,T,T
            positions = torch.arange(T).unsqueeze(0).expand(B, T).contiguous()
            self._mask_cache[key] = (mask, positions)
        return self._mask_cache[key]

    def forward(self, x, lengths):
        B, T = x.shape
        mask, positions = self.get_masks(lengths, T)
        h = self.tok(x) + self.pos(positions)
        h = self.encoder(h, mask=mask)
        return self.lm_head(h)


def train(dataloader, model, loss_fn, optimizer, scheduler):
    model.train()
    total = 0.0
    for x, lengths in dataloader:
        inp, tgt = x[:, :-1], x[:, 1:]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(inp, lengths - 1)
            loss = loss_fn(logits.float().reshape(-1, VOCAB), tgt.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        total += loss.item()
    return total / len(dataloader)


def test(dataloader, model, loss_fn):
    model.eval()
    total = 0.0
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        for x, lengths in dataloader:
            logits = model(x[:, :-1], lengths - 1)
            total += loss_fn(logits.float().reshape(-1, VOCAB), x[:, 1:].reshape(-1)).item()
    return total / len(dataloader)


def main():
    train_dl = DataLoader(SyntheticText(1280, 0), batch_size=16, shuffle=True,
                          collate_fn=pad_collate, num_workers=0)
    val_dl = DataLoader(SyntheticText(128, 1), batch_size=32, collate_fn=pad_collate, num_workers=0)
    model = TinyLM()
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    epochs = 6
    total_steps = epochs * len(train_dl)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=2e-3, total_steps=total_steps)

    t0 = time.time()
    for t in range(epochs):
        tr = train(train_dl, model, loss_fn, optimizer, scheduler)
        va = test(val_dl, model, loss_fn)
        print(f"epoch {t+1}: train {tr:.3f}  val {va:.3f}  ppl {math.exp(va):.1f}  "
              f"cached masks {len(model._mask_cache)}  ({time.time()-t0:.1f}s)")


if __name__ == "__main__":
    main()
