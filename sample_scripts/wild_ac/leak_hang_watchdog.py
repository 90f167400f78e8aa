# expect: leak
# holder: step_watchdog|watchdog|Timer|_timer|threading._active|args
# pattern: raw-waveform keyword-spotting 1D CNN (torch.optim.Adam, class-balanced custom BatchSampler, DataLoader num_workers=0, ~80 ms steps, code in main() + module-level helpers); because of past NFS stalls every training step runs inside the context manager step_watchdog(step, batch), which starts a daemon threading.Timer(HANG_TIMEOUT_S, dump_hang, args=(step, batch)) that would dump the stacks and save the offending batch if the step hangs; the finally: block says `timer.cancel` without the call parentheses, so the timer is never cancelled: every step leaves a sleeping Timer thread (kept in threading._active) whose args hold that step's batch dict (48 waveforms + their log-mel features + labels), and since HANG_TIMEOUT_S is 15 minutes none of them ever fires during the run - one batch (~1.1 MB) plus a sleeping thread per step piles up
# step_ms: 80
"""Keyword spotting on raw waveforms, small 1D CNN.

Synthetic 'commands' (tone sweeps + formant-ish chirps with noise) so the script
runs anywhere. The watchdog is there because the cluster's NFS used to hang a step
for minutes without any error message.
"""
import contextlib
import faulthandler
import os
import sys
import tempfile
import threading
import time
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

torch.set_num_threads(1)

SR = 8000
CLIP = 4000                 # 0.5 s clips
WORDS = ["yes", "no", "up", "down", "left", "right", "stop", "go", "on", "off"]
HANG_TIMEOUT_S = 15 * 60
RUN_SECONDS = 17.0
DUMP_DIR = os.path.join(tempfile.gettempdir(), "kws_hang_dumps")


# --------------------------------------------------------------------------- data
class SynthCommands(Dataset):
    def __init__(self, n, seed=0):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(len(WORDS), size=n)
        self.seeds = rng.integers(1 << 31, size=n)
        self.t = np.arange(CLIP, dtype=np.float32) / SR

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        y = int(self.labels[i])
        rng = np.random.default_rng(int(self.seeds[i]))
        f0 = 220 + 90 * y + rng.normal(0, 12)
        sweep = (y % 3 - 1) * 300.0
        phase = 2 * np.pi * (f0 * self.t + 0.5 * sweep * self.t ** 2)
        env = np.exp(-((self.t - rng.uniform(0.15, 0.35)) ** 2) / 0.01)
        wav = env * (np.sin(phase) + 0.4 * np.sin(2.1 * phase + y))
        wav += rng.normal(0, 0.3, CLIP)
        wav = np.roll(wav, rng.integers(-600, 600)).astype(np.float32)
        return torch.from_numpy(wav), y


class BalancedBatchSampler(Sampler):
    """k examples of each of m random classes per batch (like the triplet-loss samplers)."""

    def __init__(self, labels, m_classes, k_per_class, n_batches, seed=0):
        self.by_class = defaultdict(list)
        for i, y in enumerate(labels):
            self.by_class[int(y)].append(i)
        self.m, self.k, self.n_batches = m_classes, k_per_class, n_batches
        self.rng = np.random.default_rng(seed)

    def __iter__(self):
        for _ in range(self.n_batches):
            classes = self.rng.choice(len(self.by_class), self.m, replace=False)
            batch = []
            for c in classes:
                batch.extend(self.rng.choice(self.by_class[c], self.k, replace=False).tolist())
            yield batch

    def __len__(self):
        return self.n_batches


_mel_fb = None


