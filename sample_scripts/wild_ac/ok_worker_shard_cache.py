# expect: no_leak
# pattern: 1D-CNN arrhythmia classifier on synthetic ECG records stored as zlib-compressed int16 shards held in RAM (torch.optim.Adam, DataLoader num_workers=2 without persistent_workers + a custom ShardGroupedSampler that shuffles shards and then records inside each shard, per-class confusion matrix + early stopping on macro-F1 with one replaced best-state copy, ~35 ms steps, code in main() + an EcgShards Dataset with a per-process OrderedDict LRU of decoded shards); looks like growth in the worker processes: each worker decodes shards into its own LRU (capacity 4 x ~5 MB) and the tree's RSS climbs during every epoch, and a fresh pair of worker processes (forked from a ~300 MB parent) appears at every epoch start; but the cache is capped, the workers exit at the end of each epoch (taking their caches with them), and the parent only keeps the compressed shards (allocated once), so the total saw-tooths per epoch around a flat level
# step_ms: 35
"""ECG beat classification from compressed in-memory shards.

Records are grouped into shards (like WebDataset tars); the sampler keeps reads
shard-local so each worker only needs a few decoded shards at a time.
"""
import copy
import time
import zlib
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

torch.set_num_threads(1)

FS = 250
WIN = 2500                      # 10 s windows
REC_PER_SHARD = 512
N_SHARDS = 16
CLASSES = ["normal", "afib", "pvc", "brady", "tachy"]
RUN_SECONDS = 15.0


def _template(width, p_wave):
    tt = np.arange(-0.3, 0.45, 1 / FS)
    qrs = np.exp(-(tt ** 2) / (2 * width ** 2)) - 0.2 * np.exp(-((tt - 0.03) ** 2) / (2 * 0.01 ** 2))
    tw = 0.3 * np.exp(-((tt - 0.25) ** 2) / (2 * 0.04 ** 2))
    pw = 0.15 * np.exp(-((tt + 0.16) ** 2) / (2 * 0.02 ** 2)) if p_wave else 0.0
    return qrs + tw + pw


BEAT = {"normal": _template(0.012, True), "nop": _template(0.012, False), "wide": 1.5 * _template(0.03, False)}


def synth_record(rng, label):
    t = np.arange(WIN) / FS
    hr = {0: 72, 1: 88, 2: 76, 3: 52, 4: 112}[label] * rng.uniform(0.85, 1.15)
    rr = 60.0 / hr
    beats = np.arange(rng.uniform(0, rr), t[-1], rr)
    beats = beats + rng.normal(0, (0.10 if label == 1 else 0.02) * rr, len(beats))
    x = 0.08 * np.sin(2 * np.pi * rng.uniform(0.15, 0.4) * t) + rng.normal(0, 0.3, WIN)
    pos = np.clip((beats * FS).astype(int), 0, WIN - 1)
    wide = np.zeros(len(pos), bool)
    if label == 2:
        wide[rng.random(len(pos)) < 0.3] = True
    for kind, sel in (("wide", wide), ("nop" if label == 1 else "normal", ~wide)):
        imp = np.zeros(WIN)
        np.add.at(imp, pos[sel], rng.uniform(0.8, 1.2, sel.sum()))
        x += np.convolve(imp, BEAT[kind], mode="same")
    return np.round(x * 2000).astype(np.int16)


def build_shards(seed, n_shards):
    rng = np.random.default_rng(seed)
    shards, labels = [], []
    for s in range(n_shards):
        y = rng.integers(len(CLASSES), size=REC_PER_SHARD)
        block = np.stack([synth_record(rng, int(c)) for c in y])
        shards.append(zlib.compress(block.tobytes(), 1))
        labels.append(y)
    return shards, np.concatenate(labels)


