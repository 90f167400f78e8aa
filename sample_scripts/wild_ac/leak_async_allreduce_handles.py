# expect: leak
# holder: syncer._pending|_pending|GradSyncer._pending|pending|works
# pattern: hand-rolled data-parallel training (torch.distributed gloo; falls back to a 1-process group when started with plain `python`) of a small transformer forecaster for multivariate load curves (torch.optim.AdamW, DistributedSampler + DataLoader num_workers=2, rank-0 validation/checkpoint, ~200 ms steps, code in main() + a GradSyncer class); to overlap communication with backward, GradSyncer groups the parameters into ~110k-element buckets and registers a post-accumulate-grad hook on every parameter; when a bucket's last grad arrives the hook flattens the bucket with torch.cat, launches dist.all_reduce(flat, async_op=True) and appends (work, flat, bucket_id) to self._pending, and wait_all() waits on every entry and copies the averaged values back into .grad before opt.step(); the list is never cleared (the clear() sits in reset(), which is only called from the no_sync() context used for gradient accumulation, and this config does not accumulate), so every step leaves one flattened copy of all gradients (~1.7 MB, allocated mid-backward between the activation buffers, so RSS grows several times faster than that through heap fragmentation) plus its gloo Work, and wait_all() re-walks and re-copies an ever longer list
# step_ms: 200
"""Minimal DDP-without-DDP trainer (we needed custom bucketing for the real model).

Run with torchrun for multi-process; `python leak_async_allreduce_handles.py` runs a
single-process gloo group, which is what CI uses as a smoke test.
"""
import contextlib
import copy
import math
import os
import socket
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

torch.set_num_threads(1)

N_SERIES = 8
CTX, HORIZON = 96, 24
D_MODEL = 128
RUN_SECONDS = 15.0


def setup_dist():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", init_method="env://")
    return dist.get_rank(), dist.get_world_size()


