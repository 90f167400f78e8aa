# expect: leak
# holder: archive.db|self.db|db.cache|Shelf.cache
# pattern: streaming linear probe for synthetic bird-call clips: NumPy log-mel + fixed random-projection features, a softmax probe trained with a hand-written SGD update under torch.no_grad (`W -= lr * W.grad`, no torch.optim; ~9 ms per step of 24 new clips, code in main() + FeatureArchive/LinearProbe classes); every clip's float16 feature vector and metadata are archived in a shelve database in a temp dir (FeatureArchive.db) so that later analysis and the replay sampler do not keep them in RAM; the shelf is opened with writeback=True because the code later mutates stored records in place (rec["n_replayed"] += 1, rec["margins"].append(...)), and sync() is never called before close(), so Shelf.cache keeps a live copy of every record ever written or read and grows by ~24 records (~35 KB) per step for the whole run
# step_ms: 9
"""Streaming linear probe over an archive of bird-call features.

A continuous stream of short synthetic recordings (frequency-modulated
chirps of 12 species over coloured noise) is turned into fixed-length
feature vectors: log-mel spectrogram -> fixed random projection ->
mean/max pooling over time. Features are archived on disk in a shelve
database, keyed by clip id, together with per-clip metadata; a softmax
probe is trained online on the fresh clips plus a replay sample drawn from
the archive, and the replayed records keep a short history of their margins
for the "forgetting" analysis at the end.

Main options (defaults):
    --steps 2000 --clips 24
"""
import argparse
import os
import shelve
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import torch

torch.set_num_threads(1)

CFG = {
    "sr": 8000,
    "clip_s": 0.5,
    "n_fft": 256,
    "hop": 128,
    "n_mels": 40,
    "proj_dim": 160,
    "n_species": 12,
    "lr": 0.05,
    "replay": 24,
    "wd": 1e-4,
}


