# expect: no_leak
# pattern: per-epoch generator of padded sequence batches is split with itertools.tee into current/next views consumed in lockstep (one-batch lookahead to detect the last batch of the epoch); tee's buffer never holds more than one batch, and each epoch's generator and tee objects are dropped
# step_ms: 25
"""GRU intent classifier over synthetic token sequences.

Batches are generated per epoch from a seeded generator with bucketed
sequence lengths.  The loop looks one batch ahead so it knows when it is on
the last batch of an epoch (for the end-of-epoch validation and LR decay)
without having to know the epoch length in advance.
"""
import itertools
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(41)

N_EPOCHS = 8
VOCAB = 2000
N_INTENTS = 12
EMB = 64
HIDDEN = 96
BATCH = 32
SEED = 41


def intent_batches(seed, min_batches=70, max_batches=110):
    rng = np.random.default_rng(seed)
    n_batches = int(rng.integers(min_batches, max_batches))
    keywords = np.random.default_rng(0).integers(1, VOCAB, size=(N_INTENTS, 6))
    for _ in range(n_batches):
        length = int(rng.choice([12, 20, 32, 48]))
        labels = rng.integers(0, N_INTENTS, size=BATCH)
        tokens = rng.integers(1, VOCAB, size=(BATCH, length))
        lengths = rng.integers(length // 2, length + 1, size=BATCH)
        for i in range(BATCH):
            pos = rng.choice(lengths[i], size=3, replace=False)
            tokens[i, pos] = rng.choice(keywords[labels[i]], size=3)
            tokens[i, lengths[i]:] = 0
        yield torch.from_numpy(tokens), torch.from_numpy(lengths), torch.from_numpy(labels)


class IntentGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB, padding_idx=0)
        self.gru = nn.GRU(EMB, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, N_INTENTS)

    def forward(self, tokens, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(
            self.emb(tokens), lengths, batch_first=True, enforce_sorted=False
        )
        _, h = self.gru(packed)
        return self.head(h[-1])


def evaluate(model, seed):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for tokens, lengths, labels in intent_batches(seed, 8, 9):
            correct += int((model(tokens, lengths).argmax(1) == labels).sum())
            total += len(labels)
    model.train()
    return correct / total


def main():
    model = IntentGRU()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.7)

    start = last = time.perf_counter()
    step = 0
    for epoch in range(N_EPOCHS):
        current, upcoming = itertools.tee(intent_batches(SEED + epoch))
        next(upcoming, None)
        epoch_loss, n = 0.0, 0
        for (tokens, lengths, labels), nxt in itertools.zip_longest(current, upcoming):
            loss = F.cross_entropy(model(tokens, lengths), labels)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            epoch_loss += loss.item()
            n += 1
            step += 1

            now = time.perf_counter()
            if now - last >= 1.0:
                print(f"[{now - start:5.1f}s] epoch {epoch + 1} step {step} "
                      f"loss={epoch_loss / n:.4f}", flush=True)
                last = now

            if nxt is None:
                acc = evaluate(model, 1000 + epoch)
                sched.step()
                print(f"  epoch {epoch + 1} done: {n} batches, loss {epoch_loss / n:.4f}, "
                      f"val acc {acc:.3f}, lr {sched.get_last_lr()[0]:.2e}", flush=True)

    print(f"done: {step} steps in {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
