# expect: leak
# holder: uploader._open|self._open
# pattern: NumPy-only call-centre speech feature pipeline (log-mel + energy VAD per 1 s chunk, no torch, no optimizer, ~1.5 ms per chunk, code in main() + a SegmentUploader class); every voiced segment gets its own streaming zlib.compressobj(level=6, memLevel=9) kept in uploader._open[(call_id, channel)] until the VAD closes the segment, when it is flushed and popped; when a call ends (hang-up) while one of its channels is mid-utterance, end_call() only drops the call's VAD state and never flushes/pops the segments still open for that call, so every such segment's compressor stays in the dict; each holds ~250 KB of C-level deflate state (window, hash chains, pending buffer) behind a ~100-byte Python object, so RSS grows steadily while the Python-visible size of the dict stays tiny
# step_ms: 1.5
"""Call-centre feature uploader.

Consumes interleaved 1 s audio chunks from several concurrent calls (two
channels each: agent and caller), computes 40-band log-mel features (+ deltas), cuts
voiced segments with an energy VAD and ships each segment as an
independently decodable, zlib-compressed int8 feature stream.
"""
import time
import zlib

import numpy as np

SR = 16000
CHUNK = SR
N_FFT = 512
HOP = 160
N_MELS = 40
CONCURRENT_CALLS = 6
RUN_SECONDS = 17.0