def mel_filterbank(sr, n_fft, n_mels):
    def hz2mel(f):
        return 2595 * np.log10(1 + f / 700.0)

    def mel2hz(m):
        return 700 * (10 ** (m / 2595.0) - 1)

    mels = np.linspace(hz2mel(50), hz2mel(sr / 2), n_mels + 2)
    bins = np.floor((n_fft + 1) * mel2hz(mels) / sr).astype(int)
    fb = np.zeros((n_mels, n_fft // 2 + 1), np.float32)
    for m in range(1, n_mels + 1):
        l, c, r = bins[m - 1], bins[m], bins[m + 1]
        fb[m - 1, l:c] = (np.arange(l, c) - l) / max(c - l, 1)
        fb[m - 1, c:r] = (r - np.arange(c, r)) / max(r - c, 1)
    return fb


class ClipStream:
    def __init__(self, rng, cfg):
        self.rng, self.cfg = rng, cfg
        self.n = int(cfg["sr"] * cfg["clip_s"])
        srng = np.random.default_rng(7)
        self.f0 = srng.uniform(600, 3200, cfg["n_species"])
        self.sweep = srng.uniform(-1800, 1800, cfg["n_species"])
        self.rate = srng.uniform(2, 9, cfg["n_species"])
        self.next_id = 0

    def batch(self, k):
        rng, cfg = self.rng, self.cfg
        t = np.arange(self.n) / cfg["sr"]
        y = rng.integers(0, cfg["n_species"], k)
        f = self.f0[y, None] * rng.uniform(0.93, 1.07, (k, 1)) + self.sweep[y, None] * t[None]
        phase = 2 * np.pi * np.cumsum(f, axis=1) / cfg["sr"]
        env = 0.5 * (1 + np.sin(2 * np.pi * self.rate[y, None] * t[None] + rng.uniform(0, 6.3, (k, 1))))
        noise = np.cumsum(rng.normal(0, 1, (k, self.n)), axis=1)
        noise -= noise.mean(1, keepdims=True)
        noise /= noise.std(1, keepdims=True) + 1e-6
        x = env * np.sin(phase) * rng.uniform(0.3, 1.0, (k, 1)) + 0.6 * noise
        ids = [f"clip{self.next_id + i:08d}" for i in range(k)]
        self.next_id += k
        return ids, x.astype(np.float32), y


class FeatureExtractor:
    def __init__(self, cfg):
        self.cfg = cfg
        self.fb = mel_filterbank(cfg["sr"], cfg["n_fft"], cfg["n_mels"])
        self.win = np.hanning(cfg["n_fft"]).astype(np.float32)
        prng = np.random.default_rng(11)
        self.proj = prng.normal(0, 1 / np.sqrt(cfg["n_mels"] * 3), (cfg["n_mels"] * 3, cfg["proj_dim"])).astype(np.float32)

    def __call__(self, x):
        cfg = self.cfg
        frames = np.lib.stride_tricks.sliding_window_view(x, cfg["n_fft"], axis=1)[:, :: cfg["hop"]]
        spec = np.abs(np.fft.rfft(frames * self.win, axis=-1)) ** 2
        logmel = np.log(spec @ self.fb.T + 1e-6)
        logmel -= logmel.mean(axis=1, keepdims=True)
        d1 = np.diff(logmel, axis=1, prepend=logmel[:, :1])
        d2 = np.diff(d1, axis=1, prepend=d1[:, :1])
        h = np.maximum(np.concatenate([logmel, d1, d2], axis=-1) @ self.proj, 0)
        return np.concatenate([h.mean(1), h.max(1)], axis=1).astype(np.float32)


class FeatureArchive:
    """Clip features on disk, keyed by clip id."""

    def __init__(self, path):
        self.path = path
        self.db = shelve.open(path, flag="n", writeback=True)
        self.n = 0

    def put(self, clip_id, feat, label, step):
        self.db[clip_id] = {
            "feat": feat.astype(np.float16),
            "label": int(label),
            "step": step,
            "n_replayed": 0,
            "margins": [],
        }
        self.n += 1

    def sample(self, rng, k):
        # clip ids are assigned sequentially by the stream
        return [f"clip{i:08d}" for i in rng.integers(0, self.n, k)]

    def get(self, clip_id):
        return self.db[clip_id]

    def close(self):
        self.db.close()


class LinearProbe:
    def __init__(self, dim, n_cls, lr, wd):
        self.W = torch.zeros(dim, n_cls, requires_grad=True)
        self.b = torch.zeros(n_cls, requires_grad=True)
        self.lr, self.wd = lr, wd
        self.mu = np.zeros(dim, np.float32)
        self.var = np.ones(dim, np.float32)
        self.n = 0

    def normalise(self, f, update):
        if update:
            self.n += len(f)
            a = min(1.0, len(f) / self.n) if self.n < 5000 else 0.005
            self.mu = (1 - a) * self.mu + a * f.mean(0)
            self.var = (1 - a) * self.var + a * f.var(0)
        return (f - self.mu) / np.sqrt(self.var + 1e-5)

    def logits(self, f):
        return torch.from_numpy(f) @ self.W + self.b

    def sgd_step(self, f, y):
        logits = self.logits(f)
        loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(y)) + self.wd * (self.W ** 2).sum()
        loss.backward()
        with torch.no_grad():
            for p in (self.W, self.b):
                p -= self.lr * p.grad
                p.grad = None
        return loss.item(), logits.detach()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--clips", type=int, default=24)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--log-every", type=int, default=250)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    stream = ClipStream(rng, CFG)
    extract = FeatureExtractor(CFG)
    probe = LinearProbe(2 * CFG["proj_dim"], CFG["n_species"], CFG["lr"], CFG["wd"])
    workdir = tempfile.TemporaryDirectory(prefix="birdcall_")
    archive = FeatureArchive(os.path.join(workdir.name, "features"))

    t0 = time.time()
    run_loss, run_acc = 0.0, 0.0
    for step in range(1, args.steps + 1):
        ids, x, y = stream.batch(args.clips)
        feats = extract(x)
        for cid, f, lab in zip(ids, feats, y):
            archive.put(cid, f, lab, step)

        f_new = probe.normalise(feats, update=True)
        f_all, y_all, replay_ids = f_new, y, []
        if step > 20:
            replay_ids = archive.sample(rng, CFG["replay"])
            recs = [archive.get(k) for k in replay_ids]
            f_old = probe.normalise(np.stack([r["feat"] for r in recs]).astype(np.float32), update=False)
            f_all = np.concatenate([f_new, f_old])
            y_all = np.concatenate([y, [r["label"] for r in recs]])
        loss, logits = probe.sgd_step(f_all, y_all.astype(np.int64))

        with torch.no_grad():
            z = logits.numpy().copy()
            true = z[np.arange(len(y_all)), y_all]
            z[np.arange(len(y_all)), y_all] = -np.inf
            margin = true - z.max(1)
        for k, m in zip(replay_ids, margin[len(ids):]):
            rec = archive.get(k)
            rec["n_replayed"] += 1
            rec["margins"].append(round(float(m), 3))

        acc = float((logits[: len(ids)].argmax(1).numpy() == y).mean())
        run_loss = 0.98 * run_loss + 0.02 * loss if step > 1 else loss
        run_acc = 0.98 * run_acc + 0.02 * acc if step > 1 else acc
        if step % args.log_every == 0:
            print(f"step {step:5d}  clips archived {archive.n:6d}  loss {run_loss:.3f}  "
                  f"online acc {run_acc:.3f}  {(time.time() - t0) / step * 1e3:.2f} ms/step", flush=True)

    archive.close()
    workdir.cleanup()
    print("done")


if __name__ == "__main__":
    main()