def log_mel(wav, n_fft=256, hop=80, n_mels=40):
    global _mel_fb
    spec = torch.stft(wav, n_fft, hop, window=torch.hann_window(n_fft), return_complex=True).abs() ** 2
    if _mel_fb is None:
        f = np.linspace(0, SR / 2, n_fft // 2 + 1)
        mel = 2595 * np.log10(1 + f / 700)
        edges = np.linspace(mel.min(), mel.max(), n_mels + 2)
        fb = np.maximum(0, 1 - np.abs(mel[None, :] - edges[1:-1, None]) / (edges[1] - edges[0]))
        _mel_fb = torch.tensor(fb, dtype=torch.float32)
    return torch.log(_mel_fb @ spec + 1e-6)


# --------------------------------------------------------------------------- hang detection
def dump_hang(step, batch):
    os.makedirs(DUMP_DIR, exist_ok=True)
    with open(os.path.join(DUMP_DIR, f"hang_step{step}.txt"), "w") as fh:
        faulthandler.dump_traceback(file=fh, all_threads=True)
    torch.save(batch, os.path.join(DUMP_DIR, f"hang_step{step}.pt"))
    print(f"!! step {step} exceeded {HANG_TIMEOUT_S}s, stacks dumped", file=sys.stderr, flush=True)


@contextlib.contextmanager
def step_watchdog(step, batch, timeout=HANG_TIMEOUT_S):
    timer = threading.Timer(timeout, dump_hang, args=(step, batch))
    timer.daemon = True          # never block interpreter shutdown
    timer.start()
    try:
        yield
    finally:
        timer.cancel


# --------------------------------------------------------------------------- model
class WaveCNN(nn.Module):
    def __init__(self, n_cls=len(WORDS)):
        super().__init__()
        self.front = nn.Sequential(
            nn.Conv1d(1, 32, 41, stride=4, padding=20), nn.BatchNorm1d(32), nn.ReLU(),
            nn.Conv1d(32, 48, 15, stride=2, padding=7), nn.BatchNorm1d(48), nn.ReLU(),
            nn.Conv1d(48, 64, 9, stride=2, padding=4), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Conv1d(64, 96, 9, stride=2, padding=4), nn.BatchNorm1d(96), nn.ReLU(),
        )
        self.mel_branch = nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.ReLU())
        self.head = nn.Linear(96 + 64, n_cls)

    def forward(self, wav, mel):
        a = self.front(wav.unsqueeze(1)).mean(-1)
        b = self.mel_branch(mel).amax(-1)
        return self.head(torch.cat([a, b], 1))


def evaluate(model, loader):
    model.eval()
    correct = n = 0
    with torch.no_grad():
        for wav, y in loader:
            pred = model(wav, log_mel(wav)).argmax(1)
            correct += (pred == y).sum().item()
            n += len(y)
    model.train()
    return correct / n


def main():
    torch.manual_seed(0)
    train_ds = SynthCommands(6000, seed=1)
    val_ds = SynthCommands(320, seed=2)
    sampler = BalancedBatchSampler(train_ds.labels, m_classes=8, k_per_class=6, n_batches=100_000)
    train_dl = DataLoader(train_ds, batch_sampler=sampler, num_workers=0)
    val_dl = DataLoader(val_ds, batch_size=160)

    model = WaveCNN()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=80, gamma=0.7)

    hist = defaultdict(list)
    t0 = last_print = time.time()
    for step, (wav, y) in enumerate(train_dl):
        mel = log_mel(wav)
        batch = {"wav": wav, "mel": mel, "y": y, "idx": step}
        with step_watchdog(step, batch):
            logits = model(batch["wav"], batch["mel"])
            loss = F.cross_entropy(logits, batch["y"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        hist["loss"].append(loss.item())
        if step % 50 == 49:
            hist["val_acc"].append(evaluate(model, val_dl))
        now = time.time()
        if now - last_print > 2.0:
            va = hist["val_acc"][-1] if hist["val_acc"] else float("nan")
            print(f"step {step:4d} loss {np.mean(hist['loss'][-20:]):.3f} val_acc {va:.3f} "
                  f"threads {threading.active_count()}", flush=True)
            last_print = now
        if now - t0 > RUN_SECONDS:
            break
    print(f"finished {step + 1} steps, final val acc {evaluate(model, val_dl):.3f}")


if __name__ == "__main__":
    main()
