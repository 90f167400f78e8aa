# expect: leak
# holder: pos_enc|_buffers
# pattern: streaming inference (no optimizer, no_grad): a positional-encoding module caches its sinusoid table with register_buffer under a name keyed by (absolute offset, length); on an endless stream the offset never repeats, so one new buffer is registered per chunk
# step_ms: 2
"""Always-on event detector running a small Transformer encoder over a stream.

A synthetic multichannel sensor stream is cut into 48-frame chunks.  Each
chunk is embedded, gets *absolute* sinusoidal positions (the model was trained
on long recordings, so positions keep counting up from the start of the
stream), goes through a 2-layer ``nn.TransformerEncoder`` and a per-frame
classifier.  Detections are debounced and counted.

``StreamingPositionalEncoding`` avoids recomputing the sin/cos table by
caching it as a non-persistent buffer (so ``model.to(device)`` moves it):
``self.register_buffer(f"pe_{offset}_{length}", table, persistent=False)``.

Why it leaks: ``offset`` is the absolute frame index of the chunk, so every
chunk of the endless stream produces a new key and ``pos_enc._buffers`` gains
one 48 x 128 table per step.  Nothing is ever removed.

Fix: compute one long table up front and slice it (modulo a maximum
position), or cache by ``length`` only and add the offset phase on the fly.
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(0)

N_CHANNELS = 12
D_MODEL = 128
CHUNK = 48
N_CHUNKS = 11000
THRESHOLD = 0.95
N_EVENTS = 3


class StreamingPositionalEncoding(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.d_model = d_model
        div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        self.register_buffer("div_term", div, persistent=False)

    def _table(self, offset, length):
        pos = torch.arange(offset, offset + length, dtype=torch.float32).unsqueeze(1)
        pe = torch.zeros(length, self.d_model)
        pe[:, 0::2] = torch.sin(pos * self.div_term)
        pe[:, 1::2] = torch.cos(pos * self.div_term)
        return pe

    def forward(self, x, offset):
        length = x.size(1)
        name = f"pe_{offset}_{length}"
        if not hasattr(self, name):
            self.register_buffer(name, self._table(offset, length).to(x.device), persistent=False)
        return x + getattr(self, name).unsqueeze(0)


class StreamingDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(N_CHANNELS, D_MODEL), nn.LayerNorm(D_MODEL))
        self.pos_enc = StreamingPositionalEncoding(D_MODEL)
        layer = nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=256,
                                           dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, N_EVENTS + 1)

    def forward(self, frames, offset):
        h = self.pos_enc(self.embed(frames), offset)
        return self.head(self.encoder(h))


class SensorStream:
    """Endless noisy multichannel stream with occasional bursts."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.t = 0
        self.freqs = self.rng.uniform(0.01, 0.2, size=N_CHANNELS)

    def next_chunk(self, n):
        t = np.arange(self.t, self.t + n)[:, None]
        x = np.sin(2 * np.pi * self.freqs * t) + 0.3 * self.rng.standard_normal((n, N_CHANNELS))
        if self.rng.random() < 0.05:
            start = self.rng.integers(0, n - 8)
            x[start:start + 8, self.rng.integers(0, N_CHANNELS)] += 4.0
        self.t += n
        return x.astype(np.float32)


def main():
    model = StreamingDetector().eval()
    stream = SensorStream(seed=1)

    offset = 0
    counts = np.zeros(N_EVENTS + 1, dtype=np.int64)
    score_sum = 0.0
    active = False
    t0 = time.time()
    with torch.no_grad():
        for i in range(N_CHUNKS):
            chunk = torch.from_numpy(stream.next_chunk(CHUNK)).unsqueeze(0)
            probs = model(chunk, offset).softmax(-1).squeeze(0)
            event_score = 1.0 - probs[:, 0]
            score_sum += event_score.mean().item()
            # debounce: one detection per run of frames above threshold
            above = (event_score > THRESHOLD).numpy()
            labels = probs[:, 1:].argmax(-1).numpy() + 1
            for hit, lab in zip(above, labels):
                if hit and not active:
                    counts[lab] += 1
                active = hit
            offset += CHUNK
            if (i + 1) % 1000 == 0:
                print(f"chunk {i + 1:5d}  frames {offset:7d}  events {counts[1:].tolist()}  "
                      f"mean score {score_sum / (i + 1):.3f}  "
                      f"{(time.time() - t0) * 1000 / (i + 1):.1f} ms/chunk", flush=True)


if __name__ == "__main__":
    main()
