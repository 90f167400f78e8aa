# expect: leak
# holder: _versions|registry
# pattern: old model versions kept by a registry object (dict of deep copies), "for rollback"
# step_ms: 1.3
"""Online click-through-rate model: learns continuously from a drifting stream
and "publishes" a new model version every 50 updates, so that a serving
process could roll back to any version.

``ModelRegistry.publish()`` deep-copies the model into ``self._versions``,
keyed by version string, and only ``rollback()`` ever reads old entries.
Nothing evicts them, so the registry holds every version ever published
(~0.9 MB of embedding tables each).

Fix: keep the last N versions (``OrderedDict`` + ``popitem(last=False)``), or
save state_dicts to disk and keep only paths.
"""

import argparse
import copy
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    n_users: int = 2000
    n_items: int = 1500
    dim: int = 64
    batch: int = 2048
    lr: float = 0.1
    publish_every: int = 50
    updates: int = 10000


class CTRModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.user = nn.Embedding(cfg.n_users, cfg.dim)
        self.item = nn.Embedding(cfg.n_items, cfg.dim)
        self.bias = nn.Embedding(cfg.n_items, 1)
        nn.init.normal_(self.user.weight, std=0.05)
        nn.init.normal_(self.item.weight, std=0.05)
        nn.init.zeros_(self.bias.weight)

    def forward(self, u, i):
        return (self.user(u) * self.item(i)).sum(-1) + self.bias(i).squeeze(-1)


class ModelRegistry:
    def __init__(self):
        self._versions = {}
        self.current = None

    def publish(self, model, version, metrics):
        snap = copy.deepcopy(model).eval()
        for p in snap.parameters():
            p.requires_grad_(False)
        self._versions[version] = {"model": snap, "metrics": dict(metrics), "ts": time.time()}
        self.current = version

    def rollback(self, version):
        self.current = version
        return self._versions[version]["model"]

    def __len__(self):
        return len(self._versions)


class ClickStream:
    """Users like items whose latent taste is close to theirs; tastes drift slowly."""

    def __init__(self, cfg, seed):
        self.g = torch.Generator().manual_seed(seed)
        self.cfg = cfg
        self.u_taste = torch.randn(cfg.n_users, 8, generator=self.g)
        self.i_taste = torch.randn(cfg.n_items, 8, generator=self.g)

    def next_batch(self):
        c = self.cfg
        u = torch.randint(0, c.n_users, (c.batch,), generator=self.g)
        i = torch.randint(0, c.n_items, (c.batch,), generator=self.g)
        score = (self.u_taste[u] * self.i_taste[i]).sum(-1) / 2
        y = (torch.rand(c.batch, generator=self.g) < torch.sigmoid(score)).float()
        self.u_taste += 0.001 * torch.randn(self.u_taste.shape, generator=self.g)  # drift
        return u, i, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", type=int, default=Config.updates)
    ap.add_argument("--publish-every", type=int, default=Config.publish_every)
    a = ap.parse_args()
    cfg = Config(updates=a.updates, publish_every=a.publish_every)

    torch.set_num_threads(1)
    torch.manual_seed(1)
    stream = ClickStream(cfg, seed=1)
    model = CTRModel(cfg)
    opt = torch.optim.Adagrad(model.parameters(), lr=cfg.lr)
    registry = ModelRegistry()

    auc_proxy = 0.5
    t0 = time.time()
    for upd in range(1, cfg.updates + 1):
        u, i, y = stream.next_batch()
        logit = model(u, i)
        loss = F.binary_cross_entropy_with_logits(logit, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            acc = ((logit > 0).float() == y).float().mean().item()
        auc_proxy = 0.99 * auc_proxy + 0.01 * acc
        if upd % cfg.publish_every == 0:
            registry.publish(model, f"v{upd // cfg.publish_every:04d}", {"acc": auc_proxy})
        if upd % 1000 == 0:
            print(
                f"[{time.time() - t0:6.1f}s] update {upd} acc~{auc_proxy:.3f} "
                f"versions={len(registry)}"
            )
    print("serving", registry.current)


if __name__ == "__main__":
    main()
