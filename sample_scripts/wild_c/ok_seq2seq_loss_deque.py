# expect: no_leak
# holder:
# pattern: GRU seq2seq keeps the last 200 detached loss tensors in a collections.deque(maxlen=200) for a smoothed loss; StepLR, clipping, teacher forcing; memory bounded
# step_ms: 25
"""Sequence-to-sequence "sort the digits" task with a GRU encoder/decoder.

Looks like it might leak: every step appends a loss *tensor* to
``recent_losses``.  But the tensors are ``loss.detach()`` (no graph), and the
container is ``collections.deque(maxlen=200)``, so old entries are dropped.
The smoothed loss is computed with ``torch.stack(list(recent_losses)).mean()``
each log interval.  Per-epoch metrics are plain floats.
"""
import collections
import random
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(0)
random.seed(0)

SOS, EOS, PAD, VOCAB = 10, 11, 12, 13
MAXLEN = 12


class SortDigits(Dataset):
    def __init__(self, n, seed):
        rng = random.Random(seed)
        self.items = []
        for _ in range(n):
            s = [rng.randint(0, 9) for _ in range(rng.randint(5, MAXLEN))]
            self.items.append((s, sorted(s)))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate(batch):
    B = len(batch)
    src = torch.full((B, MAXLEN + 1), PAD)
    tgt = torch.full((B, MAXLEN + 2), PAD)
    for i, (s, t) in enumerate(batch):
        src[i, : len(s) + 1] = torch.tensor(s + [EOS])
        tgt[i, : len(t) + 2] = torch.tensor([SOS] + t + [EOS])
    return src, tgt


class Seq2Seq(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.src_emb = nn.Embedding(VOCAB, hidden, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(VOCAB, hidden, padding_idx=PAD)
        self.encoder = nn.GRU(hidden, hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden, hidden)
        self.decoder = nn.GRU(hidden, hidden, batch_first=True)
        self.proj = nn.Linear(hidden, VOCAB)

    def forward(self, src, tgt_in, teacher_forcing=1.0):
        _, h = self.encoder(self.src_emb(src))
        h = torch.tanh(self.bridge(torch.cat([h[0], h[1]], dim=-1))).unsqueeze(0)
        if teacher_forcing >= 1.0:
            out, _ = self.decoder(self.tgt_emb(tgt_in), h)
            return self.proj(out)
        tok = tgt_in[:, :1]
        outs = []
        for t in range(tgt_in.size(1)):
            o, h = self.decoder(self.tgt_emb(tok), h)
            logits = self.proj(o)
            outs.append(logits)
            if t + 1 < tgt_in.size(1) and random.random() < teacher_forcing:
                tok = tgt_in[:, t + 1 : t + 2]
            else:
                tok = logits.argmax(-1)
        return torch.cat(outs, 1)


def train(dataloader, model, loss_fn, optimizer, recent_losses, tf_ratio):
    model.train()
    for step, (src, tgt) in enumerate(dataloader):
        logits = model(src, tgt[:, :-1], teacher_forcing=tf_ratio)
        loss = loss_fn(logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        recent_losses.append(loss.detach())


def test(dataloader, model, loss_fn):
    model.eval()
    total, exact, n = 0.0, 0, 0
    with torch.no_grad():
        for src, tgt in dataloader:
            logits = model(src, tgt[:, :-1], teacher_forcing=0.0)
            total += loss_fn(logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1)).item()
            pred = logits.argmax(-1)
            mask = tgt[:, 1:] != PAD
            exact += ((pred == tgt[:, 1:]) | ~mask).all(1).sum().item()
            n += len(src)
    return total / len(dataloader), exact / n


def main():
    train_dl = DataLoader(SortDigits(1280, 0), batch_size=32, shuffle=True, collate_fn=collate, num_workers=0)
    val_dl = DataLoader(SortDigits(300, 1), batch_size=100, collate_fn=collate, num_workers=0)
    model = Seq2Seq()
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.6)
    recent_losses = collections.deque(maxlen=200)

    epochs = 16
    t0 = time.time()
    for t in range(epochs):
        tf_ratio = max(0.5, 1.0 - 0.05 * t)
        train(train_dl, model, loss_fn, optimizer, recent_losses, tf_ratio)
        scheduler.step()
        smoothed = torch.stack(list(recent_losses)).mean().item()
        vl, ex = test(val_dl, model, loss_fn)
        print(f"epoch {t+1:2d}  smoothed train loss {smoothed:.3f}  val {vl:.3f}  exact {ex:.3f}  "
              f"tf {tf_ratio:.2f}  lr {scheduler.get_last_lr()[0]:.1e}  ({time.time()-t0:.1f}s)")


if __name__ == "__main__":
    main()
