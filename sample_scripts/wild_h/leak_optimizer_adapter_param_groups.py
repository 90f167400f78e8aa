# expect: leak
# holder: param_groups|state|opt
# pattern: domain-incremental fine-tuning with low-rank adapters on a frozen MLP backbone; for every new domain the script swaps in a fresh LowRankAdapter (model.adapter = ...) and calls opt.add_param_group(...) on the one long-lived Adam optimizer; the replaced adapters are gone from the model but stay referenced by opt.param_groups and their exp_avg/exp_avg_sq by opt.state, ~1.5 MB per domain
# step_ms: 25
"""Domain-incremental adaptation with LoRA-style adapters.

A backbone MLP is first trained on a source domain and then frozen.  The
stream afterwards presents a sequence of shifted domains (rotated and
rescaled inputs, shuffled feature groups).  For each domain we attach a
new rank-64 adapter around the middle layer and adapt for a short budget
of steps together with the shared classifier head, then report accuracy on
that domain's held-out batch.  Keeping one optimizer for the whole stream
preserves the head's Adam moments across domains.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

D_IN, D_HID, N_CLS = 128, 1024, 16
RANK = 64
BATCH = 256
SOURCE_STEPS = 60
STEPS_PER_DOMAIN = 20
N_DOMAINS = 40


class LowRankAdapter(nn.Module):
    def __init__(self, dim, rank, alpha=16.0):
        super().__init__()
        self.down = nn.Parameter(torch.randn(dim, rank) / dim ** 0.5)
        self.up = nn.Parameter(torch.zeros(rank, dim))
        self.scale = alpha / rank

    def forward(self, h):
        return h + (h @ self.down @ self.up) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(D_IN, D_HID)
        self.mid = nn.Linear(D_HID, D_HID)
        self.head = nn.Linear(D_HID, N_CLS)
        self.adapter = nn.Identity()

    def forward(self, x):
        h = F.gelu(self.inp(x))
        h = self.adapter(F.gelu(self.mid(h)))
        return self.head(h)


class DomainStream:
    """Gaussian-mixture source task + a random input transform per domain."""

    def __init__(self, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.centers = torch.randn(N_CLS, D_IN, generator=g) * 1.5

    def sample(self, n, transform=None):
        y = torch.randint(0, N_CLS, (n,))
        x = self.centers[y] + torch.randn(n, D_IN)
        if transform is not None:
            q, scale, perm = transform
            x = (x @ q) * scale
            x = x[:, perm]
        return x, y

    def new_domain(self, k):
        g = torch.Generator().manual_seed(1000 + k)
        angle = 0.15 + 0.02 * k
        a = torch.randn(D_IN, D_IN, generator=g) * angle
        q = torch.linalg.matrix_exp(a - a.T)
        scale = 0.7 + 0.6 * torch.rand(D_IN, generator=g)
        perm = torch.arange(D_IN)
        blocks = perm.view(8, -1)[torch.randperm(8, generator=g)]
        return q, scale, blocks.reshape(-1)


@torch.no_grad()
def accuracy(model, x, y):
    return (model(x).argmax(1) == y).float().mean().item()


def main():
    stream = DomainStream()
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(SOURCE_STEPS):
        x, y = stream.sample(BATCH)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    xs, ys = stream.sample(1024)
    print(f"source acc {accuracy(model, xs, ys):.3f} ({time.time() - t0:.1f}s)", flush=True)

    for p in list(model.inp.parameters()) + list(model.mid.parameters()):
        p.requires_grad_(False)

    for k in range(N_DOMAINS):
        tf = stream.new_domain(k)
        xv, yv = stream.sample(1024, tf)
        before = accuracy(model, xv, yv)
        model.adapter = LowRankAdapter(D_HID, RANK)
        opt.add_param_group({"params": list(model.adapter.parameters()), "lr": 3e-3})
        for step in range(STEPS_PER_DOMAIN):
            x, y = stream.sample(BATCH, tf)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        after = accuracy(model, xv, yv)
        if k % 2 == 1:
            print(f"domain {k:2d}  acc before {before:.3f}  after {after:.3f}  loss {loss.item():.3f}  "
                  f"({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
