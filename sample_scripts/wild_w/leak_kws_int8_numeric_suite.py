# expect: leak
# holder: OutputLogger.stats|stats.tensor_val|tensor_val|float_model|q_model|activation_post_process
# pattern: int8 deployment check for a keyword-spotting CNN (eager-mode post-training static quantization: fuse, prepare, calibrate, convert; no optimizer, the stand-in float model gets a closed-form ridge-regression head; evaluation only under torch.no_grad, ~22 ms per streamed batch of 6 reverberant clips, code in main() + helper functions); to report per-layer SQNR between the float and the int8 model, the script attaches the PyTorch Numeric Suite loggers once with torch.ao.ns._numeric_suite.prepare_model_outputs(float_model, q_model) and after every streamed batch reads get_matching_activations(...)[layer]["float"][-1] / ["quantized"][-1]; the OutputLogger modules (activation_post_process of every fused conv/linear and stub in both models) append every forward's output to logger.stats["tensor_val"] and are never reset, so every batch's float32 and quint8 activations of every layer stay referenced from the two models for the whole run
# step_ms: 22
"""Int8 readiness check for the keyword-spotting CNN.

Steps:
  1. build the float model (here: a stand-in with a closed-form ridge head
     fitted on synthetic keyword clips, so the numbers are meaningful),
  2. eager-mode post-training static quantization (fuse conv+bn+relu,
     x86 qconfig, calibrate on a few batches, convert),
  3. stream an evaluation set (raw 0.5 s clips -> log-mel front end) through both models (reverberant test
     condition with babble noise) and track top-1 agreement,
     accuracy of both models and per-layer SQNR using PyTorch's Numeric Suite.

Usage:  python kws_int8_numeric_suite.py [--steps 800] [--batch 6]
"""
import argparse
import copy
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.ao.ns._numeric_suite as ns
from torch.ao.quantization import DeQuantStub, QuantStub, convert, fuse_modules, get_default_qconfig, prepare

warnings.filterwarnings("ignore", category=UserWarning, module="torch.ao")
warnings.filterwarnings("ignore", message="torch.ao.quantization is deprecated")
N_CLASSES = 12
T, F = 48, 32


class KWSNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = QuantStub()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, N_CLASSES)
        self.dequant = DeQuantStub()

    def embed(self, x):
        return torch.flatten(self.pool(self.features(x)), 1)

    def forward(self, x):
        x = self.quant(x)
        x = self.fc(torch.flatten(self.pool(self.features(x)), 1))
        return self.dequant(x)


SR = 16000
CLIP = 8000                    # 0.5 s clips
WIN, HOP, NFFT = 400, 160, 512


