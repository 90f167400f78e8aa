# expect: leak
# holder: torch.jit._state._python_cu|ExportGuard|guard.check|torch.jit.trace
# pattern: 1-D U-Net speech denoiser on synthetic voiced signals + coloured noise (torch.optim.AdamW, L1 + STFT-magnitude loss, slow ~210 ms steps of 8x4096 samples, code in main() + UNet1d/ExportGuard/MetricTracker classes); because the model has to ship as TorchScript, ExportGuard.check() runs torch.jit.trace(model, example) every 2nd step and compares the traced output with eager on the example and on a 2x longer input; the traced ScriptModule is a local that is dropped after the comparison, but every trace registers a new uniquely-mangled module type (with its methods and graphs) in TorchScript's global compilation unit, which is never cleared, so each check leaves a few MB behind in C++ memory that no Python object owns; RSS climbs by one trace's worth every other step for the whole run
# step_ms: 210
"""Wave-U-Net style speech denoising with a TorchScript export guard.

Clean signals are synthetic voiced segments (harmonic stacks with a
wandering pitch, formant-shaped amplitudes and syllable envelopes);
noisy inputs add brown/pink noise and short clicks at a random SNR.
The model is a small 1-D U-Net predicting the noise residual.

The deployment target only accepts TorchScript, so during training an
ExportGuard periodically traces the model and checks that the traced
graph reproduces the eager output on a fixed example (catching any
data-dependent Python control flow as soon as it is introduced).

Main options (defaults):
    --steps 90 --export-every 2
"""
import argparse
import os
import time
import warnings
from dataclasses import dataclass

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


@dataclass
class Config:
    sr: int = 16000
    length: int = 4096
    batch: int = 8
    channels: tuple = (16, 32, 64, 96)
    lr: float = 2e-3
    wd: float = 1e-4
    snr_db: tuple = (-5.0, 10.0)
    n_fft: int = 512


def synth_clean(rng, n, length, sr):
    t = np.arange(length) / sr
    out = np.zeros((n, length), np.float32)
    for i in range(n):
        f0 = rng.uniform(90, 260) * (1 + 0.08 * np.sin(2 * np.pi * rng.uniform(1, 4) * t + rng.uniform(0, 6)))
        phase = 2 * np.pi * np.cumsum(f0) / sr
        formants = rng.uniform([300, 900, 2200], [900, 2200, 3500])
        sig = np.zeros(length)
        for h in range(1, 25):
            fh = h * f0.mean()
            if fh > sr / 2:
                break
            amp = sum(np.exp(-((fh - f) / 180.0) ** 2) for f in formants) / h ** 0.5
            sig += amp * np.sin(h * phase)
        syll = np.clip(np.sin(2 * np.pi * rng.uniform(3, 6) * t + rng.uniform(0, 6)), 0, None) ** 0.7
        out[i] = sig * syll
        out[i] /= np.abs(out[i]).max() + 1e-6
    return out


def synth_noise(rng, n, length):
    white = rng.normal(0, 1, (n, length))
    brown = np.cumsum(white, axis=1)
    brown -= np.linspace(brown[:, :1], brown[:, -1:], length, axis=1)[..., 0]
    mix = rng.uniform(0, 1, (n, 1))
    noise = mix * brown / (brown.std(1, keepdims=True) + 1e-6) + (1 - mix) * white
    clicks = (rng.random((n, length)) < 2e-3) * rng.normal(0, 4, (n, length))
    return (noise + clicks).astype(np.float32)


def make_batch(rng, cfg):
    clean = synth_clean(rng, cfg.batch, cfg.length, cfg.sr)
    noise = synth_noise(rng, cfg.batch, cfg.length)
    snr = rng.uniform(*cfg.snr_db, (cfg.batch, 1))
    p_s = (clean ** 2).mean(1, keepdims=True)
    p_n = (noise ** 2).mean(1, keepdims=True)
    noisy = clean + noise * np.sqrt(p_s / (p_n * 10 ** (snr / 10)))
    return torch.from_numpy(noisy[:, None].astype(np.float32)), torch.from_numpy(clean[:, None])


