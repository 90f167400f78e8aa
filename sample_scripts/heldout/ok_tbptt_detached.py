# expect: no_leak
# pattern: GRU LM, truncated BPTT: hidden state carried but detached at every chunk
# step_ms: 125
"""Word-level GRU language model on a synthetic corpus with long-range
structure, trained with truncated backprop-through-time: the stream is cut
into 35-token chunks, the hidden state is carried from one chunk to the next
(so the model sees long context) but ``hidden = hidden.detach()`` at each
boundary, so each backward only spans one chunk.

Memory: flat (each step's graph is freed after ``backward``).
"""

import argparse
import math
import random
import time

import torch
import torch.nn as nn


def synthetic_corpus(n_tokens, vocab, rng):
    """A Markov chain over topics; each topic prefers a slice of the vocabulary."""
    topics = 8
    per = vocab // topics
    toks, topic = [], 0
    for _ in range(n_tokens):
        if rng.random() < 0.02:
            topic = rng.randrange(topics)
        if rng.random() < 0.7:
            toks.append(topic * per + rng.randrange(per))
        else:
            toks.append(rng.randrange(vocab))
    return torch.tensor(toks)


def batchify(data, bsz):
    n = data.size(0) // bsz
    return data[: n * bsz].view(bsz, n)


class RNNLM(nn.Module):
    def __init__(self, vocab, emb=128, hidden=256, layers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.emb = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(emb, hidden, layers, batch_first=True, dropout=dropout)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x, h):
        y, h = self.rnn(self.drop(self.emb(x)), h)
        return self.out(self.drop(y)), h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--bptt", type=int, default=35)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=2000)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = random.Random(0)
    data = batchify(synthetic_corpus(200_000, args.vocab, rng), args.batch)
    model = RNNLM(args.vocab)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    crit = nn.CrossEntropyLoss()

    hidden = None
    pos = 0
    t0 = time.time()
    for step in range(1, args.steps + 1):
        if pos + args.bptt + 1 >= data.size(1):
            pos, hidden = 0, None
        x = data[:, pos : pos + args.bptt]
        y = data[:, pos + 1 : pos + 1 + args.bptt]
        pos += args.bptt
        if hidden is not None:
            hidden = hidden.detach()
        logits, hidden = model(x, hidden)
        loss = crit(logits.reshape(-1, args.vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        if step % 25 == 0:
            print(
                f"step {step:4d}  ppl {math.exp(loss.item()):7.1f}  "
                f"{(time.time() - t0) / step * 1e3:.0f} ms/step",
                flush=True,
            )


if __name__ == "__main__":
    main()
