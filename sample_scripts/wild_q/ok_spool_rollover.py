# expect: no_leak
# pattern: 1D-conv autoencoder for pump vibration windows trained with torch.optim.AdamW; every step appends a binary record (per-window reconstruction error profile + latent code, float32) for the drift dashboard to the current epoch's tempfile.SpooledTemporaryFile(max_size=--spool-mb MiB, dir=/tmp/...); the spool keeps records in its in-memory BytesIO only until max_size is exceeded, then rollover() copies them into a real temp file and drops the buffer, and each epoch's spool is copied to the run directory and closed at the epoch end, so memory ramps by up to ~20 MB in every epoch, falls back at rollover (about three quarters into the epoch), and the pattern repeats per epoch (bounded sawtooth)
# step_ms: 16
"""Vibration autoencoder with spooled per-window diagnostics.

Centrifugal pump accelerometer windows (3 axes, 256 samples) are encoded
by a small 1D-conv autoencoder.  The reconstruction error is the anomaly
score; the dashboard also wants the per-window error profile and latent
code of every training window, so these are written as binary records to a
spooled temp file per epoch (kept in memory while small, spilled to disk
once it grows) and the finished epoch file is moved into the run directory.
"""
import argparse
import os
import shutil
import struct
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

WIN = 256
HDR = struct.Struct("<IIH")


def pump_windows(rng, n, fault_rate=0.05):
    t = np.arange(WIN) / 2000.0
    rpm = rng.uniform(1400, 3000, (n, 1, 1)) / 60.0
    phase = rng.uniform(0, 2 * np.pi, (n, 3, 1))
    x = (np.sin(2 * np.pi * rpm * t + phase)
         + 0.4 * np.sin(2 * np.pi * 2 * rpm * t + 2 * phase)
         + 0.15 * np.sin(2 * np.pi * 7 * rpm * t + phase))          # vane-pass harmonic
    x *= rng.uniform(0.5, 1.5, (n, 3, 1))
    faulty = rng.random(n) < fault_rate
    if faulty.any():
        k = faulty.sum()
        bursts = (rng.random((k, 1, WIN)) < 0.02) * rng.normal(0, 3, (k, 3, WIN))
        x[faulty] += bursts
    x += 0.1 * rng.standard_normal(x.shape)
    return torch.from_numpy(x.astype(np.float32)), faulty


class ConvAE(nn.Module):
    def __init__(self, latent=48):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv1d(3, 32, 7, stride=2, padding=3), nn.GELU(),
            nn.Conv1d(32, 64, 5, stride=2, padding=2), nn.GELU(),
            nn.Conv1d(64, 64, 5, stride=2, padding=2), nn.GELU(),
        )
        self.to_z = nn.Linear(64 * 32, latent)
        self.from_z = nn.Linear(latent, 64 * 32)
        self.dec = nn.Sequential(
            nn.ConvTranspose1d(64, 64, 4, stride=2, padding=1), nn.GELU(),
            nn.ConvTranspose1d(64, 32, 4, stride=2, padding=1), nn.GELU(),
            nn.ConvTranspose1d(32, 3, 4, stride=2, padding=1),
        )

    def forward(self, x):
        z = self.to_z(self.enc(x).flatten(1))
        return self.dec(self.from_z(z).view(-1, 64, 32)), z


class EpochSpool:
    def __init__(self, run_dir, max_mb):
        self.run_dir = run_dir
        self.max_bytes = max_mb * 2 ** 20
        self.f = None
        self.records = 0

    def open(self, epoch):
        self.epoch = epoch
        self.f = tempfile.SpooledTemporaryFile(max_size=self.max_bytes, dir=self.run_dir,
                                               prefix=f"epoch{epoch:02d}_")
        self.records = 0

    @property
    def in_memory(self):
        return not self.f._rolled

    def write(self, step, err_profile, z):
        payload = np.concatenate([err_profile, z], axis=1).astype(np.float32)
        self.f.write(HDR.pack(self.epoch, step, payload.shape[0]))
        self.f.write(payload.tobytes())
        self.records += payload.shape[0]

    def seal(self):
        dest = os.path.join(self.run_dir, f"diagnostics_epoch{self.epoch:02d}.bin")
        self.f.seek(0)
        with open(dest, "wb") as out:
            shutil.copyfileobj(self.f, out, 1 << 20)
        self.f.close()
        self.f = None
        return os.path.getsize(dest)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps-per-epoch", type=int, default=360)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--spool-mb", type=int, default=20)
    p.add_argument("--log-every", type=int, default=90)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    model = ConvAE()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.epochs * args.steps_per_epoch)
    run_dir = tempfile.mkdtemp(prefix="pump_ae_", dir="/tmp")
    spool = EpochSpool(run_dir, args.spool_mb)
    xv, fv = pump_windows(np.random.default_rng(99), 1024)

    t0 = time.perf_counter()
    gstep = 0
    try:
        for epoch in range(args.epochs):
            spool.open(epoch)
            losses = []
            for step in range(args.steps_per_epoch):
                x, _ = pump_windows(rng, args.batch_size)
                recon, z = model(x)
                err = (recon - x).pow(2)
                loss = err.mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
                gstep += 1
                losses.append(loss.item())
                prof = err.detach().mean(dim=1)            # (B, WIN) error profile
                spool.write(step, prof.numpy(), z.detach().numpy())
                if (step + 1) % args.log_every == 0:
                    ms = (time.perf_counter() - t0) * 1000 / gstep
                    where = "memory" if spool.in_memory else "disk"
                    print(f"epoch {epoch} step {step + 1:4d}  loss {np.mean(losses[-args.log_every:]):.4f}  "
                          f"spooled {spool.records} windows ({where})  {ms:.1f} ms/step", flush=True)
            with torch.no_grad():
                score = torch.cat([(model(xb)[0] - xb).pow(2).mean(dim=(1, 2)) for xb in xv.split(128)]).numpy()
            thr = np.quantile(score[~fv], 0.99)
            recall = (score[fv] > thr).mean()
            size = spool.seal()
            print(f"epoch {epoch} done: fault recall@1%FPR {recall:.2f}, diagnostics file {size / 2**20:.1f} MB")
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