class Down(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.c1 = nn.Conv1d(cin, cout, 5, padding=2)
        self.c2 = nn.Conv1d(cout, cout, 5, padding=2)
        self.norm = nn.GroupNorm(4, cout)

    def forward(self, x):
        return F.max_pool1d(F.gelu(self.norm(self.c2(F.gelu(self.c1(x))))), 2)


class Up(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.c1 = nn.Conv1d(cin, cout, 5, padding=2)
        self.c2 = nn.Conv1d(cout, cout, 5, padding=2)
        self.norm = nn.GroupNorm(4, cout)

    def forward(self, x, skip):
        x = torch.cat([F.interpolate(x, scale_factor=2.0), skip], 1)
        return F.gelu(self.norm(self.c2(F.gelu(self.c1(x)))))


class UNet1d(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.inp = nn.Conv1d(1, ch[0], 7, padding=3)
        self.downs = nn.ModuleList([Down(ch[i], ch[i + 1]) for i in range(len(ch) - 1)])
        self.ups = nn.ModuleList([Up(ch[i + 1] + ch[i], ch[i]) for i in reversed(range(len(ch) - 1))])
        self.out = nn.Conv1d(ch[0], 1, 1)

    def forward(self, x):
        h = self.inp(x)
        skips = []
        for d in self.downs:
            skips.append(h)
            h = d(h)
        for u in self.ups:
            h = u(h, skips.pop())
        return x - self.out(h)


class ExportGuard:
    """Fails fast if the model stops being traceable / trace-equivalent."""

    def __init__(self, example, tol=1e-4):
        self.example = example
        # a second, longer input catches shapes that the trace baked in as constants
        self.example_long = torch.cat([example, example.flip(-1)], dim=-1)
        self.tol = tol
        self.n_checks = 0
        self.worst = 0.0

    @torch.no_grad()
    def check(self, model):
        was_training = model.training
        model.eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            traced = torch.jit.trace(model, self.example, check_trace=False)
        diff = 0.0
        for x in (self.example, self.example_long):
            diff = max(diff, (traced(x) - model(x)).abs().max().item())
        model.train(was_training)
        self.n_checks += 1
        self.worst = max(self.worst, diff)
        if diff > self.tol:
            raise RuntimeError(f"traced model diverges from eager (max abs diff {diff:.2e})")
        return diff


class MetricTracker:
    def __init__(self, momentum=0.9):
        self.m = momentum
        self.values = {}

    def update(self, **kw):
        for k, v in kw.items():
            self.values[k] = v if k not in self.values else self.m * self.values[k] + (1 - self.m) * v

    def __str__(self):
        return "  ".join(f"{k} {v:.4f}" for k, v in self.values.items())


def stft_mag(x, n_fft):
    win = torch.hann_window(n_fft)
    return torch.stft(x.squeeze(1), n_fft, hop_length=n_fft // 4, window=win, return_complex=True).abs()


def si_sdr(est, ref):
    ref = ref - ref.mean(-1, keepdim=True)
    est = est - est.mean(-1, keepdim=True)
    a = (est * ref).sum(-1, keepdim=True) / ((ref ** 2).sum(-1, keepdim=True) + 1e-8)
    proj = a * ref
    return (10 * torch.log10((proj ** 2).sum(-1) / (((est - proj) ** 2).sum(-1) + 1e-8) + 1e-8)).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=90)
    ap.add_argument("--export-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    cfg = Config()
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    model = UNet1d(cfg.channels)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.wd)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=args.steps, pct_start=0.2)
    example, _ = make_batch(np.random.default_rng(1234), Config(batch=2))
    guard = ExportGuard(example)
    tracker = MetricTracker()

    t0 = time.time()
    for step in range(1, args.steps + 1):
        noisy, clean = make_batch(rng, cfg)
        est = model(noisy)
        loss = F.l1_loss(est, clean) + 0.5 * F.l1_loss(stft_mag(est, cfg.n_fft), stft_mag(clean, cfg.n_fft))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        sched.step()
        with torch.no_grad():
            tracker.update(loss=loss.item(), si_sdr_in=si_sdr(noisy, clean).item(), si_sdr_out=si_sdr(est, clean).item())

        if step % args.export_every == 0:
            guard.check(model)
        if step % 10 == 0:
            print(f"step {step:4d}  {tracker}  trace checks {guard.n_checks} (worst diff {guard.worst:.1e})  "
                  f"{(time.time() - t0) / step * 1e3:.0f} ms/step", flush=True)

    print(f"done; SI-SDR improvement {tracker.values['si_sdr_out'] - tracker.values['si_sdr_in']:+.2f} dB")


if __name__ == "__main__":
    main()
