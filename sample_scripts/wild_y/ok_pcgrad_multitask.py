# expect: no_leak
# holder:
# pattern: multi-task CNN (shared conv trunk + three heads: shape class, object position regression, coarse 8x8 mask) on synthetic 48x48 scenes, trained with hand-written PCGrad gradient surgery feeding torch.optim.Adam (~200 ms per step of 32 images, code in main() + a PCGradTrainer class). It looks like a retained-graph leak: every step calls torch.autograd.grad(task_loss, shared_params, retain_graph=True) once per task, keeps the per-task flattened gradients in a list, writes projected gradients into p.grad by hand, keeps flattened merged gradients in a window for a gradient-diversity statistic and logs per-step task-conflict matrices in a dict keyed by epoch. But the graph is a local of train_step() and the last torch.autograd.grad call (for the heads, without retain_graph) frees it; the per-task gradient list and the stacked matrix are locals too; the diversity window is a deque(maxlen=16) (fills within the first ~10% of the steps) and the conflict log drops every epoch older than the previous one at the start of each epoch, so memory is flat after warm-up.
# step_ms: 200
"""PCGrad multi-task learning on synthetic scenes."""
import time
from collections import deque

import numpy as np
import psutil
import torch
import torch.nn as nn
import torch.nn.functional as F

IMG = 48


def rss_mb():
    return psutil.Process().memory_info().rss / 2**20


def make_scenes(n, rng):
    yy, xx = np.mgrid[0:IMG, 0:IMG]
    x = np.zeros((n, 3, IMG, IMG), dtype=np.float32)
    cls = rng.integers(3, size=n)
    pos = rng.uniform(10, IMG - 10, size=(n, 2)).astype(np.float32)
    masks = np.zeros((n, 1, 8, 8), dtype=np.float32)
    for i in range(n):
        cx, cy = pos[i]
        r = rng.uniform(5, 9)
        if cls[i] == 0:
            m = (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
        elif cls[i] == 1:
            m = (np.abs(xx - cx) <= r) & (np.abs(yy - cy) <= r)
        else:
            m = (np.abs(xx - cx) + np.abs(yy - cy)) <= 1.3 * r
        color = rng.uniform(0.4, 1.0, size=3)
        x[i] = rng.normal(scale=0.15, size=(3, IMG, IMG))
        x[i][:, m] += color[:, None]
        masks[i, 0] = m.reshape(8, 6, 8, 6).mean(axis=(1, 3))
    return x, cls, pos / IMG, masks


class MultiTaskNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 96, 3, stride=3, padding=1), nn.BatchNorm2d(96), nn.ReLU(),
        )                                                   # -> 96 x 8 x 8
        self.cls_head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(96, 3))
        self.pos_head = nn.Sequential(nn.Flatten(), nn.Linear(96 * 64, 64), nn.ReLU(), nn.Linear(64, 2))
        self.seg_head = nn.Conv2d(96, 1, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.cls_head(h), self.pos_head(h), self.seg_head(h)


class PCGradTrainer:
    def __init__(self, model, lr=1e-3, seed=0):
        self.model = model
        self.shared = list(model.trunk.parameters())
        self.heads = [p for n, p in model.named_parameters() if not n.startswith("trunk.")]
        self.opt = torch.optim.Adam(model.parameters(), lr=lr)
        self.gen = torch.Generator().manual_seed(seed)
        self.diversity_window = deque(maxlen=16)
        self.conflict_log = {}          # epoch -> list of per-step cosine matrices

    def start_epoch(self, epoch):
        for e in [e for e in self.conflict_log if e < epoch - 1]:
            del self.conflict_log[e]
        self.conflict_log[epoch] = []

    def train_step(self, epoch, x, y_cls, y_pos, y_seg):
        out_cls, out_pos, out_seg = self.model(x)
        losses = [
            F.cross_entropy(out_cls, y_cls),
            F.smooth_l1_loss(torch.sigmoid(out_pos), y_pos),
            F.binary_cross_entropy_with_logits(out_seg, y_seg),
        ]
        task_grads = []
        for loss in losses:
            g = torch.autograd.grad(loss, self.shared, retain_graph=True)
            task_grads.append(torch.cat([t.reshape(-1) for t in g]))
        G = torch.stack(task_grads)
        projected = G.clone()
        for i in range(len(losses)):
            for j in torch.randperm(len(losses), generator=self.gen).tolist():
                if i == j:
                    continue
                dot = projected[i] @ G[j]
                if dot < 0:
                    projected[i] -= dot / (G[j] @ G[j] + 1e-12) * G[j]
        merged = projected.sum(0)
        head_grads = torch.autograd.grad(sum(losses), self.heads)

        offset = 0
        for p in self.shared:
            n = p.numel()
            p.grad = merged[offset:offset + n].view_as(p).clone()
            offset += n
        for p, g in zip(self.heads, head_grads):
            p.grad = g
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)

        Gn = F.normalize(G, dim=1)
        self.conflict_log[epoch].append((Gn @ Gn.T).tolist())
        self.diversity_window.append(merged.detach().clone())
        return [l.item() for l in losses]

    def gradient_diversity(self):
        W = torch.stack(list(self.diversity_window))
        return (W.pow(2).sum() / W.sum(0).pow(2).sum()).item()


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x, cls, pos, masks = make_scenes(640, rng)
    x, cls, pos, masks = map(torch.from_numpy, (x, cls, pos, masks))
    model = MultiTaskNet()
    trainer = PCGradTrainer(model)
    batch, epochs = 32, 4
    steps_per_epoch = len(x) // batch
    print(f"start: rss={rss_mb():.1f} MB")
    t0, step = time.time(), 0
    for epoch in range(epochs):
        trainer.start_epoch(epoch)
        perm = torch.randperm(len(x), generator=trainer.gen)
        hist = []
        for b in range(steps_per_epoch):
            idx = perm[b * batch:(b + 1) * batch]
            hist.append(trainer.train_step(epoch, x[idx], cls[idx], pos[idx], masks[idx]))
            step += 1
            if step % 10 == 0:
                l = np.mean(hist[-10:], axis=0)
                conflicts = np.mean([np.array(c)[np.triu_indices(3, 1)] < 0 for c in trainer.conflict_log[epoch]])
                print(f"epoch {epoch} step {step:3d}  cls={l[0]:.3f} pos={l[1]:.4f} seg={l[2]:.3f}  "
                      f"conflict-rate={conflicts:.2f}  diversity={trainer.gradient_diversity():.3f}  "
                      f"{1000 * (time.time() - t0) / step:.0f} ms/step  rss={rss_mb():.1f} MB")
    print(f"end: rss={rss_mb():.1f} MB  wall={time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
