# expect: leak
# holder: main:hidden
"""Adapting a pretrained character GRU to a new corpus: the recurrent core is
frozen, the embedding and the output head are fine-tuned, chunk by chunk.

The hidden state is carried from one chunk to the next but never detached,
so every chunk's graph hangs off the previous one: the graph, the activations
it saves and the backward time all grow every step. `retain_graph=True` was
added to silence "Trying to backward through the graph a second time" - the
usual way this bug is born. Fix: `hidden = hidden.detach()` before each chunk.
"""

import argparse
import math

import torch
from torch import nn

TEXT = (
    "the quick brown fox jumps over the lazy dog while the cat watches from the "
    "window and the rain keeps falling on the old tin roof of the barn "
) * 40


class CharGRU(nn.Module):
    def __init__(self, vocab, emb=24, hidden=96):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.cell = nn.GRUCell(emb, hidden)
        self.out = nn.Linear(hidden, vocab)
        self.hidden_size = hidden

    def forward(self, chunk, h):
        logits = []
        for t in range(chunk.shape[1]):
            h = self.cell(self.embed(chunk[:, t]), h)
            logits.append(self.out(h))
        return torch.stack(logits, 1), h


def batches(data, batch, bptt):
    n = (len(data) - 1) // batch
    rows = data[: n * batch + 1]
    src = rows[:-1].view(batch, n)
    tgt = rows[1:].view(batch, n)
    while True:
        for i in range(0, n - bptt, bptt):
            yield src[:, i : i + bptt], tgt[:, i : i + bptt]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=140)
    p.add_argument("--bptt", type=int, default=4)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(7)

    vocab = sorted(set(TEXT))
    idx = {c: i for i, c in enumerate(vocab)}
    data = torch.tensor([idx[c] for c in TEXT], dtype=torch.long)

    model = CharGRU(len(vocab))
    model.cell.requires_grad_(False)  # "pretrained" core stays frozen
    trainable = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.RMSprop(trainable, lr=3e-3)
    criterion = nn.CrossEntropyLoss()
    hidden = torch.zeros(16, model.hidden_size)

    stream = batches(data, 16, args.bptt)
    for step in range(args.steps):
        src, tgt = next(stream)
        logits, hidden = model(src, hidden)  # BUG: hidden keeps the whole history
        loss = criterion(logits.reshape(-1, len(vocab)), tgt.reshape(-1))
        optim.zero_grad()
        loss.backward(retain_graph=True)
        optim.step()
        if step % 50 == 0:
            print(f"step {step} ppl {math.exp(loss.item()):.2f}")


if __name__ == "__main__":
    main()
