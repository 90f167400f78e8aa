# expect: leak
# holder: hooks|noise
# pattern: register_hook called on every persistent parameter each step (gradient-noise closures pile up on the parameters; backward also slows down)
# step_ms: 30
"""Bag-of-words intent classifier trained with annealed gradient noise
(Neelakantan et al., "Adding Gradient Noise Improves Learning for Very Deep
Networks").

The noise is injected with tensor hooks so that it is added before gradient
clipping: every step, ``add_gradient_noise`` draws a fresh noise tensor per
parameter and registers ``lambda g: g + noise`` on the parameter. The handles
returned by ``register_hook`` are thrown away and never ``.remove()``d, so
the hooks accumulate in each parameter's ``_backward_hooks``: after N steps
every backward runs N hooks per parameter, each closure holding a
parameter-sized noise tensor. Memory grows by one model's worth of floats
per step and steps get slower over time.

Fix: add the noise directly to ``p.grad`` after ``backward()``, or keep the
handles and call ``handle.remove()`` after the step (or register one
persistent hook that reads the current sigma from the trainer).
"""

import argparse
import math
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 2000
N_INTENTS = 20


class IntentClassifier(nn.Module):
    def __init__(self, vocab=VOCAB, dim=24, hidden=192, n_classes=N_INTENTS):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.mlp = nn.Sequential(
            nn.Linear(dim, hidden),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, n_classes),
        )

    def forward(self, tokens, offsets):
        return self.mlp(self.emb(tokens, offsets))


class SyntheticIntents:
    """Each intent has a handful of keywords; utterances mix keywords and filler."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.keywords = self.rng.integers(0, VOCAB, size=(N_INTENTS, 12))

    def batch(self, batch_size):
        labels = self.rng.integers(0, N_INTENTS, size=batch_size)
        seqs = []
        for y in labels:
            n = int(self.rng.integers(8, 40))
            n_kw = max(1, n // 4)
            toks = np.concatenate(
                [
                    self.rng.choice(self.keywords[y], size=n_kw),
                    self.rng.integers(0, VOCAB, size=n - n_kw),
                ]
            )
            seqs.append(toks)
        lengths = [len(s) for s in seqs]
        offsets = torch.tensor([0] + lengths[:-1]).cumsum(0)
        tokens = torch.from_numpy(np.concatenate(seqs)).long()
        return tokens, offsets, torch.from_numpy(labels).long()


def add_gradient_noise(model, step, eta=1e-6, gamma=0.55):
    sigma = math.sqrt(eta / (1 + step) ** gamma)
    for p in model.parameters():
        if not p.requires_grad:
            continue
        noise = torch.randn_like(p) * sigma
        p.register_hook(lambda g, noise=noise: g + noise)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    data = SyntheticIntents(args.seed)

    model = IntentClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params / 1e3:.0f}k params")

    t0 = time.time()
    correct = seen = 0
    for step in range(1, args.steps + 1):
        tokens, offsets, labels = data.batch(args.batch)
        logits = model(tokens, offsets)
        loss = F.cross_entropy(logits, labels)

        opt.zero_grad(set_to_none=True)
        add_gradient_noise(model, step)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()

        correct += (logits.argmax(1) == labels).sum().item()
        seen += labels.numel()
        if step % 25 == 0:
            ms = (time.time() - t0) / step * 1e3
            print(
                f"step {step:4d}  loss {loss.item():.3f}  acc {correct / seen:.3f}  {ms:.1f} ms/step",
                flush=True,
            )
            correct = seen = 0

    print("training finished")


if __name__ == "__main__":
    main()
