# expect: leak
# holder: all_embeddings|all_labels
# pattern: inference-only drift monitor (model.eval(), torch.no_grad(), no optimizer) scores a stream of windows; EmbeddingDriftMonitor.update() does self.all_embeddings = torch.cat([self.all_embeddings, emb]) (plus labels) so a final PCA report can be made, and nothing ever trims it, so the attribute grows by one 256x64 float32 block (~66 KB) per window
# step_ms: 27
"""Embedding drift monitor for a deployed tabular encoder.

A frozen encoder maps incoming 512-dim feature rows to 64-dim embeddings.
For every window of traffic we compare the window's embedding statistics
with a reference sample taken at deployment time (mean shift and an RBF
MMD estimate) and raise an alert when the shift is large.  At the end of
the run ``report()`` does a PCA over everything that was scored so the
on-call person can see which directions drifted.

The traffic is simulated: the input distribution slowly rotates and its
mean wanders, which is roughly what we see in production.
"""
import math
import time

import torch
from torch import nn

torch.set_num_threads(1)
torch.manual_seed(0)

IN_DIM = 512
EMB_DIM = 64
WINDOW = 256
N_WINDOWS = 800


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(IN_DIM, 768), nn.GELU(),
            nn.Linear(768, 768), nn.GELU(),
            nn.Linear(768, EMB_DIM),
        )

    def forward(self, x):
        z = self.net(x)
        return z / z.norm(dim=1, keepdim=True).clamp_min(1e-6)


def rbf_mmd(a, b, gamma=1.0):
    kaa = torch.exp(-gamma * torch.cdist(a, a).pow(2)).mean()
    kbb = torch.exp(-gamma * torch.cdist(b, b).pow(2)).mean()
    kab = torch.exp(-gamma * torch.cdist(a, b).pow(2)).mean()
    return (kaa + kbb - 2 * kab).item()


class EmbeddingDriftMonitor:
    def __init__(self, reference, alert_threshold=0.05):
        self.reference = reference
        self.ref_mean = reference.mean(0)
        self.alert_threshold = alert_threshold
        self.all_embeddings = torch.empty(0, reference.shape[1])
        self.all_labels = torch.empty(0, dtype=torch.long)
        self.n_alerts = 0

    @torch.no_grad()
    def update(self, emb, labels):
        self.all_embeddings = torch.cat([self.all_embeddings, emb])
        self.all_labels = torch.cat([self.all_labels, labels])
        shift = (emb.mean(0) - self.ref_mean).norm().item()
        mmd = rbf_mmd(emb[:128], self.reference[:128])
        if mmd > self.alert_threshold:
            self.n_alerts += 1
        return shift, mmd

    @torch.no_grad()
    def report(self):
        x = self.all_embeddings - self.all_embeddings.mean(0)
        cov = x.T @ x / max(1, x.shape[0] - 1)
        evals = torch.linalg.eigvalsh(cov).flip(0)
        explained = (evals[:5] / evals.sum()).tolist()
        return {"n_scored": x.shape[0], "alerts": self.n_alerts,
                "top5_explained": [round(v, 3) for v in explained]}


class TrafficSimulator:
    def __init__(self, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.g = g
        self.base = torch.randn(IN_DIM, IN_DIM, generator=g) / math.sqrt(IN_DIM)
        self.drift_dir = torch.randn(IN_DIM, generator=g)
        self.t = 0

    def window(self):
        self.t += 1
        z = torch.randn(WINDOW, IN_DIM, generator=self.g)
        x = z @ self.base
        x += 0.002 * self.t * self.drift_dir
        labels = (x[:, :8].sum(1) > 0).long() + 2 * (x[:, 8:16].sum(1) > 0).long()
        return x, labels


def main():
    encoder = Encoder().eval()
    sim = TrafficSimulator()
    with torch.no_grad():
        ref_x, _ = sim.window()
        reference = encoder(ref_x)
    monitor = EmbeddingDriftMonitor(reference)

    t0 = time.time()
    last_print = t0
    for w in range(N_WINDOWS):
        x, labels = sim.window()
        with torch.no_grad():
            emb = encoder(x)
        shift, mmd = monitor.update(emb, labels)
        if time.time() - last_print > 1.0:
            last_print = time.time()
            print(f"window {w:4d} mean-shift {shift:.3f} mmd {mmd:.4f} "
                  f"alerts {monitor.n_alerts} ({last_print - t0:.1f}s)", flush=True)
    print("drift report:", monitor.report())
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
