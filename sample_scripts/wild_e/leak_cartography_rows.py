# expect: leak
# holder: rows
# pattern: hand-written SGD with momentum (no torch.optim) on tabular data; for "dataset cartography" every step appends a dict of small detached tensors (sample indices, p(true label), correctness, loss, grad norm) to a main()-local list of rows that is only turned into a table at the end (each row is tiny, ~8 KB, but at ~1 ms per step that is several MB/s)
# step_ms: 1
"""Tabular MLP trained with hand-written SGD + momentum, logging a data map.

Dataset cartography (Swayamdipta et al., 2020) needs, for every training
example, the model's confidence in the true label at every epoch.  Instead of
a preallocated ``[epochs, n_samples]`` array, this script logs one "row" per
step -- a dict with the batch's sample indices, p(true), correctness, the loss
and the gradient norm, all as (detached) tensors -- and builds the per-sample
statistics from the rows at the very end.

Why it leaks: ``rows`` is a list in ``main()`` that gains one dict per step
(several small tensors, ~8 KB incl. tensor overhead) and is only consumed
after training, so memory grows linearly for the whole run.  Each element
looks tiny, which is why it goes unnoticed.

Fix: write into preallocated tensors (``conf[epoch, idx] = p_true``), or
flush the rows to disk each epoch.
"""
import math
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

N_TRAIN = 30_000
N_FEATURES = 40
N_CLASSES = 5
HIDDEN = 64
BATCH = 128
EPOCHS = 90
LR = 0.05
MOMENTUM = 0.9


def make_data():
    g = torch.Generator().manual_seed(0)
    centers = torch.randn(N_CLASSES, N_FEATURES, generator=g) * 1.2
    y = torch.randint(0, N_CLASSES, (N_TRAIN,), generator=g)
    x = centers[y] + torch.randn(N_TRAIN, N_FEATURES, generator=g) * 2.0
    flip = torch.rand(N_TRAIN, generator=g) < 0.08  # label noise: the "hard to learn" region
    y[flip] = torch.randint(0, N_CLASSES, (int(flip.sum()),), generator=g)
    return (x - x.mean(0)) / x.std(0), y


def init_params():
    w1 = torch.randn(N_FEATURES, HIDDEN) * math.sqrt(2.0 / N_FEATURES)
    w2 = torch.randn(HIDDEN, N_CLASSES) * math.sqrt(1.0 / HIDDEN)
    params = [w1, torch.zeros(HIDDEN), w2, torch.zeros(N_CLASSES)]
    for p in params:
        p.requires_grad_(True)
    return params


def forward(params, x):
    w1, b1, w2, b2 = params
    return F.relu(x @ w1 + b1) @ w2 + b2


def main():
    x, y = make_data()
    params = init_params()
    velocity = [torch.zeros_like(p) for p in params]
    rows = []

    g = torch.Generator().manual_seed(1)
    step = 0
    t0 = time.time()
    for epoch in range(EPOCHS):
        lr = LR * 0.5 * (1 + math.cos(math.pi * epoch / EPOCHS))
        perm = torch.randperm(N_TRAIN, generator=g)
        for start in range(0, N_TRAIN - BATCH + 1, BATCH):
            idx = perm[start:start + BATCH]
            logits = forward(params, x[idx])
            loss = F.cross_entropy(logits, y[idx])
            for p in params:
                p.grad = None
            loss.backward()

            with torch.no_grad():
                grad_norm = torch.sqrt(sum((p.grad ** 2).sum() for p in params))
                for p, v in zip(params, velocity):
                    v.mul_(MOMENTUM).add_(p.grad, alpha=1.0)
                    p.sub_(v, alpha=lr)
                probs = logits.detach().softmax(1)
                p_true = probs.gather(1, y[idx, None]).squeeze(1)
                rows.append({
                    "epoch": epoch,
                    "step": step,
                    "idx": idx,
                    "p_true": p_true,
                    "correct": probs.argmax(1) == y[idx],
                    "loss": loss.detach(),
                    "grad_norm": grad_norm,
                })
            step += 1

        if (epoch + 1) % 10 == 0:
            recent = rows[-(N_TRAIN // BATCH):]
            acc = torch.cat([r["correct"] for r in recent]).float().mean().item()
            print(f"epoch {epoch + 1:3d}  loss {loss.item():.4f}  acc {acc:.3f}  lr {lr:.4f}  "
                  f"{(time.time() - t0) * 1000 / step:.2f} ms/step", flush=True)

    # build the data map: mean confidence and variability per training example
    conf_sum = torch.zeros(N_TRAIN)
    conf_sq = torch.zeros(N_TRAIN)
    seen = torch.zeros(N_TRAIN)
    for r in rows:
        conf_sum.index_add_(0, r["idx"], r["p_true"])
        conf_sq.index_add_(0, r["idx"], r["p_true"] ** 2)
        seen.index_add_(0, r["idx"], torch.ones_like(r["p_true"]))
    mean = conf_sum / seen.clamp_min(1)
    var = (conf_sq / seen.clamp_min(1) - mean ** 2).clamp_min(0)
    hard = (mean < 0.3).float().mean().item()
    ambiguous = (var.sqrt() > 0.2).float().mean().item()
    print(f"data map: {hard:.1%} hard-to-learn, {ambiguous:.1%} ambiguous examples")


if __name__ == "__main__":
    main()
