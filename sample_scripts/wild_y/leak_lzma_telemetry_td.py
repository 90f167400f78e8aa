# expect: leak
# holder: LZMADecompressor|stream_batches
# pattern: NumPy-only off-policy value learning for a data-centre cooling controller (no torch, no optimizer: semi-gradient TD(0) on random Fourier features with a hand-written update; one loop iteration = one gateway tick, ~5 ms, code in main() + module-level generator functions). Logged transitions arrive as one long xz stream from a simulated gateway (gateway_packets() compresses ~130 records (~26 KB raw) of 2x24 float32 state features + action + reward per tick with lzma.LZMACompressor); the generator stream_batches() decodes it with a single lzma.LZMADecompressor and, to "bound memory", asks for at most one training batch per tick with dec.decompress(packet, max_length=BATCH*RECORD_BYTES). But the decompressor buffers every compressed byte it could not consume yet inside its C-level input buffer, and the code never drains it (it never checks dec.needs_input or calls decompress(b"") again), while the gateway delivers ~50% more records per tick than one batch of 80; so the unread compressed backlog held by the LZMADecompressor in the suspended generator's frame grows by ~9 KB per tick for the whole run, invisible to any Python-level container (the learner just sees data that lags further and further behind).
# step_ms: 5
"""Off-policy TD(0) value estimation from a compressed telemetry stream (NumPy only)."""
import lzma
import time

import numpy as np
import psutil

STATE_DIM = 24
RECORD = np.dtype([("s", "<f4", STATE_DIM), ("a", "<i4"), ("r", "<f4"), ("s2", "<f4", STATE_DIM)])
RECORD_BYTES = RECORD.itemsize
BATCH = 80


def rss_mb():
    return psutil.Process().memory_info().rss / 2**20


def gateway_packets(seed=0, mean_records=130):
    """Simulated rack gateway (endless): every tick, ship the records logged since the last tick."""
    rng = np.random.default_rng(seed)
    comp = lzma.LZMACompressor(format=lzma.FORMAT_XZ, preset=0)
    A = rng.normal(scale=0.3, size=(STATE_DIM, STATE_DIM)) / np.sqrt(STATE_DIM)
    B = rng.normal(scale=0.5, size=(4, STATE_DIM))
    drift = np.zeros(STATE_DIM)
    while True:
        n = int(rng.poisson(mean_records))
        drift = 0.98 * drift + rng.normal(scale=0.05, size=STATE_DIM)
        s = np.tanh(drift + rng.normal(scale=0.6, size=(n, STATE_DIM)))
        a = rng.integers(4, size=n)
        s2 = np.tanh(s @ A + B[a] + rng.normal(scale=0.2, size=(n, STATE_DIM)))
        rec = np.empty(n, dtype=RECORD)
        rec["s"], rec["a"], rec["s2"] = s, a, s2
        rec["r"] = -np.abs(s2[:, :6]).sum(axis=1) + 0.1 * (a == 0)
        yield comp.compress(rec.tobytes())


def stream_batches(packets):
    """Decode the xz stream and yield at most one batch of records per tick."""
    dec = lzma.LZMADecompressor()
    carry = b""
    for packet in packets:
        # max_length keeps us from ever materialising more than one batch
        raw = carry + dec.decompress(packet, max_length=BATCH * RECORD_BYTES)
        usable = len(raw) - len(raw) % RECORD_BYTES
        carry = raw[usable:]
        if usable:
            yield np.frombuffer(raw[:usable], dtype=RECORD)


class FourierTD:
    def __init__(self, dim, n_features=128, gamma=0.95, lr=0.02, seed=0):
        rng = np.random.default_rng(seed)
        self.P = rng.normal(scale=0.8, size=(dim, n_features))
        self.b = rng.uniform(0, 2 * np.pi, size=n_features)
        self.w = np.zeros(n_features)
        self.gamma, self.lr = gamma, lr

    def phi(self, s):
        return np.cos(s @ self.P + self.b) * np.sqrt(2.0 / self.P.shape[1])

    def update(self, s, r, s2):
        f, f2 = self.phi(s), self.phi(s2)
        delta = r + self.gamma * (f2 @ self.w) - f @ self.w
        self.w += self.lr * (delta @ f) / len(r)
        return float(np.mean(delta**2)), float(np.mean(f @ self.w))


def main():
    np.random.seed(0)
    n_ticks = 3600
    learner = FourierTD(STATE_DIM, seed=0)
    batches = stream_batches(gateway_packets(seed=0))
    seen = 0
    td_hist = []
    print(f"start: rss={rss_mb():.1f} MB")
    t0 = time.time()
    for tick in range(1, n_ticks + 1):
        batch = next(batches)
        s = batch["s"].astype(np.float64)
        s2 = batch["s2"].astype(np.float64)
        r = batch["r"].astype(np.float64)
        td2, v = learner.update(s, r, s2)
        td_hist.append(td2)
        seen += len(batch)
        if tick % 300 == 0:
            print(f"tick {tick:5d}  records={seen:8d}  td^2(avg300)={np.mean(td_hist[-300:]):.4f}  "
                  f"V(batch)={v:+.3f}  {1000 * (time.time() - t0) / tick:.2f} ms/tick  rss={rss_mb():.1f} MB")
    print(f"end: rss={rss_mb():.1f} MB  wall={time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
