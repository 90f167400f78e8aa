# expect: leak
# holder: main:running|running_loss|running
# pattern: helper update_running(running, loss) returns running + w*loss; the graph-carrying sum lives across all steps (hand-written SGD, no optimizer)
# step_ms: 16
"""Character-level GRU language model trained with a hand-written SGD update.

A small helper keeps a weighted running loss for the progress line:
`running = update_running(running, loss, step)`.  Because `loss` is the live
autograd tensor, `running` becomes a chain of add/mul nodes that references
every step's loss graph (the GRU unrolled over 48 time steps), so none of them
can be released.  Memory grows steadily for the whole run.
Fix: pass `loss.item()` (or `loss.detach()`) into the helper.
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = "abcdefghijklmnopqrstuvwxyz .,;\n"


def synthetic_corpus(n_chars, seed=0):
    """A Markov-ish character stream, so there is something to learn."""
    g = torch.Generator().manual_seed(seed)
    v = len(VOCAB)
    trans = torch.softmax(torch.randn(v, v, generator=g) * 3.0, dim=1)
    out = torch.empty(n_chars, dtype=torch.long)
    c = 0
    for i in range(n_chars):
        c = torch.multinomial(trans[c], 1, generator=g).item() if i % 64 == 0 else c
        out[i] = c
        c = (c + 1 + (i * 7) % 3) % v
    return out


class CharGRU(nn.Module):
    def __init__(self, vocab, emb=32, hidden=96):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(emb, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, idx):
        h, _ = self.rnn(self.emb(idx))
        return self.out(h)


def update_running(running, value, step, beta=0.98):
    """Bias-corrected exponential moving average of the loss."""
    running = beta * running + (1 - beta) * value
    return running


def sample_batch(corpus, batch, seq_len, g):
    starts = torch.randint(0, corpus.numel() - seq_len - 1, (batch,), generator=g)
    x = torch.stack([corpus[s:s + seq_len] for s in starts.tolist()])
    y = torch.stack([corpus[s + 1:s + seq_len + 1] for s in starts.tolist()])
    return x, y


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    corpus = synthetic_corpus(60_000)
    model = CharGRU(len(VOCAB))
    lr = 0.5
    steps = 900
    seq_len = 48
    g = torch.Generator().manual_seed(1)

    running = 0.0
    t0 = time.time()
    last_print = t0
    for step in range(1, steps + 1):
        x, y = sample_batch(corpus, 24, seq_len, g)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        for p in model.parameters():
            p.grad = None
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        with torch.no_grad():
            cur_lr = lr * 0.5 * (1 + math.cos(math.pi * step / steps))
            for p in model.parameters():
                p.data -= cur_lr * p.grad

        running = update_running(running, loss, step)
        if time.time() - last_print > 3.0:
            smoothed = running / (1 - 0.98 ** step)
            print(f"step {step:5d}  loss {smoothed.item():.4f}  ppl {math.exp(smoothed.item()):.2f}"
                  f"  ({time.time() - t0:.1f}s)", flush=True)
            last_print = time.time()

    print(f"finished {steps} steps in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
