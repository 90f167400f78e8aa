# expect: leak
# holder: history|TRACKER
# pattern: module-level MetricTracker stores values in a defaultdict(list) whose key is an f-string that (by mistake) includes the step number, so every step creates new keys and new one-element lists instead of appending to a few series (numpy MLP, hand-written SGD, ~1 ms steps)
# step_ms: 1
"""Two-layer MLP trained with hand-written backprop in NumPy, with a tiny
experiment tracker in the spirit of wandb/TensorBoard scalars.

``TRACKER.log(tag, value, step)`` is supposed to build one series per tag,
``history["train/loss"] == [(step, wall_time, value), ...]``, and
``summary()`` reports the mean of the last N values of each series.

Why it leaks: the key is built as ``f"{tag}@{step}"`` (it was meant to be
the *label* printed next to the value), so ``history`` gets a brand-new
key -- a new string, a new one-element list and a (step, time, value)
tuple -- for every tag at every step.  Ten tags per step at ~1 ms per step
is ~10,000 dict entries per second, a few hundred bytes each: small but
steady growth, and ``summary()`` silently reports single values.

Fix: key by ``tag`` only.
"""
import os
import time
from collections import defaultdict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # tiny matmuls: threads only hurt
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

N_FEATURES = 96
HIDDEN = 192
N_CLASSES = 10
BATCH = 128
STEPS = 24_000
LR = 0.05
WD = 1e-4


class MetricTracker:
    def __init__(self):
        self.history = defaultdict(list)

    def log(self, tag, value, step):
        self.history[f"{tag}@{step}"].append((step, time.time(), float(value)))

    def summary(self, last=100):
        out = {}
        for key, vals in self.history.items():
            tag = key.split("@")[0]
            out.setdefault(tag, []).extend(vals[-last:])
        return {tag: float(np.mean([val for _, _, val in v[-last:]])) for tag, v in out.items()}


TRACKER = MetricTracker()


def make_dataset(rng, n=80_000):
    centers = rng.normal(0, 0.45, size=(N_CLASSES, N_FEATURES))
    y = rng.integers(0, N_CLASSES, size=n)
    X = centers[y] + rng.normal(0, 2.0, size=(n, N_FEATURES))
    return X.astype(np.float32), y


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def main():
    rng = np.random.default_rng(0)
    X, y = make_dataset(rng)
    Xval, yval = X[-4000:], y[-4000:]
    X, y = X[:-4000], y[:-4000]

    W1 = (rng.normal(0, 1, (N_FEATURES, HIDDEN)) * np.sqrt(2 / N_FEATURES)).astype(np.float32)
    b1 = np.zeros(HIDDEN, np.float32)
    W2 = (rng.normal(0, 1, (HIDDEN, N_CLASSES)) * np.sqrt(1 / HIDDEN)).astype(np.float32)
    b2 = np.zeros(N_CLASSES, np.float32)
    params = [W1, b1, W2, b2]
    velocity = [np.zeros_like(p) for p in params]

    t0 = time.time()
    for step in range(STEPS):
        idx = rng.integers(0, len(X), size=BATCH)
        xb, yb = X[idx], y[idx]

        h_pre = xb @ W1 + b1
        h = np.maximum(h_pre, 0)
        p = softmax(h @ W2 + b2)
        loss = -np.log(p[np.arange(BATCH), yb] + 1e-9).mean()

        d_logits = p.copy()
        d_logits[np.arange(BATCH), yb] -= 1
        d_logits /= BATCH
        gW2 = h.T @ d_logits + WD * W2
        gb2 = d_logits.sum(0)
        dh = (d_logits @ W2.T) * (h_pre > 0)
        gW1 = xb.T @ dh + WD * W1
        gb1 = dh.sum(0)
        grads = [gW1, gb1, gW2, gb2]

        lr = LR * 0.5 * (1 + np.cos(np.pi * step / STEPS))
        for prm, g, v in zip(params, grads, velocity):
            v *= 0.9
            v += g
            prm -= lr * v

        acc = (p.argmax(1) == yb).mean()
        gnorm = np.sqrt(sum(float((g * g).sum()) for g in grads))
        TRACKER.log("train/loss", loss, step)
        TRACKER.log("train/acc", acc, step)
        TRACKER.log("train/grad_norm", gnorm, step)
        TRACKER.log("train/lr", lr, step)
        TRACKER.log("train/w1_norm", np.linalg.norm(W1), step)
        TRACKER.log("train/w2_norm", np.linalg.norm(W2), step)
        TRACKER.log("train/dead_relu", (h == 0).mean(), step)
        TRACKER.log("train/max_prob", p.max(1).mean(), step)
        TRACKER.log("train/margin", np.diff(np.sort(p, axis=1)[:, -2:], axis=1).mean(), step)
        TRACKER.log("train/update_ratio", lr * np.linalg.norm(velocity[0]) / np.linalg.norm(W1), step)

        if step % 1000 == 0:
            hv = np.maximum(Xval @ W1 + b1, 0)
            val_acc = ((hv @ W2 + b2).argmax(1) == yval).mean()
            TRACKER.log("val/acc", val_acc, step)
            s = TRACKER.summary()
            print(f"step {step:6d}  loss {s['train/loss']:.3f}  acc {s['train/acc']:.3f}  "
                  f"val_acc {val_acc:.3f}  keys {len(TRACKER.history)}  {time.time() - t0:.1f}s",
                  flush=True)
    print("done", f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
