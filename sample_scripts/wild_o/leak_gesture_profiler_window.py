# expect: leak
# holder: prof
# pattern: IMU gesture classifier (MLP on FFT band features, torch.optim.AdamW) starts a torch.profiler.profile at start-up to look at the first --profile-steps steps; the check that stops it and prints the table sits inside the `step % log_every == 0` block and compares step == profile_steps (30 vs log_every 25), so it never fires and the profiler keeps recording every op of every step until the final cleanup prof.stop()
# step_ms: 48
"""Wrist-IMU gesture recognition.

Trains a small MLP on spectral features of 6-axis accelerometer/gyroscope windows
(2 s at 50 Hz) to recognise eight hand gestures.  Windows are generated
synthetically from per-gesture motion templates with random tempo, amplitude,
sensor orientation and noise, which is close enough to the real recordings
for tuning the architecture.

Pass --profile-steps 0 to skip the op-level profile of the first steps.
"""
import argparse
import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile

N_GESTURES = 8
CHANNELS = 6
WINDOW = 100


def make_templates(rng):
    t = np.linspace(0, 1, WINDOW, dtype=np.float32)

    def motion(scale):
        freqs = rng.uniform(0.5, 4.0, size=CHANNELS)
        phases = rng.uniform(0, 2 * math.pi, size=CHANNELS)
        env = np.exp(-((t - rng.uniform(0.3, 0.7)) ** 2) / 0.05)
        return scale * np.sin(2 * math.pi * freqs[:, None] * t[None] + phases[:, None]) * env

    # gestures share most of the arm movement and differ in the wrist part
    base = motion(1.0)
    return np.stack([base + motion(0.35) for _ in range(N_GESTURES)]).astype(np.float32)


def sample_batch(rng, templates, batch_size):
    labels = rng.integers(0, N_GESTURES, size=batch_size)
    tempo = rng.uniform(0.8, 1.25, size=batch_size)
    grid = np.clip(np.arange(WINDOW)[None] * tempo[:, None], 0, WINDOW - 1)
    x = np.empty((batch_size, CHANNELS, WINDOW), dtype=np.float32)
    for i, (g, idx) in enumerate(zip(labels, grid)):
        lo = idx.astype(int)
        x[i] = templates[g][:, lo]
    # random rotation of the accelerometer triad (watch worn slightly differently)
    ang = rng.normal(0, 0.3, size=batch_size)
    c, s = np.cos(ang), np.sin(ang)
    ax, ay = x[:, 0].copy(), x[:, 1].copy()
    x[:, 0] = c[:, None] * ax - s[:, None] * ay
    x[:, 1] = s[:, None] * ax + c[:, None] * ay
    x *= rng.uniform(0.7, 1.3, size=(batch_size, 1, 1)).astype(np.float32)
    x += rng.normal(0, 0.6, size=x.shape).astype(np.float32)
    return x, torch.from_numpy(labels)


def spectral_features(x):
    """Per-channel log band energies of the window plus simple statistics."""
    spec = np.abs(np.fft.rfft(x, axis=-1))[..., 1:41]
    bands = np.log1p(spec.reshape(*spec.shape[:-1], 10, 4).mean(-1))
    stats = np.stack([x.mean(-1), x.std(-1), np.abs(np.diff(x, axis=-1)).mean(-1)], -1)
    feats = np.concatenate([bands, stats], -1).reshape(len(x), -1)
    return torch.from_numpy(feats.astype(np.float32))


class GestureNet(nn.Module):
    def __init__(self, in_dim=CHANNELS * 13, width=1024):
        super().__init__()
        self.inp = nn.Sequential(nn.LayerNorm(in_dim), nn.Linear(in_dim, width))
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU()) for _ in range(2)]
        )
        self.head = nn.Linear(width, N_GESTURES)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.head(h)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=450)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--profile-steps", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    templates = make_templates(rng)
    model = GestureNet()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)

    prof = None
    if args.profile_steps > 0:
        prof = profile(activities=[ProfilerActivity.CPU])
        prof.start()

    t0 = time.time()
    ema_loss, ema_acc = None, None
    for step in range(1, args.steps + 1):
        x, y = sample_batch(rng, templates, args.batch_size)
        logits = model(spectral_features(x))
        loss = F.cross_entropy(logits, y, label_smoothing=0.05)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if prof is not None:
            prof.step()

        acc = (logits.argmax(1) == y).float().mean().item()
        ema_loss = loss.item() if ema_loss is None else 0.95 * ema_loss + 0.05 * loss.item()
        ema_acc = acc if ema_acc is None else 0.95 * ema_acc + 0.05 * acc

        if step % args.log_every == 0:
            if prof is not None and step == args.profile_steps:
                prof.stop()
                print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))
                prof = None
            if step % (args.log_every * 3) == 0:
                print(f"step {step:5d}  loss {ema_loss:.3f}  acc {ema_acc:.3f}  "
                      f"lr {sched.get_last_lr()[0]:.2e}  {time.time() - t0:.1f}s", flush=True)

    if prof is not None:
        prof.stop()

    model.eval()
    correct = total = 0
    with torch.no_grad():
        for _ in range(20):
            x, y = sample_batch(rng, templates, 256)
            correct += (model(spectral_features(x)).argmax(1) == y).sum().item()
            total += y.numel()
    print(f"held-out accuracy {correct / total:.3f} ({total} windows), {time.time() - t0:.1f}s total")


if __name__ == "__main__":
    main()