def mel_filterbank(sr=SR, n_fft=N_FFT, n_mels=N_MELS, fmin=60.0, fmax=7600.0):
    def hz2mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def mel2hz(m):
        return 700.0 * (10 ** (m / 2595.0) - 1.0)

    mels = np.linspace(hz2mel(fmin), hz2mel(fmax), n_mels + 2)
    bins = np.floor((n_fft + 1) * mel2hz(mels) / sr).astype(int)
    fb = np.zeros((n_mels, n_fft // 2 + 1), np.float32)
    for m in range(1, n_mels + 1):
        l, c, r = bins[m - 1], bins[m], bins[m + 1]
        fb[m - 1, l:c] = (np.arange(l, c) - l) / max(c - l, 1)
        fb[m - 1, c:r] = (r - np.arange(c, r)) / max(r - c, 1)
    return fb


FB = mel_filterbank()
WINDOW = np.hanning(400).astype(np.float32)
FRAME_IDX = np.arange(0, CHUNK - 400 + 1, HOP)[:, None] + np.arange(400)[None, :]


def log_mel(x):
    frames = x[FRAME_IDX] * WINDOW
    spec = np.abs(np.fft.rfft(frames, n=N_FFT, axis=1)) ** 2
    return np.log(spec @ FB.T + 1e-6).astype(np.float32)


def with_deltas(feats):
    feats = feats - feats.mean(0, keepdims=True)
    pad = np.pad(feats, ((2, 2), (0, 0)), mode="edge")
    delta = (pad[3:-1] - pad[1:-3] + 2 * (pad[4:] - pad[:-4])) / 10.0
    return np.concatenate([feats, delta], axis=1)


class CallSimulator:
    """Interleaves chunks of several concurrent synthetic phone calls."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.next_call = 0
        self.calls = [self._new_call() for _ in range(CONCURRENT_CALLS)]

    def _new_call(self):
        cid = f"call-{self.next_call:06d}"
        self.next_call += 1
        return {"id": cid, "left": int(self.rng.integers(16, 48)), "talk": [False, False],
                "f0": self.rng.uniform(90, 240, size=2)}

    def chunks(self):
        t = np.arange(CHUNK) / SR
        while True:
            k = int(self.rng.integers(CONCURRENT_CALLS))
            call = self.calls[k]
            for ch in (0, 1):
                if self.rng.random() < (0.25 if call["talk"][ch] else 0.35):
                    call["talk"][ch] = not call["talk"][ch]
                noise = self.rng.normal(0, 0.01, CHUNK).astype(np.float32)
                if call["talk"][ch]:
                    f0 = call["f0"][ch] * (1 + 0.05 * np.sin(2 * np.pi * 3 * t))
                    voiced = sum(np.sin(2 * np.pi * h * f0 * t) / h for h in (1, 2, 3, 4))
                    env = 0.5 + 0.5 * np.sin(2 * np.pi * self.rng.uniform(2, 5) * t) ** 2
                    noise += (0.3 * voiced * env).astype(np.float32)
                yield call["id"], ("agent", "caller")[ch], noise
            call["left"] -= 1
            if call["left"] == 0:
                yield call["id"], "hangup", None
                self.calls[k] = self._new_call()


class SegmentUploader:
    def __init__(self, batch_bytes=256_000):
        self._open = {}
        self._outbox = []
        self._outbox_bytes = 0
        self.batch_bytes = batch_bytes
        self.sent_bytes = 0
        self.raw_bytes = 0
        self.segments = 0
        self.uploads = 0

    def begin(self, key):
        self._open[key] = {"enc": zlib.compressobj(6, zlib.DEFLATED, 15, 9), "frames": 0, "parts": []}

    def add(self, key, feats):
        seg = self._open[key]
        q = np.clip(np.round(feats * 12.0), -127, 127).astype(np.int8)
        seg["parts"].append(seg["enc"].compress(q.tobytes()))
        seg["frames"] += len(q)
        self.raw_bytes += q.nbytes

    def finish(self, key):
        seg = self._open.pop(key)
        payload = b"".join(seg["parts"]) + seg["enc"].flush()
        self._outbox.append((key, seg["frames"], payload))
        self._outbox_bytes += len(payload)
        self.segments += 1
        if self._outbox_bytes >= self.batch_bytes:
            self._upload()

    def _upload(self):
        self.sent_bytes += self._outbox_bytes
        self.uploads += 1
        self._outbox = []
        self._outbox_bytes = 0


class EnergyVAD:
    def __init__(self, on_db=-32.0, hangover=2):
        self.on_db = on_db
        self.hangover = hangover
        self.state = {}

    def update(self, key, x):
        db = 10 * np.log10(np.mean(x ** 2) + 1e-10)
        speaking, quiet = self.state.get(key, (False, 0))
        if db > self.on_db:
            self.state[key] = (True, 0)
            return ("start" if not speaking else "cont"), db
        if speaking:
            quiet += 1
            if quiet >= self.hangover:
                self.state[key] = (False, 0)
                return "end", db
            self.state[key] = (True, quiet)
            return "cont", db
        return "silence", db

    def end_call(self, call_id):
        for ch in ("agent", "caller"):
            self.state.pop((call_id, ch), None)


def main():
    sim = CallSimulator(seed=5)
    vad = EnergyVAD()
    uploader = SegmentUploader()
    t0 = time.time()
    n_chunks = n_calls = 0
    voiced = 0
    for call_id, channel, x in sim.chunks():
        if channel == "hangup":
            vad.end_call(call_id)
            n_calls += 1
            if n_calls % 20 == 0:
                el = time.time() - t0
                ratio = uploader.raw_bytes / max(1, uploader.sent_bytes)
                print(f"{n_calls:5d} calls  {n_chunks:6d} chunks  {uploader.segments:5d} segments  "
                      f"{uploader.uploads:4d} uploads  ratio {ratio:4.1f}x  "
                      f"voiced {voiced / max(1, n_chunks):.2f}  {1000 * el / n_chunks:.2f} ms/chunk")
            if time.time() - t0 > RUN_SECONDS:
                break
            continue
        key = (call_id, channel)
        feats = with_deltas(log_mel(x))
        event, db = vad.update(key, x)
        n_chunks += 1
        if event == "start":
            uploader.begin(key)
        if event in ("start", "cont"):
            voiced += 1
            uploader.add(key, feats)
        elif event == "end":
            uploader.finish(key)
    uploader._upload()
    print(f"processed {n_calls} calls / {n_chunks} chunks in {time.time() - t0:.1f}s; "
          f"{uploader.sent_bytes / 1e6:.1f} MB uploaded in {uploader.uploads} uploads")


if __name__ == "__main__":
    main()