class EcgShards(Dataset):
    def __init__(self, shards, labels, train, cache_size=4):
        self.shards, self.labels, self.train = shards, labels, train
        self.cache_size = cache_size
        self._cache = OrderedDict()                 # per process (each worker gets its own)

    def __len__(self):
        return len(self.labels)

    def _shard(self, s):
        arr = self._cache.get(s)
        if arr is None:
            raw = zlib.decompress(self.shards[s])
            arr = np.frombuffer(raw, np.int16).reshape(REC_PER_SHARD, WIN).astype(np.float32) / 2000.0
            self._cache[s] = arr
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(s)
        return arr

    def __getitem__(self, i):
        s, j = divmod(i, REC_PER_SHARD)
        x = self._shard(s)[j]
        if self.train:
            x = x * np.random.uniform(0.8, 1.2) + np.random.normal(0, 0.02, WIN).astype(np.float32)
            x = np.roll(x, np.random.randint(-50, 50))
        return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))[None], int(self.labels[i])


class ShardGroupedSampler(Sampler):
    def __init__(self, n_shards, per_shard, seed=0):
        self.n_shards, self.per_shard = n_shards, per_shard
        self.epoch = 0
        self.seed = seed

    def set_epoch(self, e):
        self.epoch = e

    def __iter__(self):
        g = np.random.default_rng(self.seed + self.epoch)
        for s in g.permutation(self.n_shards):
            for j in g.permutation(self.per_shard):
                yield int(s * self.per_shard + j)

    def __len__(self):
        return self.n_shards * self.per_shard


class EcgNet(nn.Module):
    def __init__(self):
        super().__init__()
        layers, c = [], 1
        for co, k in [(12, 15), (24, 9), (32, 9), (48, 5), (48, 5)]:
            layers += [nn.Conv1d(c, co, k, stride=2 if c == 1 else 1, padding=k // 2),
                       nn.BatchNorm1d(co), nn.ReLU(), nn.MaxPool1d(2)]
            c = co
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(2 * c, len(CLASSES))

    def forward(self, x):
        h = self.body(x)
        return self.head(torch.cat([h.mean(-1), h.amax(-1)], 1))


def macro_f1(conf):
    tp = np.diag(conf).astype(float)
    prec = tp / np.maximum(conf.sum(0), 1)
    rec = tp / np.maximum(conf.sum(1), 1)
    return float(np.mean(2 * prec * rec / np.maximum(prec + rec, 1e-9)))


def main():
    torch.manual_seed(0)
    t_build = time.time()
    tr_shards, tr_labels = build_shards(1, N_SHARDS)
    va_shards, va_labels = build_shards(2, 1)
    print(f"built {len(tr_shards)} shards ({sum(map(len, tr_shards)) / 2**20:.0f} MB compressed) "
          f"in {time.time() - t_build:.1f}s", flush=True)

    train_ds = EcgShards(tr_shards, tr_labels, train=True)
    sampler = ShardGroupedSampler(N_SHARDS, REC_PER_SHARD)
    train_dl = DataLoader(train_ds, batch_size=48, sampler=sampler, num_workers=2, drop_last=True)
    val_dl = DataLoader(EcgShards(va_shards, va_labels, train=False), batch_size=128)

    model = EcgNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    best_f1, best_state, patience = -1.0, None, 6
    steps_per_epoch = 30
    t0 = time.time()
    for epoch in range(100):
        sampler.set_epoch(epoch)
        model.train()
        losses = []
        for step, (x, y) in enumerate(train_dl):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if step + 1 >= steps_per_epoch:
                break                       # short "epochs": the iterator (and its workers) is dropped here
        model.eval()
        conf = np.zeros((len(CLASSES), len(CLASSES)), np.int64)
        with torch.no_grad():
            for x, y in val_dl:
                np.add.at(conf, (y.numpy(), model(x).argmax(1).numpy()), 1)
        f1 = macro_f1(conf)
        if f1 > best_f1:
            best_f1, best_state, patience = f1, copy.deepcopy(model.state_dict()), 6
        else:
            patience -= 1
        print(f"epoch {epoch} loss {np.mean(losses):.3f} val macroF1 {f1:.3f} best {best_f1:.3f} "
              f"({time.time() - t0:.1f}s)", flush=True)
        if patience == 0 or time.time() - t0 > RUN_SECONDS:
            break
    model.load_state_dict(best_state)
    print("per-class recall:", {c: round(conf[i, i] / max(conf[i].sum(), 1), 3) for i, c in enumerate(CLASSES)})


if __name__ == "__main__":
    main()
