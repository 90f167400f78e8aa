# expect: leak
# holder: _global_forward_hooks|SparsityProbe.stats|SparsityProbe
# pattern: random hyper-parameter sweep of ReLU MLPs on a synthetic tabular task (each trial builds a fresh model + torch.optim.SGD with Nesterov momentum, ~7 ms steps, code in main() + run_trial() + a SparsityProbe class); to measure the dead-unit fraction behind every hidden Linear layer, including ones created inside the model builders, each trial's SparsityProbe registers itself with torch.nn.modules.module.register_module_forward_hook (the process-wide hook registry) and keys its running stats by the module object; the returned RemovableHandle is dropped and never removed, so torch's global _global_forward_hooks dict keeps every probe, each probe's stats dict keeps every module it has ever seen as a key, and every finished trial's model (weights + last gradients, ~3-7 MB) stays alive; old probes also keep firing on the new trials' modules, so each trial adds one more model to the pile for the whole run
# step_ms: 7
"""Random search over MLP width / depth / dropout / learning rate on a synthetic
tabular classification problem (a teacher-network labelled Gaussian mixture).

For every configuration we train a fresh network for a fixed budget of steps
and record validation accuracy together with the fraction of "dead" ReLU
activations, which we found to correlate with the learning-rate instabilities
in the larger models.  The sparsity probe uses torch's global module hook so
that it also sees activation modules created inside helper builders without
having to thread the probe through every constructor.

Usage:  python sweep_sparsity_hooks.py [--trials 22] [--steps 150]
"""
import argparse
import math
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules.module import register_module_forward_hook


N_FEATURES = 96
N_CLASSES = 12


def make_dataset(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    teacher = nn.Sequential(nn.Linear(N_FEATURES, 64), nn.Tanh(), nn.Linear(64, N_CLASSES))
    with torch.no_grad():
        for p in teacher.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.6)
        x = torch.randn(n, N_FEATURES, generator=g)
        x[:, :8] = x[:, :8] * 2.5 + 1.0
        y = teacher(x).argmax(1)
    return x, y


class SparsityProbe:
    """Running fraction of dead units behind every Linear layer that runs.

    A unit counts as dead on a batch when its pre-activation is <= 0 for every
    example of the batch, i.e. the following ReLU passes no gradient at all.
    """

    def __init__(self, tag):
        self.tag = tag
        self.stats = {}          # module -> [n_batches, dead_fraction_sum]
        self.enabled = True

    def __call__(self, module, inputs, output):
        if not self.enabled or not isinstance(module, nn.Linear):
            return
        if output.dim() != 2 or output.shape[1] == N_CLASSES:
            return               # skip the classifier head
        with torch.no_grad():
            frac = (output <= 0).all(dim=0).float().mean().item()
        entry = self.stats.setdefault(module, [0, 0.0])
        entry[0] += 1
        entry[1] += frac

    def attach(self):
        # global hook: also catches Linear layers created inside the block builders below
        register_module_forward_hook(self)
        return self

    def summary(self, model):
        own = [m for m in model.modules() if m in self.stats]
        if not own:
            return 0.0
        return float(np.mean([self.stats[m][1] / max(1, self.stats[m][0]) for m in own]))


def block(width_in, width_out, dropout):
    layers = [nn.Linear(width_in, width_out), nn.ReLU()]
    if dropout > 0:
        layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers)


def build_model(cfg):
    layers = []
    w = N_FEATURES
    for _ in range(cfg["depth"]):
        layers.append(block(w, cfg["width"], cfg["dropout"]))
        w = cfg["width"]
    layers.append(nn.Linear(w, N_CLASSES))
    return nn.Sequential(*layers)


def sample_config(rng):
    return {
        "width": rng.choice([384, 448, 512, 576]),
        "depth": rng.choice([3, 4]),
        "dropout": rng.choice([0.0, 0.1, 0.2]),
        "lr": 10 ** rng.uniform(-1.6, -0.6),
        "batch": rng.choice([96, 128]),
        "wd": rng.choice([0.0, 1e-4, 5e-4]),
    }


def run_trial(cfg, data, steps, seed):
    x_tr, y_tr, x_va, y_va = data
    torch.manual_seed(seed)
    model = build_model(cfg)
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9,
                          nesterov=True, weight_decay=cfg["wd"])
    probe = SparsityProbe(tag=f"trial{seed}").attach()
    n = x_tr.shape[0]
    losses = []
    model.train()
    for step in range(steps):
        lr = cfg["lr"] * 0.5 * (1 + math.cos(math.pi * step / steps))
        for group in opt.param_groups:
            group["lr"] = lr
        idx = torch.randint(0, n, (cfg["batch"],))
        logits = model(x_tr[idx])
        loss = F.cross_entropy(logits, y_tr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        acc = (model(x_va).argmax(1) == y_va).float().mean().item()
    probe.enabled = False
    return {"acc": acc, "dead": probe.summary(model), "final_loss": float(np.mean(losses[-5:]))}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=22)
    ap.add_argument("--steps", type=int, default=150, help="training steps per trial")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(1)     # small models: one thread per sweep worker is fastest
    rng = random.Random(args.seed)
    x, y = make_dataset(12000, seed=args.seed)
    data = (x[:10000], y[:10000], x[10000:], y[10000:])

    results = []
    t0 = time.time()
    for trial in range(args.trials):
        cfg = sample_config(rng)
        res = run_trial(cfg, data, args.steps, seed=1000 + trial)
        results.append((cfg, res))
        if trial % 5 == 4 or trial == args.trials - 1:
            best = max(results, key=lambda r: r[1]["acc"])
            print(f"[{time.time() - t0:6.1f}s] trial {trial + 1:3d}/{args.trials}  "
                  f"acc={res['acc']:.3f} dead={res['dead']:.3f}  best={best[1]['acc']:.3f} "
                  f"(w={best[0]['width']}, d={best[0]['depth']}, lr={best[0]['lr']:.3g})", flush=True)

    results.sort(key=lambda r: -r[1]["acc"])
    print("top-3 configurations:")
    for cfg, res in results[:3]:
        print(f"  acc={res['acc']:.3f} dead={res['dead']:.3f} {cfg}")


if __name__ == "__main__":
    main()
