# expect: no_leak
# pattern: spectral-mask speech denoiser (GRU over STFT frames, torch.optim.AdamW) runs its whole training loop inside a torch.profiler.profile context with schedule(wait=20, warmup=3, active=5, repeat=2); only two 5-step windows are recorded, each is summarised and exported as a chrome trace into a temp dir by on_trace_ready, and afterwards the profiler records nothing, so memory rises a little around the two windows early on and is flat for the rest of the run
# step_ms: 38
"""Single-channel speech enhancement with a spectral mask.

A GRU reads log-magnitude STFT frames of noisy audio and predicts a [0, 1]
mask per time-frequency bin; the loss is computed on the masked magnitude
against the clean magnitude.  "Speech" is synthesised as harmonic voiced
segments with drifting pitch and formant-like envelopes; noise is a mix of
coloured stationary noise and babble-like bursts.

The first steps are profiled (two short windows) so regressions in the data
path show up in the trace.
"""
import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

SR = 16000
N_FFT = 512
HOP = 128


def synth_speech(rng, n):
    t = np.arange(n) / SR
    out = np.zeros(n)
    pos = 0
    while pos < n:
        seg = int(rng.uniform(0.08, 0.3) * SR)
        if rng.random() < 0.7:
            f0 = rng.uniform(90, 240) * (1 + 0.1 * np.sin(2 * np.pi * rng.uniform(1, 4) * t[pos:pos + seg]))
            phase = 2 * np.pi * np.cumsum(f0) / SR
            formants = rng.uniform([300, 900, 2200], [800, 2000, 3200])
            voiced = np.zeros_like(phase)
            for h in range(1, 13):
                fh = h * f0.mean()
                gain = sum(np.exp(-((fh - f) / 150) ** 2) for f in formants) + 0.05
                voiced += gain * np.sin(h * phase) / h
            env = np.hanning(len(voiced))
            out[pos:pos + len(voiced)] += env * voiced
        pos += seg
    return out / (np.abs(out).max() + 1e-6)


def synth_noise(rng, n):
    white = rng.standard_normal(n)
    spec = np.fft.rfft(white)
    tilt = rng.uniform(-1.5, 0.5)
    spec *= (np.arange(len(spec)) + 1.0) ** (tilt / 2)
    noise = np.fft.irfft(spec, n)
    bursts = np.repeat(rng.random(n // 800 + 1) < 0.2, 800)[:n] * rng.standard_normal(n) * 0.5
    noise = noise / (noise.std() + 1e-9) + bursts
    return noise


def make_batch(rng, batch, seconds):
    n = int(seconds * SR)
    clean = np.stack([synth_speech(rng, n) for _ in range(batch)]).astype(np.float32)
    noise = np.stack([synth_noise(rng, n) for _ in range(batch)]).astype(np.float32)
    snr_db = rng.uniform(-5, 15, size=(batch, 1))
    scale = clean.std(1, keepdims=True) / (noise.std(1, keepdims=True) * 10 ** (snr_db / 20))
    return torch.from_numpy(clean), torch.from_numpy(clean + scale.astype(np.float32) * noise)


class MaskGRU(nn.Module):
    def __init__(self, n_bins=N_FFT // 2 + 1, hidden=128):
        super().__init__()
        self.norm = nn.LayerNorm(n_bins)
        self.gru = nn.GRU(n_bins, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_bins)

    def forward(self, logmag):
        h, _ = self.gru(self.norm(logmag))
        return torch.sigmoid(self.out(h))


def stft_mag(x, window):
    spec = torch.stft(x, N_FFT, HOP, window=window, return_complex=True)
    return spec.abs().transpose(1, 2)  # (batch, frames, bins)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=560)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=4)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    model = MaskGRU()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    window = torch.hann_window(N_FFT)
    trace_dir = tempfile.mkdtemp(prefix="denoiser-trace-")

    def on_trace_ready(prof):
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=6)
        path = os.path.join(trace_dir, f"trace_{prof.step_num}.json")
        prof.export_chrome_trace(path)
        print(f"-- profiled window ending at step {prof.step_num} "
              f"(trace {os.path.getsize(path) / 1e6:.1f} MB)")
        print(table)

    t0 = time.time()
    smooth = None
    try:
        with profile(activities=[ProfilerActivity.CPU],
                     schedule=schedule(wait=20, warmup=3, active=5, repeat=2),
                     on_trace_ready=on_trace_ready) as prof:
            for step in range(1, args.steps + 1):
                clean, noisy = make_batch(rng, args.batch, args.seconds)
                clean_mag = stft_mag(clean, window)
                noisy_mag = stft_mag(noisy, window)
                mask = model(torch.log1p(noisy_mag))
                est = mask * noisy_mag
                loss = (torch.log1p(est) - torch.log1p(clean_mag)).abs().mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 3.0)
                opt.step()
                prof.step()

                smooth = loss.item() if smooth is None else 0.98 * smooth + 0.02 * loss.item()
                if step % 100 == 0:
                    with torch.no_grad():
                        gain_db = 10 * torch.log10(((clean_mag - noisy_mag) ** 2).mean()
                                                   / ((clean_mag - est) ** 2).mean())
                    print(f"step {step:4d}  loss {smooth:.4f}  magnitude SNR gain {gain_db.item():+.2f} dB  "
                          f"({time.time() - t0:.1f}s)", flush=True)
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
