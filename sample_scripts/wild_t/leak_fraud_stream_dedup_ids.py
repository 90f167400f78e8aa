# expect: leak
# holder: state["seen_ids"]|seen_ids
# pattern: online fraud-scoring service loop written as plain functions passing a state dict around (hashed-feature logistic regression with pairwise field crosses, hand-written AdaGrad-style SGD under torch.no_grad, no torch.optim, ~1.5 ms per micro-batch); the stream is at-least-once, so dedup() drops redelivered events by checking event ids ("topic-partition-offset" strings) against state["seen_ids"], a set that is only ever added to; offsets never repeat, so the set keeps every event id ever processed (~90 bytes per event, 256 events per step) for the whole run, although redeliveries only arrive within a few batches
# step_ms: 1.5
"""Online card-fraud scorer.

Consumes micro-batches of card transactions from a (simulated) at-least-once
event stream, scores them with a hashed-feature logistic regression, then
updates the weights online once the (simulated) chargeback labels arrive.
Redelivered events must not be trained on twice.
"""
import collections
import math
import time

import numpy as np
import torch

torch.set_num_threads(1)

N_HASH = 2 ** 18
N_BASE = 12
PAIRS = [(a, b) for a in range(8) for b in range(a + 1, 8)]
N_FIELDS = N_BASE + len(PAIRS)
BATCH = 256
RUN_SECONDS = 17.0
REDELIVERY_P = 0.04


def make_stream(seed=0):
    rng = np.random.default_rng(seed)
    recent = collections.deque(maxlen=16)
    offsets = [0] * 8
    true_w = rng.normal(0, 1.0, size=N_HASH).astype(np.float32)
    while True:
        if recent and rng.random() < REDELIVERY_P:
            yield recent[rng.integers(len(recent))]
            continue
        part = int(rng.integers(8))
        start = offsets[part]
        offsets[part] += BATCH
        ids = [f"tx-{part}-{start + k:010d}" for k in range(BATCH)]
        merchant = rng.zipf(1.3, size=BATCH) % 50000
        card = rng.integers(0, 2_000_000, size=BATCH)
        amount = rng.lognormal(3.0, 1.2, size=BATCH)
        hour = rng.integers(0, 24, size=BATCH)
        country = rng.integers(0, 60, size=BATCH)
        mcc = rng.integers(0, 400, size=BATCH)
        raw = np.stack([merchant, card % 9973, np.minimum(amount, 5000).astype(np.int64) // 25, hour,
                        country, mcc, merchant * 31 + hour, country * 400 + mcc,
                        (amount > 500).astype(np.int64), card % 17, mcc * 24 + hour, merchant % 97], axis=1)
        crosses = np.stack([raw[:, a] * 1_000_033 + raw[:, b] for a, b in PAIRS], axis=1)
        raw = np.concatenate([raw, crosses], axis=1)
        field_salt = np.arange(N_FIELDS, dtype=np.int64) * 1_000_003
        idx = ((raw * 2654435761 + field_salt) % N_HASH).astype(np.int64)
        logit = true_w[idx[:, :N_BASE]].sum(1) * 0.6 + true_w[idx[:, N_BASE:]].sum(1) * 0.1 - 3.0
        y = (rng.random(BATCH) < 1 / (1 + np.exp(-logit))).astype(np.float32)
        batch = {"ids": ids, "idx": idx, "amount": amount.astype(np.float32), "y": y}
        recent.append(batch)
        yield batch


def make_state():
    return {
        "w": torch.zeros(N_HASH),
        "b": torch.zeros(1),
        "g2": torch.full((N_HASH,), 1e-2),
        "lr": 0.08,
        "seen_ids": set(),
        "n_events": 0,
        "n_dupes": 0,
        "loss_ema": None,
        "tp": 0, "fp": 0, "fn": 0,
    }


def dedup(state, batch):
    seen = state["seen_ids"]
    keep = []
    for i, eid in enumerate(batch["ids"]):
        if eid in seen:
            state["n_dupes"] += 1
            continue
        seen.add(eid)
        keep.append(i)
    return keep


def score(state, idx):
    w = state["w"].requires_grad_(True)
    b = state["b"].requires_grad_(True)
    return w[idx].sum(1) + b


def update(state, idx, logits, y):
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
    gw, gb = torch.autograd.grad(loss, (state["w"], state["b"]))
    with torch.no_grad():
        touched = idx.unique()
        state["g2"][touched] += gw[touched] ** 2
        state["w"][touched] -= state["lr"] * gw[touched] / state["g2"][touched].sqrt()
        state["b"] -= 0.01 * gb
    state["w"].requires_grad_(False)
    state["b"].requires_grad_(False)
    l = loss.item()
    state["loss_ema"] = l if state["loss_ema"] is None else 0.99 * state["loss_ema"] + 0.01 * l
    return l


def track_alerts(state, logits, y, threshold=0.3):
    p = torch.sigmoid(logits.detach())
    alert = p > threshold
    pos = y > 0.5
    state["tp"] += int((alert & pos).sum())
    state["fp"] += int((alert & ~pos).sum())
    state["fn"] += int((~alert & pos).sum())


def report(state, step, t0):
    prec = state["tp"] / max(1, state["tp"] + state["fp"])
    rec = state["tp"] / max(1, state["tp"] + state["fn"])
    rate = state["n_events"] / (time.time() - t0)
    print(f"batch {step:6d}  events {state['n_events']:>9,}  dupes {state['n_dupes']:>6,}  "
          f"logloss(ema) {state['loss_ema']:.4f}  prec {prec:.3f}  rec {rec:.3f}  {rate:,.0f} ev/s")


def run():
    state = make_state()
    stream = make_stream()
    t0 = time.time()
    step = 0
    for batch in stream:
        step += 1
        keep = dedup(state, batch)
        if keep:
            sel = torch.as_tensor(keep)
            idx = torch.from_numpy(batch["idx"])[sel]
            y = torch.from_numpy(batch["y"])[sel]
            logits = score(state, idx)
            track_alerts(state, logits, y)
            update(state, idx, logits, y)
            state["n_events"] += len(keep)
        if step % 1000 == 0:
            report(state, step, t0)
        if time.time() - t0 > RUN_SECONDS:
            break
    report(state, step, t0)
    nnz = int((state["w"] != 0).sum())
    print(f"stream closed after {time.time() - t0:.1f}s; {nnz:,} active weights, "
          f"mean step {1000 * (time.time() - t0) / step:.2f} ms")


if __name__ == "__main__":
    run()
