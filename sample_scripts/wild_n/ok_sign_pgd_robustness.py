# expect: no_leak
# pattern: robustness audit (no optimizer, parameters frozen with requires_grad_(False)) runs an L-inf PGD attack per batch and epsilon: the perturbation is a leaf with requires_grad, each iteration takes torch.autograd.grad(loss, delta) and rebuilds delta from the detached update, so every iteration's graph is freed; results are folded into integer counters and a fixed-size heapq of the 16 most confident adversarial mistakes (heappushpop, copies of single images), so memory is flat (small CNN traffic-sign classifier, inference + input gradients only)
# step_ms: 245
"""Adversarial robustness audit of a traffic-sign classifier (PGD, L-inf).

For every evaluation batch and every epsilon in the sweep, a projected
gradient descent attack (Madry et al., 2018) with a random start is run
against the frozen classifier, and clean / robust accuracy are tallied per
class.  The 16 most confident adversarial mistakes are kept for the report.

The sign images are rendered synthetically (coloured shapes with pictograms),
and if no checkpoint is given the classifier is the freshly initialised
architecture with BatchNorm statistics calibrated on clean data and a linear
head fitted in closed form (ridge regression) on its frozen features -- the
smoke-test configuration of the CI pipeline.
"""
import argparse
import heapq
import itertools
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

N_CLASSES = 10
SIZE = 24


def render_signs(rng, n):
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    labels = rng.integers(0, N_CLASSES, size=n)
    imgs = np.empty((n, 3, SIZE, SIZE), dtype=np.float32)
    palette = np.array([[0.8, 0.1, 0.1], [0.1, 0.2, 0.8], [0.9, 0.8, 0.1], [0.9, 0.9, 0.9], [0.1, 0.6, 0.2]])
    for i, c in enumerate(labels):
        cx, cy = rng.uniform(10, 14, size=2)
        rad = rng.uniform(7, 10)
        shape = c % 3
        if shape == 0:
            mask = (xx - cx) ** 2 + (yy - cy) ** 2 < rad ** 2
        elif shape == 1:
            mask = (np.abs(xx - cx) < rad * 0.8) & (np.abs(yy - cy) < rad * 0.8)
        else:
            mask = (yy - cy > -rad) & (np.abs(xx - cx) < (yy - cy + rad) * 0.6) & (yy - cy < rad * 0.8)
        bg = rng.uniform(0.2, 0.7, size=3)[:, None, None]
        img = np.broadcast_to(bg, (3, SIZE, SIZE)).copy()
        img[:, mask] = palette[c % len(palette)][:, None]
        # pictogram: a bar whose angle depends on the class
        ang = np.pi * c / N_CLASSES
        bar = np.abs((xx - cx) * np.sin(ang) - (yy - cy) * np.cos(ang)) < 1.2
        img[:, bar & mask] = 0.05
        img += rng.normal(0, 0.04, size=img.shape)
        imgs[i] = np.clip(img, 0, 1)
    return torch.from_numpy(imgs), torch.from_numpy(labels.astype(np.int64))


class SignNet(nn.Module):
    def __init__(self):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                                 nn.MaxPool2d(2))

        self.features = nn.Sequential(block(3, 16), block(16, 32), block(32, 48), nn.Flatten())
        self.head = nn.Linear(48 * 3 * 3, N_CLASSES)
        self.register_buffer("mean", torch.tensor([0.5, 0.5, 0.5]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.25, 0.25, 0.25]).view(1, 3, 1, 1))

    def embed(self, x):
        return self.features((x - self.mean) / self.std)

    def forward(self, x):
        return self.head(self.embed(x))


@torch.no_grad()
def fit_head_closed_form(model, x, y, ridge=1e-2):
    """Ridge-regression probe on one-hot targets (no SGD needed for a linear head)."""
    f = torch.cat([model.embed(xb) for xb in x.split(500)])
    mu = f.mean(0)
    fc = f - mu
    targets = F.one_hot(y, N_CLASSES).float() * 2 - 1
    gram = fc.T @ fc + ridge * len(f) * torch.eye(f.shape[1])
    w = torch.linalg.solve(gram, fc.T @ targets)
    model.head.weight.copy_(w.T)
    model.head.bias.copy_(-(mu @ w))


def pgd(model, x, y, eps, alpha, steps, gen):
    delta = (torch.rand(x.shape, generator=gen) * 2 - 1) * eps
    delta = ((x + delta).clamp(0, 1) - x).requires_grad_(True)
    for _ in range(steps):
        loss = F.cross_entropy(model(x + delta), y)
        grad, = torch.autograd.grad(loss, delta)
        delta = (delta.detach() + alpha * grad.sign()).clamp(-eps, eps)
        delta = ((x + delta).clamp(0, 1) - x).requires_grad_(True)
    return (x + delta).detach()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--batches", type=int, default=80)
    ap.add_argument("--batch-size", type=int, default=40)
    ap.add_argument("--eps", default="2,4,8", help="L-inf radii in 1/255 units")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--keep-worst", type=int, default=16)
    ap.add_argument("--log-every", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    eps_list = [float(e) / 255 for e in args.eps.split(",")]

    model = SignNet()
    if args.checkpoint:
        model.load_state_dict(torch.load(args.checkpoint, map_location="cpu"))
    else:
        model.train()
        with torch.no_grad():
            for _ in range(10):
                model(render_signs(rng, 128)[0])
        model.eval()
        fit_head_closed_form(model, *render_signs(rng, 4000))
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)

    clean_correct = 0
    robust_correct = {e: 0 for e in eps_list}
    per_class = np.zeros((len(eps_list), N_CLASSES, 2), dtype=np.int64)  # (correct, total)
    worst = []  # min-heap of (confidence, tiebreak, image, true, pred)
    tiebreak = itertools.count()
    seen = 0
    t0 = time.time()
    for b in range(1, args.batches + 1):
        x, y = render_signs(rng, args.batch_size)
        with torch.no_grad():
            clean_correct += (model(x).argmax(1) == y).sum().item()
        for ei, eps in enumerate(eps_list):
            x_adv = pgd(model, x, y, eps, alpha=2.5 * eps / args.steps, steps=args.steps, gen=gen)
            with torch.no_grad():
                probs = model(x_adv).softmax(1)
            conf, pred = probs.max(1)
            ok = pred == y
            robust_correct[eps] += ok.sum().item()
            np.add.at(per_class[ei, :, 0], y.numpy(), ok.numpy().astype(np.int64))
            np.add.at(per_class[ei, :, 1], y.numpy(), 1)
            if eps == eps_list[-1]:
                for j in torch.nonzero(~ok).flatten().tolist():
                    item = (conf[j].item(), next(tiebreak), x_adv[j].clone(), int(y[j]), int(pred[j]))
                    if len(worst) < args.keep_worst:
                        heapq.heappush(worst, item)
                    else:
                        heapq.heappushpop(worst, item)
        seen += len(y)
        if b % args.log_every == 0:
            rob = "  ".join(f"eps={e * 255:.0f}/255: {robust_correct[e] / seen:.3f}" for e in eps_list)
            print(f"batch {b}/{args.batches}  clean={clean_correct / seen:.3f}  {rob}  ({time.time() - t0:.1f}s)")

    class_acc = per_class[..., 0] / np.maximum(per_class[..., 1], 1)
    print("weakest classes at largest eps:", np.argsort(class_acc[-1])[:3].tolist())
    print("most confident mistakes:", [(round(c, 3), t, p) for c, _, _, t, p in sorted(worst, reverse=True)[:5]])
    print("done")


if __name__ == "__main__":
    main()