class LoadCurves(Dataset):
    """Sliding windows over synthetic hourly load curves (daily + weekly seasonality)."""

    def __init__(self, hours, seed):
        rng = np.random.default_rng(seed)
        t = np.arange(hours)[:, None]
        phase = rng.uniform(0, 2 * np.pi, (1, N_SERIES))
        level = rng.uniform(0.5, 2.0, (1, N_SERIES))
        daily = np.sin(2 * np.pi * t / 24 + phase)
        weekly = 0.4 * np.sin(2 * np.pi * t / 168 + 2 * phase)
        noise = np.cumsum(rng.normal(0, 0.02, (hours, N_SERIES)), 0)
        self.x = (level * (1 + 0.3 * daily + weekly) + noise).astype(np.float32)
        self.mu, self.sd = self.x.mean(0), self.x.std(0)

    def __len__(self):
        return len(self.x) - CTX - HORIZON

    def __getitem__(self, i):
        w = (self.x[i:i + CTX + HORIZON] - self.mu) / self.sd
        return torch.from_numpy(w[:CTX]), torch.from_numpy(w[CTX:])


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(N_SERIES, D_MODEL)
        self.pos = nn.Parameter(torch.randn(CTX, D_MODEL) * 0.02)
        layer = nn.TransformerEncoderLayer(D_MODEL, 4, 4 * D_MODEL, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.out = nn.Linear(D_MODEL, HORIZON * N_SERIES)

    def forward(self, x):
        h = self.enc(self.inp(x) + self.pos)
        return self.out(h[:, -1]).view(-1, HORIZON, N_SERIES)


class GradSyncer:
    """Average grads across ranks in ~BUCKET_NUMEL buckets, launching each bucket's
    all_reduce as soon as its last grad has been accumulated (overlaps with backward)."""

    BUCKET_NUMEL = 110_000

    def __init__(self, model, world_size):
        self.world_size = world_size
        self._pending = []
        self._ready = {}
        self._enabled = True
        params = [p for p in model.parameters() if p.requires_grad]
        # grads arrive roughly in reverse order of registration
        self.buckets, cur, n = [], [], 0
        for p in reversed(params):
            cur.append(p)
            n += p.numel()
            if n >= self.BUCKET_NUMEL:
                self.buckets.append(cur)
                cur, n = [], 0
        if cur:
            self.buckets.append(cur)
        self._bucket_of = {p: i for i, b in enumerate(self.buckets) for p in b}
        for p in params:
            p.register_post_accumulate_grad_hook(self._hook)

    def _hook(self, p):
        if not self._enabled:
            return
        b = self._bucket_of[p]
        self._ready[b] = self._ready.get(b, 0) + 1
        if self._ready[b] == len(self.buckets[b]):
            self._ready[b] = 0
            flat = torch.cat([q.grad.reshape(-1) for q in self.buckets[b]])
            flat.div_(self.world_size)
            self._pending.append((dist.all_reduce(flat, async_op=True), flat, b))

    def wait_all(self):
        """Block until every launched bucket is reduced, then scatter back into .grad."""
        for work, flat, b in self._pending:
            work.wait()
            offset = 0
            for q in self.buckets[b]:
                n = q.numel()
                if q.grad is not None:
                    q.grad.copy_(flat[offset:offset + n].view_as(q))
                offset += n

    def reset(self):
        self._pending.clear()
        self._ready.clear()

    @contextlib.contextmanager
    def no_sync(self):
        """For gradient accumulation: skip communication on the inner micro-batches."""
        self._enabled = False
        try:
            yield
        finally:
            self._enabled = True
            self.reset()


@torch.no_grad()
def validate(model, loader):
    model.eval()
    se = torch.zeros(2)
    for x, y in loader:
        se[0] += F.mse_loss(model(x), y, reduction="sum")
        se[1] += y.numel()
    dist.all_reduce(se)
    model.train()
    return (se[0] / se[1]).item()


def main():
    rank, world = setup_dist()
    torch.manual_seed(1234 + rank)
    train_ds, val_ds = LoadCurves(24 * 365 * 3, seed=0), LoadCurves(24 * 30, seed=1)
    train_sampler = DistributedSampler(train_ds, num_replicas=world, rank=rank, shuffle=True)
    train_dl = DataLoader(train_ds, batch_size=32, sampler=train_sampler, num_workers=2,
                          drop_last=True, persistent_workers=True)
    val_dl = DataLoader(val_ds, batch_size=256, sampler=DistributedSampler(val_ds, world, rank, shuffle=False))

    model = Forecaster()
    for p in model.parameters():            # same init everywhere
        dist.broadcast(p.data, 0)
    syncer = GradSyncer(model, world)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
    n_params = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(f"world={world} params={n_params / 1e6:.2f}M", flush=True)

    best, best_state = math.inf, None
    t0 = last = time.time()
    step, epoch, done = 0, 0, False
    while not done:
        train_sampler.set_epoch(epoch)
        for x, y in train_dl:
            lr = 5e-4 * min(1.0, (step + 1) / 30)
            for g in opt.param_groups:
                g["lr"] = lr
            loss = F.smooth_l1_loss(model(x), y, beta=0.5)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            syncer.wait_all()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            if step % 30 == 0:
                v = validate(model, val_dl)
                if rank == 0 and v < best:
                    best, best_state = v, copy.deepcopy(model.state_dict())
                if rank == 0:
                    print(f"step {step} ep {epoch} loss {loss.item():.4f} val_mse {v:.4f} "
                          f"best {best:.4f} ({time.time() - t0:.1f}s)", flush=True)
                last = time.time()
            elif rank == 0 and time.time() - last > 2.0:
                print(f"step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
                last = time.time()
            if time.time() - t0 > RUN_SECONDS:
                done = True
                break
        epoch += 1
    if rank == 0:
        print(f"done: {step} steps, best val mse {best:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