def mel_filterbank(n_mels=F, n_fft=NFFT, sr=SR, fmin=60.0, fmax=7600.0):
    def hz2mel(f):
        return 2595 * np.log10(1 + f / 700.0)

    def mel2hz(m):
        return 700 * (10 ** (m / 2595) - 1)

    mels = np.linspace(hz2mel(fmin), hz2mel(fmax), n_mels + 2)
    bins = np.floor((n_fft + 1) * mel2hz(mels) / sr).astype(int)
    fb = np.zeros((n_mels, n_fft // 2 + 1), np.float32)
    for m in range(1, n_mels + 1):
        l, c, r = bins[m - 1], bins[m], bins[m + 1]
        fb[m - 1, l:c] = (np.arange(l, c) - l) / max(c - l, 1)
        fb[m - 1, c:r] = (r - np.arange(c, r)) / max(r - c, 1)
    return fb


MEL_FB = mel_filterbank()
WINDOW = np.hanning(WIN).astype(np.float32)


def log_mel(wave):
    """Front end: 25 ms Hann frames, 10 ms hop, 512-pt FFT, 32 mel bands, log."""
    idx = np.arange(T)[:, None] * HOP + np.arange(WIN)[None, :]
    frames = wave[idx] * WINDOW
    spec = np.abs(np.fft.rfft(frames, n=NFFT)) ** 2
    return np.log(spec @ MEL_FB.T + 1e-6).astype(np.float32)


def make_templates(rng):
    """Each keyword = a few formant-like chirps with class-specific timing."""
    temps = []
    for c in range(N_CLASSES):
        parts = []
        for _ in range(3):
            parts.append((rng.uniform(0.05, 0.3), rng.uniform(0.06, 0.15),
                          rng.uniform(200, 3500), rng.uniform(-3000, 3000)))
        temps.append(parts)
    return temps


def room_impulse_response(rng, n_taps=6000):
    """Exponentially decaying noise tail + direct path (RT60 ~ 0.3-0.7 s)."""
    rt60 = rng.uniform(0.3, 0.7)
    t = np.arange(n_taps) / SR
    rir = rng.normal(0, 1, n_taps) * np.exp(-6.9 * t / rt60)
    rir[0] = 8.0
    return (rir / np.abs(rir).sum()).astype(np.float32)


def synth_batch(rng, temps, n, reverb=True):
    y = rng.integers(0, N_CLASSES, n)
    x = np.empty((n, 1, T, F), np.float32)
    t = np.arange(CLIP + WIN, dtype=np.float32) / SR
    for i, c in enumerate(y):
        wave = rng.normal(0, 0.08, t.shape).astype(np.float32)
        jitter = rng.uniform(-0.04, 0.04)
        for start, dur, f0, sweep in temps[c]:
            env = np.exp(-0.5 * ((t - start - jitter - dur / 2) / (dur / 3)) ** 2)
            phase = 2 * np.pi * (f0 * t + 0.5 * sweep * t ** 2)
            wave += (env * np.sin(phase) * rng.uniform(0.3, 1.0)).astype(np.float32)
        # babble: two interfering keywords at lower level
        for other in rng.integers(0, N_CLASSES, 2):
            start, dur, f0, sweep = temps[other][rng.integers(0, 3)]
            env = np.exp(-0.5 * ((t - rng.uniform(0, 0.4) - dur / 2) / (dur / 3)) ** 2)
            wave += (0.35 * env * np.sin(2 * np.pi * (f0 * t + 0.5 * sweep * t ** 2))).astype(np.float32)
        if reverb:
            wave = np.convolve(wave, room_impulse_response(rng))[:len(t)].astype(np.float32)
        x[i, 0] = log_mel(wave)
    x = (x + 6.0) / 4.0
    return torch.from_numpy(x), torch.from_numpy(y)


@torch.no_grad()
def fit_standin_model(model, rng, temps, n_batches=12, batch=64, ridge=1e-2):
    """BatchNorm statistics from data + closed-form ridge head (no SGD)."""
    model.train()
    for _ in range(4):
        model.embed(synth_batch(rng, temps, batch)[0])
    model.eval()
    feats, labels = [], []
    for _ in range(n_batches):
        x, y = synth_batch(rng, temps, batch)
        feats.append(model.embed(x))
        labels.append(y)
    Z = torch.cat(feats)
    Z = torch.cat([Z, torch.ones(len(Z), 1)], 1)
    Y = nn.functional.one_hot(torch.cat(labels), N_CLASSES).float()
    W = torch.linalg.solve(Z.T @ Z + ridge * torch.eye(Z.shape[1]), Z.T @ Y)
    model.fc.weight.copy_(W[:-1].T)
    model.fc.bias.copy_(W[-1])


def sqnr_db(ref, test):
    noise = (ref - test).pow(2).mean()
    return 10 * torch.log10(ref.pow(2).mean() / (noise + 1e-12)).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=800, help="evaluation batches to stream")
    ap.add_argument("--batch", type=int, default=6)
    ap.add_argument("--calib", type=int, default=16)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    torch.backends.quantized.engine = "x86"
    rng = np.random.default_rng(0)
    temps = make_templates(rng)

    model = KWSNet()
    fit_standin_model(model, rng, temps)
    model.eval()
    fuse_modules(model, [["features.0", "features.1", "features.2"],
                         ["features.4", "features.5", "features.6"],
                         ["features.8", "features.9", "features.10"]], inplace=True)
    float_model = copy.deepcopy(model)

    model.qconfig = get_default_qconfig("x86")
    prepared = prepare(model)
    with torch.no_grad():
        for _ in range(args.calib):
            prepared(synth_batch(rng, temps, 32)[0])
    q_model = convert(prepared)

    # Numeric Suite: log the outputs of matching layers in both models
    ns.prepare_model_outputs(float_model, q_model)

    agree = correct_f = correct_q = seen = 0
    sqnr_sum = {}
    t0 = time.time()
    with torch.no_grad():
        for step in range(args.steps):
            x, y = synth_batch(rng, temps, args.batch)
            out_f = float_model(x)
            out_q = q_model(x)
            pf, pq = out_f.argmax(1), out_q.argmax(1)
            agree += (pf == pq).sum().item()
            correct_f += (pf == y).sum().item()
            correct_q += (pq == y).sum().item()
            seen += len(y)

            acts = ns.get_matching_activations(float_model, q_model)
            for name, pair in acts.items():
                ref = pair["float"][-1]
                test = pair["quantized"][-1]
                test = test.dequantize() if test.is_quantized else test
                ref = ref.dequantize() if ref.is_quantized else ref
                sqnr_sum[name] = sqnr_sum.get(name, 0.0) + sqnr_db(ref, test)

            if step % 100 == 0:
                worst = min(sqnr_sum, key=sqnr_sum.get) if sqnr_sum else "-"
                print(f"[{time.time() - t0:6.1f}s] batch {step:4d}  agree={agree / seen:.3f}  "
                      f"acc fp32={correct_f / seen:.3f} int8={correct_q / seen:.3f}  "
                      f"worst layer {worst}: {sqnr_sum.get(worst, 0) / (step + 1):.1f} dB", flush=True)

    print(f"streamed {seen} clips in {time.time() - t0:.1f}s")
    for name in sorted(sqnr_sum):
        print(f"  {name:28s} mean SQNR {sqnr_sum[name] / args.steps:6.1f} dB")


if __name__ == "__main__":
    main()
