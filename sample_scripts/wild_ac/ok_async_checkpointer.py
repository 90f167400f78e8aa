# expect: no_leak
# pattern: char-level 2-layer LSTM language model on synthetic server-log text (torch.optim.Adam, warm-up + cosine LR, grad clipping, validation perplexity every 30 steps, slow ~200 ms steps, code in main() + an AsyncCheckpointer class with a 1-thread ThreadPoolExecutor); looks like it leaks in big steps: every 12 steps save() takes a full CPU snapshot (clone) of the model and Adam state (~40 MB) and hands it to the background thread, which torch.save()s it into a BytesIO, zlib-compresses it, writes it and a sha256 sidecar under /tmp and prunes all but the last two files, so RSS jumps by ~100-150 MB at every save and only comes back down a second or two later when the thread finishes; but save() first waits for the previous future (at most one snapshot in flight), the snapshot, buffers and future are dropped when the job ends, and only the newest two files (on disk) and the best validation loss (a float) are kept
# step_ms: 200
"""Char-level LSTM LM on synthetic server logs, with non-blocking checkpoints.

Checkpoints used to stall training for ~2 s each on the shared NFS, so they are
written from a background thread now.
"""
import glob
import hashlib
import io
import math
import os
import tempfile
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

SEQ, BS = 80, 20
HIDDEN = 512
RUN_SECONDS = 16.0
CKPT_EVERY = 12
KEEP_LAST = 2


def synth_logs(n_lines, seed):
    rng = np.random.default_rng(seed)
    services = ["auth", "billing", "search", "gateway", "inventory", "mailer"]
    levels = ["INFO"] * 8 + ["WARN"] * 2 + ["ERROR"]
    verbs = ["GET", "POST", "PUT", "DELETE"]
    paths = ["/api/v1/users", "/api/v1/orders", "/health", "/api/v2/search", "/static/app.js", "/login"]
    msgs = ["request completed", "cache miss", "retrying upstream", "slow query", "token refreshed",
            "connection reset by peer", "rate limit exceeded", "payload too large"]
    out = []
    ts = 1_700_000_000
    for _ in range(n_lines):
        ts += int(rng.exponential(3))
        lvl = levels[rng.integers(len(levels))]
        svc = services[rng.integers(len(services))]
        code = 200 if lvl == "INFO" else (429 if rng.random() < 0.5 else 503)
        out.append(f"{ts} {lvl:<5} [{svc}] {verbs[rng.integers(4)]} {paths[rng.integers(len(paths))]} "
                   f"{code} {rng.integers(2, 900)}ms - {msgs[rng.integers(len(msgs))]}\n")
    return "".join(out)


class CharLSTM(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.emb = nn.Embedding(vocab, 64)
        self.rnn = nn.LSTM(64, HIDDEN, num_layers=2, batch_first=True, dropout=0.1)
        self.out = nn.Linear(HIDDEN, vocab)

    def forward(self, x, state=None):
        h, state = self.rnn(self.emb(x), state)
        return self.out(h), state


class AsyncCheckpointer:
    def __init__(self, directory, keep_last=KEEP_LAST):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        for f in glob.glob(os.path.join(directory, "step_*")):
            os.remove(f)
        self.keep_last = keep_last
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt")
        self._future = None
        self.n_written = 0

    @staticmethod
    def _snapshot(model, opt, step):
        opt_state = opt.state_dict()
        return {
            "step": step,
            "model": {k: v.detach().clone() for k, v in model.state_dict().items()},
            "opt": {"state": {i: {k: (v.clone() if torch.is_tensor(v) else v) for k, v in s.items()}
                              for i, s in opt_state["state"].items()},
                    "param_groups": opt_state["param_groups"]},
        }

    def _write(self, snap):
        buf = io.BytesIO()
        torch.save(snap, buf)
        blob = zlib.compress(buf.getbuffer(), 1)
        path = os.path.join(self.dir, f"step_{snap['step']:06d}.pt.z")
        with open(path + ".tmp", "wb") as fh:
            fh.write(blob)
        os.replace(path + ".tmp", path)
        with open(path + ".sha256", "w") as fh:
            fh.write(hashlib.sha256(blob).hexdigest())
        old = sorted(glob.glob(os.path.join(self.dir, "step_*.pt.z")))[:-self.keep_last]
        for f in old:
            os.remove(f)
            os.remove(f + ".sha256")
        return path, len(blob)

    def save(self, model, opt, step):
        if self._future is not None:
            self._future.result()           # never more than one snapshot in flight
        snap = self._snapshot(model, opt, step)
        self._future = self.pool.submit(self._write, snap)
        self.n_written += 1

    def close(self):
        if self._future is not None:
            self._future.result()
        self._future = None
        self.pool.shutdown(wait=True)


def main():
    torch.manual_seed(0)
    text = synth_logs(60_000, seed=1)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    n_val = len(data) // 20
    train, val = data[:-n_val], data[-n_val:]
    print(f"corpus {len(text) / 1e6:.1f}M chars, vocab {len(chars)}", flush=True)

    model = CharLSTM(len(chars))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    total = 90
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 10) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    ckpt = AsyncCheckpointer(os.path.join(tempfile.gettempdir(), "charlstm_ckpt"))
    best_val = math.inf

    def batch(src, n):
        ix = torch.randint(len(src) - SEQ - 1, (n,))
        x = torch.stack([src[i:i + SEQ] for i in ix])
        y = torch.stack([src[i + 1:i + SEQ + 1] for i in ix])
        return x, y

    t0 = last = time.time()
    for step in range(1, 10 ** 6):
        x, y = batch(train, BS)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % CKPT_EVERY == 0:
            ckpt.save(model, opt, step)
        if step % 30 == 0:
            model.eval()
            with torch.no_grad():
                xv, yv = batch(val, 64)
                lv, _ = model(xv)
                vloss = F.cross_entropy(lv.reshape(-1, lv.size(-1)), yv.reshape(-1)).item()
            model.train()
            best_val = min(best_val, vloss)
            print(f"step {step} loss {loss.item():.3f} val ppl {math.exp(vloss):.2f} "
                  f"(best {math.exp(best_val):.2f}) ckpts {ckpt.n_written} ({time.time() - t0:.1f}s)", flush=True)
            last = time.time()
        elif time.time() - last > 2.5:
            print(f"step {step} loss {loss.item():.3f} ({time.time() - t0:.1f}s)", flush=True)
            last = time.time()
        if time.time() - t0 > RUN_SECONDS:
            break
    ckpt.close()
    print(f"done after {step} steps; kept {sorted(os.listdir(ckpt.dir))}")


if __name__ == "__main__":
    main()
