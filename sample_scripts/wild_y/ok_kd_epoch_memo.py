# expect: no_leak
# holder:
# pattern: FitNets + logit knowledge distillation of a frozen random-features teacher (ridge-regression readout, solved in closed form) into a small MLP student on synthetic tabular data, with a hand-written momentum-SGD update under torch.no_grad() (no torch.optim; ~5 ms per step of 128 rows, code in main() + run_epoch() + module-level helpers). Every epoch draws a fresh augmentation and batch order, and trains two passes over the same batches (hint regression, then KD), so the teacher's hint features and logits for each batch are memoised with `@functools.lru_cache(maxsize=None)` on teacher_batch(b). That looks like the unbounded-lru_cache-of-tensors leak, but teacher_batch is a nested function defined inside run_epoch(): the cache (one epoch's ~13 MB of teacher outputs) belongs to that local function object and is freed when run_epoch() returns, so memory is a sawtooth with the same peak every epoch (and the allocator reuses the space), flat after the first epoch.
# step_ms: 5
"""Knowledge distillation (hints + logits) with a hand-written SGD update."""
import functools
import time

import numpy as np
import psutil
import torch
import torch.nn.functional as F

N, D, C, B = 16000, 64, 10, 128


def rss_mb():
    return psutil.Process().memory_info().rss / 2**20


def make_data(rng):
    centers = rng.normal(scale=2.0, size=(C * 3, D))
    comp = rng.integers(C * 3, size=N)
    x = centers[comp] + rng.normal(size=(N, D))
    x = np.tanh(x @ rng.normal(scale=0.3, size=(D, D))) + 0.1 * x
    y = comp % C
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


class RandomFeatureTeacher:
    def __init__(self, x, y, width=1536, hint_dim=384, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.R = torch.randn(D, width, generator=g) / D ** 0.5
        self.hint_dim = hint_dim
        H = torch.relu(x @ self.R)
        Y = F.one_hot(y, C).float() * 4.0
        A = H.T @ H + 10.0 * torch.eye(width)
        self.W = torch.linalg.solve(A, H.T @ Y)

    def __call__(self, x):
        h = torch.relu(x @ self.R)
        return h[:, :self.hint_dim], h @ self.W


def init_student(seed=0, hidden=512, hint_dim=384):
    g = torch.Generator().manual_seed(seed)

    def lin(i, o):
        return [(torch.randn(i, o, generator=g) * (2 / i) ** 0.5).requires_grad_(), torch.zeros(o, requires_grad=True)]

    params = {}
    for name, (i, o) in {"l1": (D, hidden), "l2": (hidden, hidden), "out": (hidden, C), "hint": (hidden, hint_dim)}.items():
        params[name + ".w"], params[name + ".b"] = lin(i, o)
    return params


def student_forward(p, x):
    h = torch.relu(x @ p["l1.w"] + p["l1.b"])
    h = torch.relu(h @ p["l2.w"] + p["l2.b"])
    return h @ p["hint.w"] + p["hint.b"], h @ p["out.w"] + p["out.b"]


def sgd_step(params, momentum, lr, wd=1e-4):
    with torch.no_grad():
        for k, p in params.items():
            if p.grad is None:
                continue
            g = p.grad + wd * p
            momentum[k].mul_(0.9).add_(g)
            p -= lr * momentum[k]
            p.grad = None


def run_epoch(epoch, x, y, teacher, params, momentum, lr, temperature=3.0):
    g = torch.Generator().manual_seed(1000 + epoch)
    xa = x + 0.15 * torch.randn(x.shape, generator=g)
    xa = xa * (torch.rand(x.shape, generator=g) > 0.1)
    perm = torch.randperm(len(x), generator=g)
    n_batches = len(x) // B

    @functools.lru_cache(maxsize=None)
    def teacher_batch(b):
        idx = perm[b * B:(b + 1) * B]
        with torch.no_grad():
            return teacher(xa[idx])

    stats = {"hint": [], "kd": [], "acc": []}
    for phase in ("hint", "kd"):
        for b in range(n_batches):
            idx = perm[b * B:(b + 1) * B]
            t_hint, t_logits = teacher_batch(b)
            s_hint, s_logits = student_forward(params, xa[idx])
            if phase == "hint":
                loss = F.mse_loss(s_hint, t_hint)
            else:
                kd = F.kl_div(F.log_softmax(s_logits / temperature, 1), F.softmax(t_logits / temperature, 1),
                              reduction="batchmean") * temperature ** 2
                loss = 0.7 * kd + 0.3 * F.cross_entropy(s_logits, y[idx])
                stats["acc"].append((s_logits.argmax(1) == y[idx]).float().mean().item())
            loss.backward()
            sgd_step(params, momentum, lr)
            stats[phase].append(loss.item())
    return {k: float(np.mean(v)) for k, v in stats.items()}, teacher_batch.cache_info().currsize


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x, y = make_data(rng)
    teacher = RandomFeatureTeacher(x, y)
    with torch.no_grad():
        teacher_acc = (teacher(x)[1].argmax(1) == y).float().mean().item()
    params = init_student()
    momentum = {k: torch.zeros_like(p) for k, p in params.items()}
    epochs = 11
    print(f"teacher train acc={teacher_acc:.3f}")
    print(f"start: rss={rss_mb():.1f} MB")
    t0 = time.time()
    steps = 0
    for epoch in range(epochs):
        lr = 0.02 * 0.5 * (1 + np.cos(np.pi * epoch / epochs))
        stats, cached = run_epoch(epoch, x, y, teacher, params, momentum, lr)
        steps += 2 * (len(x) // B)
        print(f"epoch {epoch:2d}  hint={stats['hint']:.4f}  kd={stats['kd']:.4f}  acc={stats['acc']:.3f}  "
              f"cached_batches={cached}  {1000 * (time.time() - t0) / steps:.2f} ms/step  rss={rss_mb():.1f} MB")
    print(f"end: rss={rss_mb():.1f} MB  wall={time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
