# expect: no_leak
# pattern: iCaRL-style class-incremental learning of a small CNN on synthetic texture classes (10 tasks x 5 classes, torch.optim.SGD with momentum, knowledge distillation from the previous model); an ExemplarMemory keeps herding-selected training images per class under a fixed total budget (K=6000 images of 3x40x40 float32, ~115 MB): after every task the per-class quota m = K // classes_seen shrinks, old exemplar sets are cut to their first m (cloned, so the dropped rows are freed) and new classes get up to m exemplars; with 300 training images per class the memory grows by one task's worth per task until the budget is reached after task 4 (~40% of the run) and then stays at K images while classes keep arriving
# step_ms: 22
"""Class-incremental learning with a fixed exemplar budget (iCaRL).

Fifty synthetic texture classes arrive five at a time. For every task the
network is trained on the new classes plus the stored exemplars of all old
classes, with a distillation term that keeps the old logits close to those of
the previous model. Exemplars are chosen by herding on the normalised
features, and classification uses the nearest mean of exemplars (NME).
"""
import contextlib
import copy
import functools
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("icarl")


@dataclass
class StreamConfig:
    n_tasks: int = 10
    classes_per_task: int = 5
    train_per_class: int = 300
    test_per_class: int = 40
    image_size: int = 40
    seed: int = 1234


@dataclass
class LearnerConfig:
    memory_budget: int = 6000
    steps_per_task: int = 75
    batch_size: int = 64
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 5e-4
    distill_T: float = 2.0
    distill_w: float = 1.0
    width: int = 24
    stream: StreamConfig = field(default_factory=StreamConfig)


# ------------------------------------------------------------------ synthetic classes

@functools.lru_cache(maxsize=None)
def class_prototype(cls: int, size: int, seed: int) -> torch.Tensor:
    """Each class: a mixture of oriented gratings with class-specific colours and frequencies."""
    g = torch.Generator().manual_seed(seed * 7919 + cls)
    lin = torch.linspace(-1, 1, size)
    yy, xx = torch.meshgrid(lin, lin, indexing="ij")
    img = torch.zeros(3, size, size)
    for _ in range(3):
        th = torch.rand(1, generator=g) * math.pi
        f = 2 + 6 * torch.rand(1, generator=g)
        col = torch.rand(3, 1, 1, generator=g)
        img += col * torch.sin(f * math.pi * (xx * torch.cos(th) + yy * torch.sin(th)))
    return img / 3


def sample_class(cls: int, n: int, cfg: StreamConfig, g: torch.Generator) -> torch.Tensor:
    proto = class_prototype(cls, cfg.image_size, cfg.seed)
    shift = torch.randint(-6, 7, (2,), generator=g).tolist()
    x = proto.roll(shift, dims=(1, 2)).expand(n, -1, -1, -1)
    gain = 0.7 + 0.6 * torch.rand(n, 1, 1, 1, generator=g)
    x = x * gain + 0.9 * torch.randn(n, 3, cfg.image_size, cfg.image_size, generator=g)
    return x.contiguous()


def task_stream(cfg: StreamConfig) -> Iterator[Tuple[int, List[int], Dict[int, torch.Tensor]]]:
    g = torch.Generator().manual_seed(cfg.seed)
    order = torch.randperm(cfg.n_tasks * cfg.classes_per_task, generator=g).tolist()
    for t in range(cfg.n_tasks):
        classes = order[t * cfg.classes_per_task:(t + 1) * cfg.classes_per_task]
        yield t, classes, {c: sample_class(c, cfg.train_per_class, cfg, g) for c in classes}


# ------------------------------------------------------------------ model

class Backbone(nn.Module):
    def __init__(self, width):
        super().__init__()
        def blk(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU())
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU())
        self.net = nn.Sequential(self.stem, blk(width, 2 * width), blk(2 * width, 4 * width))
        self.out_dim = 4 * width

    def forward(self, x):
        return self.net(x).mean((2, 3))


