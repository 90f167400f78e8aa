# expect: no_leak
# pattern: per-clip spectrogram features cached in an OrderedDict LRU (fixed capacity, slots in a preallocated slab); fills during warm-up, then evicts one entry per insert
# step_ms: 6
"""Keyword spotting on synthetic audio clips with a bounded feature cache.

Computing the log-spectrogram of a clip is the most expensive part of the
input pipeline, and popular clips (Zipf-distributed sampling, as with
class-balanced resampling of a long-tailed dataset) are requested again and
again. ``FeatureCache`` is a small LRU built on ``collections.OrderedDict``:
hits are moved to the end, and once ``capacity`` entries are stored every
insert evicts the least recently used one and reuses its slot in a
preallocated slab. Memory rises while the slab's pages are first written
(the first few dozen steps) and is flat after that.
"""

import argparse
import random
import time
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N_CLIPS = 20_000
N_WORDS = 12
SR = 8_000
CLIP_LEN = 4_000  # 0.5 s


class FeatureCache:
    """LRU of fixed-shape feature tensors.

    Values live in one preallocated slab (``capacity x *shape``); the
    OrderedDict maps clip id -> slot and keeps recency order. Evicting the
    least recently used key frees its slot for the new entry, so there is no
    allocator churn once the cache is full.
    """

    def __init__(self, capacity, shape):
        self.capacity = capacity
        self.slab = torch.empty(capacity, *shape)
        self._slots = OrderedDict()
        self._free = list(range(capacity - 1, -1, -1))
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key, fn):
        slot = self._slots.get(key)
        if slot is not None:
            self._slots.move_to_end(key)
            self.hits += 1
            return self.slab[slot]
        self.misses += 1
        if self._free:
            slot = self._free.pop()
        else:
            _, slot = self._slots.popitem(last=False)
        self.slab[slot] = fn(key)
        self._slots[key] = slot
        return self.slab[slot]

    def __len__(self):
        return len(self._slots)


class SyntheticSpeech:
    """Each word is a chirp with a word-specific start frequency; clip id fixes noise."""

    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        self.word_of_clip = rng.integers(0, N_WORDS, size=N_CLIPS)
        self.f0 = np.linspace(300, 2500, N_WORDS)
        self.window = torch.hann_window(256)

    def waveform(self, clip_id):
        rng = np.random.default_rng(clip_id)
        w = self.word_of_clip[clip_id]
        t = np.arange(CLIP_LEN) / SR
        f = self.f0[w] * (1 + 0.5 * t) * rng.uniform(0.95, 1.05)
        x = np.sin(2 * np.pi * f * t) + 0.3 * rng.standard_normal(CLIP_LEN)
        return torch.from_numpy(x.astype(np.float32))

    def features(self, clip_id):
        spec = torch.stft(
            self.waveform(clip_id),
            n_fft=256,
            hop_length=128,
            window=self.window,
            return_complex=True,
        )
        return torch.log1p(spec.abs()[:64])  # [64 freq bins, 32 frames]


class KWSNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(64, 64, 3, padding=1),
            nn.ReLU(),
            nn.Conv1d(64, 64, 3, padding=1),
            nn.ReLU(),
        )
        self.fc = nn.Linear(64, N_WORDS)

    def forward(self, x):
        return self.fc(self.conv(x).mean(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2400)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--cache-size", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=29)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    rng = np.random.default_rng(args.seed)

    speech = SyntheticSpeech(args.seed)
    cache = FeatureCache(args.cache_size, shape=(64, 32))
    model = KWSNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    # long-tailed sampling weights over clips
    weights = 1.0 / np.arange(1, N_CLIPS + 1) ** 1.1
    weights /= weights.sum()
    order = rng.permutation(N_CLIPS)

    t0 = time.time()
    for step in range(1, args.steps + 1):
        ids = order[rng.choice(N_CLIPS, size=args.batch, p=weights)]
        x = torch.stack([cache.get_or_compute(int(i), speech.features) for i in ids])
        y = torch.from_numpy(speech.word_of_clip[ids]).long()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

        if step % 400 == 0:
            hit = cache.hits / (cache.hits + cache.misses)
            ms = (time.time() - t0) / step * 1e3
            print(
                f"step {step:5d}  loss {loss.item():.3f}  cache {len(cache)} entries, hit rate {hit:.2f}  {ms:.1f} ms/step",
                flush=True,
            )


if __name__ == "__main__":
    main()
