# expect: leak
# holder: outputs|targets
# pattern: gradient-accumulation trainer stores every micro-batch's logits (with grad_fn) in a dict keyed by (epoch, batch) that is read at epoch end but never cleared
# step_ms: 7
"""Multi-label tag prediction (64 tags) from bag-of-features
vectors, trained with gradient accumulation.

The trainer accumulates gradients over ``accum`` micro-batches. To compute
epoch-level mean average precision without a second pass, it keeps each
micro-batch's output in ``self.outputs[(epoch, batch_idx)]`` and the targets
in ``self.targets``; ``epoch_metrics`` then selects the keys of the current
epoch. Nothing ever deletes old epochs' entries, and the stored logits are
the live autograd outputs (``out``, not ``out.detach()``), so each entry also
keeps its ``grad_fn`` node chain. Memory grows by one logits matrix (plus
graph nodes) and one target matrix per micro-batch, for the whole run; on
glibc the RSS grows several times faster than that, because the small kept
blocks are scattered between the big, freed activation blocks.

Fix: store ``out.detach()`` (or running metric state) and clear the dicts at
the end of each epoch (``self.outputs.clear()``).
"""

import argparse
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N_FEATS = 1024
N_TAGS = 64


class TagModel(nn.Module):
    def __init__(self, hidden=1024):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(N_FEATS, hidden),
            nn.LayerNorm(hidden),
            nn.GELU(),
            nn.Dropout(0.1),
            nn.Linear(hidden, N_TAGS),
        )

    def forward(self, x):
        return self.net(x)


class TagData:
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.proj = torch.randn(N_FEATS, N_TAGS, generator=g) / N_FEATS**0.5
        self.x = torch.relu(torch.randn(n, N_FEATS, generator=g))
        score = self.x @ self.proj
        self.y = (score > score.quantile(0.95, dim=0, keepdim=True)).float()
        self.g = g

    def epoch(self, batch):
        perm = torch.randperm(self.x.shape[0], generator=self.g)
        for i in range(0, len(perm) - batch + 1, batch):
            j = perm[i : i + batch]
            y = self.y[j]
            yield self.x[j], y


def average_precision(scores, targets):
    order = torch.argsort(scores, dim=0, descending=True)
    t = torch.gather(targets, 0, order)
    hits = t.cumsum(0)
    prec = hits / torch.arange(1, t.shape[0] + 1).unsqueeze(1)
    ap = (prec * t).sum(0) / t.sum(0).clamp(min=1)
    return ap[t.sum(0) > 0].mean().item()


class Trainer:
    def __init__(self, model, data, accum=4, lr=1e-3):
        self.model = model
        self.data = data
        self.accum = accum
        self.opt = torch.optim.AdamW(model.parameters(), lr=lr)
        self.outputs = {}
        self.targets = {}
        self.micro_steps = 0

    def train_epoch(self, epoch, batch, max_micro_steps):
        self.model.train()
        self.opt.zero_grad(set_to_none=True)
        for batch_idx, (x, y) in enumerate(self.data.epoch(batch)):
            out = self.model(x)
            loss = F.binary_cross_entropy_with_logits(out, y) / self.accum
            loss.backward()
            self.outputs[(epoch, batch_idx)] = out
            self.targets[(epoch, batch_idx)] = y
            self.micro_steps += 1
            if (batch_idx + 1) % self.accum == 0:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                self.opt.step()
                self.opt.zero_grad(set_to_none=True)
            if self.micro_steps >= max_micro_steps:
                break

    @torch.no_grad()
    def epoch_metrics(self, epoch):
        keys = [k for k in self.outputs if k[0] == epoch]
        scores = torch.cat([self.outputs[k].detach() for k in keys])
        targets = torch.cat([self.targets[k] for k in keys])
        loss = F.binary_cross_entropy_with_logits(scores, targets).item()
        return loss, average_precision(scores, targets)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1800, help="micro-batches")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=17)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)

    data = TagData(6_400, args.seed)
    trainer = Trainer(TagModel(), data)
    t0 = time.time()
    epoch = 0
    while trainer.micro_steps < args.steps:
        epoch += 1
        trainer.train_epoch(epoch, args.batch, args.steps)
        loss, mAP = trainer.epoch_metrics(epoch)
        ms = (time.time() - t0) / trainer.micro_steps * 1e3
        print(
            f"epoch {epoch:3d}  micro-steps {trainer.micro_steps:5d}  bce {loss:.4f}  mAP {mAP:.3f}  {ms:.1f} ms/step",
            flush=True,
        )


if __name__ == "__main__":
    main()
