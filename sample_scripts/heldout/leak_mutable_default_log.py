# expect: leak
# holder: log_step|_pending|__defaults__
# pattern: mutable default argument used as a metrics buffer (NumPy, no torch, no optimizer)
# step_ms: 0.7
"""Sentiment classifier in pure NumPy: hashed bag-of-words + softmax regression,
trained with hand-written minibatch SGD. No torch at all.

Metrics go through ``log_step(step, metrics, _pending=[])``, which was meant to
batch up lines and "flush" them every ``flush_every`` calls. The flush writes
the last ``flush_every`` entries but never empties ``_pending`` -- and since a
default argument is created once, at ``def`` time, the list lives as long as
the function and grows by one dict (with the per-example losses, ~2 KiB) every step.

Fix: ``_pending=None`` then ``_pending = [] if _pending is None else _pending``,
or better a module-level buffer that is cleared after the flush.
"""

import argparse
import io
import json
import time

import numpy as np

VOCAB = [f"w{i}" for i in range(3000)]
POS = {f"w{i}" for i in range(0, 3000, 7)}
NEG = {f"w{i}" for i in range(3, 3000, 11)}


def make_corpus(n_docs, rng):
    docs, labels = [], []
    for _ in range(n_docs):
        n = rng.integers(8, 40)
        words = list(rng.choice(VOCAB, size=n))
        score = sum(w in POS for w in words) - sum(w in NEG for w in words)
        docs.append(words)
        labels.append(2 if score > 1 else (0 if score < -1 else 1))
    return docs, np.array(labels)


def featurize(docs, dim):
    X = np.zeros((len(docs), dim), dtype=np.float32)
    for i, words in enumerate(docs):
        for w in words:
            X[i, hash(w) % dim] += 1.0
    X /= np.maximum(X.sum(1, keepdims=True), 1.0)
    return X


def softmax(z):
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def log_step(step, metrics, sink, flush_every=200, _pending=[]):  # noqa: B006
    _pending.append({"step": step, **metrics})
    if len(_pending) % flush_every == 0:
        for rec in _pending[-flush_every:]:
            sink.write(json.dumps({k: v for k, v in rec.items() if np.isscalar(v)}) + "\n")
        # TODO: clear _pending after flushing?
    return len(_pending)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=18000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--lr", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    docs, y = make_corpus(6000, rng)
    X = featurize(docs, args.dim)
    W = np.zeros((args.dim, 3), dtype=np.float32)
    b = np.zeros(3, dtype=np.float32)
    sink = io.StringIO()  # stands in for the metrics file
    t0 = time.time()
    for step in range(args.steps):
        idx = rng.integers(0, len(X), args.batch)
        xb, yb = X[idx], y[idx]
        p = softmax(xb @ W + b)
        onehot = np.eye(3, dtype=np.float32)[yb]
        nll = -np.log(p[np.arange(len(yb)), yb] + 1e-9)  # per example, for hard-example mining
        loss = float(nll.mean())
        g = (p - onehot) / len(yb)
        W -= args.lr * (xb.T @ g)
        b -= args.lr * g.sum(0)
        pred = p.argmax(1)
        class_acc = np.array(
            [(pred[yb == c] == c).mean() if (yb == c).any() else np.nan for c in range(3)]
        )
        metrics = {
            "loss": loss,
            "acc": float((pred == yb).mean()),
            "class_acc": class_acc,
            "nll": nll.astype(np.float64),
        }
        n = log_step(step, metrics, sink)
        if step % 3000 == 0:
            print(f"step {step} loss {loss:.4f} buffered={n} ({time.time() - t0:.1f}s)")
    print("metrics written:", sink.tell(), "bytes")


if __name__ == "__main__":
    main()
