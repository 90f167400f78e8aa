# expect: leak
# holder: BUS._subs|EventBus._subs|_subs
# pattern: evaluation harness that sweeps every checkpoint of a (short, synthetic) training run of a small glyph-classification CNN (torch, a brief torch.optim.SGD run writes the checkpoints into a TemporaryDirectory, then evaluation only under torch.inference_mode; one step = one eval batch of 128 images, ~20 ms, code in main() + a module-level EventBus instance BUS + a CheckpointEvaluator class). The harness publishes a BatchEvent on BUS for every batch and each checkpoint gets a CheckpointEvaluator that subscribes self.on_batch_end in __init__ and calls BUS.unsubscribe("batch_end", self.on_batch_end) in finish(); unsubscribe filters the subscriber list with `s is not callback` (identity, "so that subscribers with value-based __eq__ never remove each other"), but every attribute access self.on_batch_end creates a new bound-method object, so the identity test never matches and nothing is ever removed. The bus therefore keeps one bound method per finished checkpoint, i.e. every CheckpointEvaluator with its per-sample penultimate features (kept for CKA against the next checkpoint, 1536x256 float32, ~1.5 MB) and probabilities; the dead evaluators keep receiving (and ignoring) every later event, and the subscriber list grows by one evaluator per checkpoint for the whole run.
# step_ms: 20
"""Checkpoint sweep: accuracy, NLL, calibration (ECE) and representation
drift (linear CKA between consecutive checkpoints) for a glyph classifier.

The harness is event driven: the loop publishes one event per evaluated
batch on a small in-process event bus, and metric objects subscribe to it.
"""
import os
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import psutil
import torch
import torch.nn as nn
import torch.nn.functional as F

N_CLASSES = 10
N_EVAL = 1536
EVAL_BATCH = 128
N_CKPT = 44


def rss_mb():
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


# --------------------------------------------------------------------------
# tiny in-process pub/sub
# --------------------------------------------------------------------------
class EventBus:
    def __init__(self):
        self._subs = defaultdict(list)

    def subscribe(self, topic, callback):
        self._subs[topic].append(callback)

    def unsubscribe(self, topic, callback):
        # Compare by identity: metric objects may define value-based __eq__,
        # and two distinct subscribers must never unsubscribe each other.
        self._subs[topic] = [s for s in self._subs[topic] if s is not callback]

    def publish(self, topic, event):
        for cb in list(self._subs[topic]):
            cb(event)


BUS = EventBus()


@dataclass
class BatchEvent:
    ckpt: str
    index: int
    logits: torch.Tensor
    feats: torch.Tensor
    targets: torch.Tensor


# --------------------------------------------------------------------------
# data + model
# --------------------------------------------------------------------------
def make_glyphs(n, rng):
    """Procedural 28x28 'glyphs': class = stroke pattern, plus jitter/noise."""
    yy, xx = np.mgrid[0:28, 0:28].astype(np.float32) / 27.0
    labels = rng.integers(0, N_CLASSES, size=n)
    imgs = np.empty((n, 1, 28, 28), np.float32)
    for i, c in enumerate(labels):
        ang = np.pi * c / N_CLASSES + rng.normal(0, 0.08)
        off = rng.normal(0, 0.06, size=2)
        d = np.abs((xx - 0.5 - off[0]) * np.cos(ang) + (yy - 0.5 - off[1]) * np.sin(ang))
        ring = np.abs(np.hypot(xx - 0.5, yy - 0.5) - 0.15 - 0.02 * (c % 4))
        img = np.exp(-(d / 0.05) ** 2) + (c % 3) * 0.5 * np.exp(-(ring / 0.04) ** 2)
        imgs[i, 0] = img + rng.normal(0, 0.25, size=(28, 28))
    return torch.from_numpy(imgs), torch.from_numpy(labels)


class GlyphNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.c3 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 3 * 3, 256)
        self.head = nn.Linear(256, N_CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = F.max_pool2d(F.relu(self.c3(x)), 2)
        feats = F.relu(self.fc(x.flatten(1)))
        return self.head(feats), feats


def write_checkpoints(ckpt_dir, rng):
    """A quick training run that leaves N_CKPT checkpoints behind."""
    torch.manual_seed(0)
    model = GlyphNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = make_glyphs(1024, rng)
    paths = []
    for step in range(N_CKPT * 2):
        idx = torch.from_numpy(rng.integers(0, len(x), size=64))
        logits, _ = model(x[idx])
        loss = F.cross_entropy(logits, y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 2 == 1:
            path = os.path.join(ckpt_dir, f"step{step + 1:05d}.pt")
            torch.save(model.state_dict(), path)
            paths.append(path)
    return paths


# --------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------
def linear_cka(a, b):
    a = a - a.mean(0, keepdims=True)
    b = b - b.mean(0, keepdims=True)
    hsic = np.linalg.norm(a.T @ b) ** 2
    return float(hsic / (np.linalg.norm(a.T @ a) * np.linalg.norm(b.T @ b) + 1e-12))


class CheckpointEvaluator:
    def __init__(self, ckpt):
        self.ckpt = ckpt
        self.probs, self.feats, self.targets = [], [], []
        BUS.subscribe("batch_end", self.on_batch_end)

    def on_batch_end(self, ev):
        if ev.ckpt != self.ckpt:
            return
        self.probs.append(torch.softmax(ev.logits, 1).numpy())
        self.feats.append(ev.feats.numpy().copy())
        self.targets.append(ev.targets.numpy())

    def finish(self, prev_feats):
        BUS.unsubscribe("batch_end", self.on_batch_end)
        probs = np.concatenate(self.probs)
        feats = np.concatenate(self.feats)
        y = np.concatenate(self.targets)
        conf = probs.max(1)
        correct = probs.argmax(1) == y
        bins = np.minimum((conf * 15).astype(int), 14)
        ece = sum(abs(correct[bins == b].mean() - conf[bins == b].mean()) * (bins == b).mean()
                  for b in range(15) if (bins == b).any())
        summary = dict(
            acc=float(correct.mean()),
            nll=float(-np.log(probs[np.arange(len(y)), y] + 1e-9).mean()),
            ece=float(ece),
            cka_prev=linear_cka(feats, prev_feats) if prev_feats is not None else 1.0,
        )
        return summary, feats


def main():
    torch.set_num_threads(1)  # small model; one intra-op thread is fastest here
    rng = np.random.default_rng(7)
    torch.manual_seed(7)
    with tempfile.TemporaryDirectory() as tmp:
        ckpts = write_checkpoints(tmp, rng)
        x_eval, y_eval = make_glyphs(N_EVAL, np.random.default_rng(99))
        model = GlyphNet().eval()
        n_batches = 0
        report = []
        prev_feats = None
        t0 = time.perf_counter()
        print(f"{len(ckpts)} checkpoints, {N_EVAL} eval images; "
              f"rss at loop start {rss_mb():.1f} MB", flush=True)
        for sweep in range(2):  # two passes: clean, +noise
            for path in ckpts:
                name = f"{os.path.basename(path)}/pass{sweep}"
                model.load_state_dict(torch.load(path, weights_only=True))
                evaluator = CheckpointEvaluator(name)
                with torch.inference_mode():
                    for i in range(0, N_EVAL, EVAL_BATCH):
                        xb = x_eval[i:i + EVAL_BATCH]
                        if sweep == 1:
                            xb = xb + 0.3 * torch.randn_like(xb)
                        logits, feats = model(xb)
                        BUS.publish("batch_end", BatchEvent(name, i // EVAL_BATCH, logits,
                                                            feats, y_eval[i:i + EVAL_BATCH]))
                        n_batches += 1
                summary, prev_feats = evaluator.finish(prev_feats)
                report.append((name, summary))
                del evaluator
                if len(report) % 20 == 0:
                    el = time.perf_counter() - t0
                    print(f"  {name:22s} acc {summary['acc']:.3f} nll {summary['nll']:.3f} "
                          f"ece {summary['ece']:.3f} cka {summary['cka_prev']:.3f} | "
                          f"{el / n_batches * 1e3:.1f} ms/batch rss {rss_mb():.1f} MB", flush=True)
        print(f"loop done; rss at loop end {rss_mb():.1f} MB", flush=True)
    best = max(report, key=lambda r: r[1]["acc"])
    print(f"best checkpoint: {best[0]} acc={best[1]['acc']:.3f}")


if __name__ == "__main__":
    main()