class IncrementalNet(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.backbone = Backbone(width)
        self.head = None

    def grow(self, n_new):
        old = self.head
        n_old = 0 if old is None else old.out_features
        new = nn.Linear(self.backbone.out_dim, n_old + n_new)
        if old is not None:
            with torch.no_grad():
                new.weight[:n_old] = old.weight
                new.bias[:n_old] = old.bias
        self.head = new

    def forward(self, x):
        f = self.backbone(x)
        return self.head(f), f


# ------------------------------------------------------------------ exemplar memory

class ExemplarMemory:
    def __init__(self, budget: int):
        self.budget = budget
        self.sets: Dict[int, torch.Tensor] = {}
        self.means: Dict[int, torch.Tensor] = {}

    def __len__(self):
        return sum(len(v) for v in self.sets.values())

    def quota(self, n_classes):
        return self.budget // max(n_classes, 1)

    def reduce(self, m):
        for c in list(self.sets):
            if len(self.sets[c]) > m:
                self.sets[c] = self.sets[c][:m].clone()

    @torch.no_grad()
    def herd(self, model: IncrementalNet, cls: int, images: torch.Tensor, m: int):
        feats = torch.cat([F.normalize(model.backbone(chunk), dim=1) for chunk in images.split(256)])
        mu = feats.mean(0)
        chosen: List[int] = []
        running = torch.zeros_like(mu)
        available = torch.ones(len(feats), dtype=torch.bool)
        for k in range(1, min(m, len(images)) + 1):
            cand = (mu - (running + feats) / k).norm(dim=1)
            cand[~available] = float("inf")
            i = int(cand.argmin())
            chosen.append(i)
            available[i] = False
            running += feats[i]
        self.sets[cls] = images[chosen].clone()

    @torch.no_grad()
    def update_means(self, model: IncrementalNet):
        for c, ex in self.sets.items():
            f = torch.cat([F.normalize(model.backbone(chunk), dim=1) for chunk in ex.split(256)])
            self.means[c] = F.normalize(f.mean(0), dim=0)

    def replay_batch(self, n, g):
        if not self.sets:
            return None
        classes = list(self.sets)
        picks = torch.randint(0, len(classes), (n,), generator=g).tolist()
        xs, ys = [], []
        for k in picks:
            ex = self.sets[classes[k]]
            xs.append(ex[int(torch.randint(0, len(ex), (1,), generator=g))])
            ys.append(classes[k])
        return torch.stack(xs), torch.tensor(ys)


# ------------------------------------------------------------------ learner

@contextlib.contextmanager
def timed(label):
    t0 = time.perf_counter()
    yield
    log.info("%s took %.2fs", label, time.perf_counter() - t0)


class ICaRL:
    def __init__(self, cfg: LearnerConfig):
        self.cfg = cfg
        torch.manual_seed(cfg.stream.seed)
        self.model = IncrementalNet(cfg.width)
        self.old_model = None
        self.memory = ExemplarMemory(cfg.memory_budget)
        self.class_to_out: Dict[int, int] = {}
        self.g = torch.Generator().manual_seed(cfg.stream.seed + 1)
        self.history: List[dict] = []

    def _targets(self, y):
        return torch.tensor([self.class_to_out[int(c)] for c in y])

    def learn_task(self, task, classes, data):
        for c in classes:
            self.class_to_out[c] = len(self.class_to_out)
        self.model.grow(len(classes))
        opt = torch.optim.SGD(self.model.parameters(), lr=self.cfg.lr, momentum=self.cfg.momentum,
                              weight_decay=self.cfg.weight_decay)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, self.cfg.steps_per_task)
        xs = torch.cat([data[c] for c in classes])
        ys = torch.cat([torch.full((len(data[c]),), c) for c in classes])
        n_old_out = len(self.class_to_out) - len(classes)
        new_bs = self.cfg.batch_size // 2 if len(self.memory) else self.cfg.batch_size
        self.model.train()
        for step in range(self.cfg.steps_per_task):
            idx = torch.randint(0, len(xs), (new_bs,), generator=self.g)
            x, y = xs[idx], ys[idx]
            replay = self.memory.replay_batch(self.cfg.batch_size - new_bs, self.g)
            if replay is not None:
                x, y = torch.cat([x, replay[0]]), torch.cat([y, replay[1]])
            if torch.rand(1, generator=self.g) < 0.5:
                x = x.flip(-1)
            logits, _ = self.model(x)
            loss = F.cross_entropy(logits, self._targets(y))
            if self.old_model is not None and n_old_out > 0:
                with torch.no_grad():
                    old_logits, _ = self.old_model(x)
                T = self.cfg.distill_T
                kd = F.kl_div(F.log_softmax(logits[:, :n_old_out] / T, 1), F.softmax(old_logits / T, 1),
                              reduction="batchmean") * T * T
                loss = loss + self.cfg.distill_w * kd
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        return loss.item()

    def consolidate(self, classes, data):
        self.model.eval()
        n_seen = len(self.class_to_out)
        m = self.memory.quota(n_seen)
        self.memory.reduce(m)
        for c in classes:
            self.memory.herd(self.model, c, data[c], m)
        self.memory.update_means(self.model)
        self.old_model = copy.deepcopy(self.model).eval()
        for p in self.old_model.parameters():
            p.requires_grad_(False)
        return m

    @torch.no_grad()
    def evaluate(self, seen_classes):
        self.model.eval()
        g = torch.Generator().manual_seed(999)
        cls_ids = torch.tensor(list(self.memory.means))
        means = torch.stack([self.memory.means[int(c)] for c in cls_ids])
        correct = total = 0
        for c in seen_classes:
            x = sample_class(c, self.cfg.stream.test_per_class, self.cfg.stream, g)
            f = F.normalize(self.model.backbone(x), dim=1)
            pred = cls_ids[(f @ means.T).argmax(1)]
            correct += int((pred == c).sum())
            total += len(x)
        return correct / total


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)
    cfg = LearnerConfig()
    learner = ICaRL(cfg)
    seen: List[int] = []
    t_start = time.perf_counter()
    for task, classes, data in task_stream(cfg.stream):
        t0 = time.perf_counter()
        loss = learner.learn_task(task, classes, data)
        m = learner.consolidate(classes, data)
        seen += classes
        acc = learner.evaluate(seen)
        learner.history.append({"task": task, "loss": loss, "nme_acc": acc, "exemplars": len(learner.memory)})
        log.info("task %d: %d classes seen, loss %.3f, NME acc %.3f, quota m=%d, exemplars %d (%.1fs)",
                 task, len(seen), loss, acc, m, len(learner.memory), time.perf_counter() - t0)
        del data
    avg = np.mean([h["nme_acc"] for h in learner.history])
    print(f"average incremental accuracy {avg:.3f} over {len(learner.history)} tasks "
          f"({time.perf_counter() - t_start:.1f}s)")


if __name__ == "__main__":
    main()
