# expect: leak
# holder: TeacherCache._store|targets.cache._store|_store
# pattern: online distillation of a large query-intent teacher MLP into a small student on live search traffic (torch.optim.AdamW, ~33 ms per step of 192 queries, code in main() + OnlineDistiller/TeacherCache classes); the teacher's logits and hint features are memoised per query id in TeacherCache (reached as distiller.targets.cache) with FIFO eviction, but the eviction test is `len(self._order) > self.capacity` where _order = deque(maxlen=capacity) silently drops the oldest key itself and can never exceed capacity, so nothing is ever popped from the dict self._store, which gains ~35 new long-tail queries (float32 numpy logits + hint rows, 6 KB each) per step for the whole run
# step_ms: 33
"""Online distillation of the query-intent classifier.

The production (teacher) intent model is too slow for the edge tier, so a
small student is distilled continuously on live query traffic.  Head queries
repeat constantly, so the teacher's soft targets and hint features are cached
per normalised query id in a FIFO cache of fixed capacity.
"""
import argparse
import time
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

IN_DIM = 192
N_INTENTS = 1024
HINT = 512


class TeacherCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self._store = {}
        self._order = deque(maxlen=capacity)
        self.hits = 0
        self.misses = 0

    def lookup(self, keys):
        found = [self._store.get(k) for k in keys]
        n_hit = sum(v is not None for v in found)
        self.hits += n_hit
        self.misses += len(keys) - n_hit
        return found

    def put(self, key, value):
        if key in self._store:
            return
        self._store[key] = value
        self._order.append(key)
        if len(self._order) > self.capacity:
            oldest = self._order.popleft()
            self._store.pop(oldest, None)

    def __len__(self):
        return len(self._order)


class Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(IN_DIM, 1024), nn.GELU(),
            nn.Linear(1024, 1024), nn.GELU(),
            nn.Linear(1024, HINT), nn.GELU(),
        )
        self.out = nn.Linear(HINT, N_INTENTS)
        nn.init.normal_(self.out.weight, std=0.6)

    def forward(self, x):
        h = self.trunk(x)
        return self.out(h), h


class Student(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(IN_DIM, 768), nn.ReLU(),
            nn.Linear(768, 768), nn.ReLU(),
            nn.Linear(768, HINT), nn.ReLU(),
        )
        self.out = nn.Linear(HINT, N_INTENTS)
        self.hint_proj = nn.Linear(HINT, HINT)

    def forward(self, x):
        h = self.trunk(x)
        return self.out(h), self.hint_proj(h)


class TeacherTargets:
    def __init__(self, teacher, capacity):
        self.teacher = teacher.eval()
        self.cache = TeacherCache(capacity)

    def __call__(self, keys, x):
        found = self.cache.lookup(keys)
        miss = [i for i, v in enumerate(found) if v is None]
        if miss:
            with torch.no_grad():
                logits, hint = self.teacher(x[miss])
            logits, hint = logits.numpy(), hint.numpy()
            for j, i in enumerate(miss):
                value = (logits[j].copy(), hint[j].copy())
                self.cache.put(keys[i], value)
                found[i] = value
        return (torch.from_numpy(np.stack([v[0] for v in found])),
                torch.from_numpy(np.stack([v[1] for v in found])))


class OnlineDistiller:
    def __init__(self, teacher, student, capacity, lr=1e-3, temperature=2.0):
        self.targets = TeacherTargets(teacher, capacity)
        self.student = student
        self.opt = torch.optim.AdamW(student.parameters(), lr=lr, weight_decay=1e-4)
        self.T = temperature

    def step(self, keys, x):
        t_logits, t_hint = self.targets(keys, x)
        s_logits, s_hint = self.student(x)
        kd = F.kl_div(F.log_softmax(s_logits / self.T, dim=1), F.softmax(t_logits / self.T, dim=1),
                      reduction="batchmean") * self.T ** 2
        loss = kd + 0.1 * F.mse_loss(s_hint, t_hint)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        agree = (s_logits.argmax(1) == t_logits.argmax(1)).float().mean().item()
        return loss.item(), agree


class QueryTraffic:
    """Zipf-distributed query ids; each id maps deterministically to a feature vector."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        proto_rng = np.random.default_rng(1234)
        self.protos = proto_rng.normal(size=(512, IN_DIM)).astype(np.float32)
        self.freqs = proto_rng.uniform(0.001, 0.05, size=IN_DIM).astype(np.float32)

    def batch(self, n):
        ids = self.rng.zipf(1.2, size=n).astype(np.int64)
        feats = self.protos[ids % 512] + 0.3 * np.sin(np.outer(ids, self.freqs)).astype(np.float32)
        keys = [f"q{int(i)}" for i in ids]
        return keys, torch.from_numpy(feats)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=550)
    ap.add_argument("--batch", type=int, default=192)
    ap.add_argument("--cache-capacity", type=int, default=4096)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    traffic = QueryTraffic()
    distiller = OnlineDistiller(Teacher(), Student(), capacity=args.cache_capacity)
    t0 = time.time()
    run_loss = run_agree = 0.0
    for step in range(1, args.steps + 1):
        keys, x = traffic.batch(args.batch)
        loss, agree = distiller.step(keys, x)
        run_loss += loss
        run_agree += agree
        if step % 50 == 0:
            c = distiller.targets.cache
            print(f"step {step:4d}  loss {run_loss / 50:.4f}  agree {run_agree / 50:.3f}  "
                  f"cache hit {c.hits / max(c.hits + c.misses, 1):.2f}  {time.time() - t0:.1f}s", flush=True)
            run_loss = run_agree = 0.0


if __name__ == "__main__":
    main()
