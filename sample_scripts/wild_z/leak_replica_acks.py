# expect: leak
# holder: Replicator._unacked|_unacked
# pattern: online user-feature pipeline with primary/replica replication (NumPy + stdlib threading, no torch; one step = one micro-batch of 32768 click events folded into 64-d user taste vectors on the primary plus a top-20 candidate refresh for the changed users, ~32 ms, code in main() + FeaturePrimary/Replicator classes + a ReplicaApplier threading.Thread). Every micro-batch's changed rows (ids + 1024x64 float32 block) are shipped to the replica thread as a binary frame over a queue (stand-in for a socket) and, for at-least-once delivery, Replicator keeps them in self._unacked keyed by the frame id (shard, seq, sent_at) until the replica's ack arrives; the replica echoes the header fields it unpacked, and poll_acks() pops self._unacked[ACK.unpack(ack)]. The header packs sent_at with struct format 'f' ("float32 is plenty for lag metrics"), so the echoed sent_at is the float32-rounded value and never equals the float64 key: pop(..., None) silently misses for every frame and _unacked (a dict keyed by time-stamped tuples) keeps every frame's ids and row block (~270 KB) for the whole run, while replication itself works and the replica's lag metrics look fine.
# step_ms: 32
"""Primary/replica user-feature store with binary replication frames.

The primary folds click events into per-user taste vectors (EMA of the
clicked items' embeddings) and replicates the changed rows to a replica
thread.  Frames carry a small struct header; the replica acks every frame
so the primary can resend unacknowledged frames after a reconnect.
"""
import os
import queue
import struct
import threading
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the replica thread needs the other core
import numpy as np
import psutil

N_USERS = 200_000
N_ITEMS = 50_000
DIM = 64
EVENTS_PER_BATCH = 32768
ROWS_PER_FRAME = 1024
N_BATCHES = 460

# shard:uint16  seq:uint32  sent_at:float32 (s since writer start)  n_rows:uint32
HDR = struct.Struct("<HIfI")
ACK = struct.Struct("<HIf")


def rss_mb():
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


class FeaturePrimary:
    def __init__(self, rng):
        self.rng = rng
        self.item_emb = rng.normal(0, 1, size=(N_ITEMS, DIM)).astype(np.float32)
        self.item_emb /= np.linalg.norm(self.item_emb, axis=1, keepdims=True)
        # cold-start prior: a small random taste vector per user
        self.taste = rng.normal(0, 0.05, size=(N_USERS, DIM)).astype(np.float32)
        self.n_clicks = np.zeros(N_USERS, np.int64)
        self.candidates = np.zeros((65536, 20), np.int64)
        self.popularity = 1.0 / np.arange(1, N_ITEMS + 1) ** 0.8
        self.popularity /= self.popularity.sum()

    def make_events(self):
        # active users concentrate on a moving window of the user base
        centre = int(self.rng.integers(0, N_USERS))
        users = (centre + self.rng.integers(0, 16000, size=EVENTS_PER_BATCH)) % N_USERS
        items = self.rng.choice(N_ITEMS, size=EVENTS_PER_BATCH, p=self.popularity)
        dwell = self.rng.gamma(2.0, 8.0, size=EVENTS_PER_BATCH).astype(np.float32)
        return users, items, dwell

    def fold(self, users, items, dwell):
        w = np.minimum(dwell / 30.0, 1.0)[:, None]
        uniq, inv = np.unique(users, return_inverse=True)
        acc = np.zeros((len(uniq), DIM), np.float32)
        np.add.at(acc, inv, self.item_emb[items] * w)
        cnt = np.bincount(inv, minlength=len(uniq)).astype(np.float32)[:, None]
        alpha = 0.2
        upd = (1 - alpha) * self.taste[uniq] + alpha * acc / np.maximum(cnt, 1)
        upd /= np.linalg.norm(upd, axis=1, keepdims=True) + 1e-6
        self.taste[uniq] = upd
        self.n_clicks[uniq] += cnt[:, 0].astype(np.int64)
        # replicate the most changed rows first
        order = np.argsort(-cnt[:, 0], kind="stable")[:ROWS_PER_FRAME]
        return uniq[order].astype(np.int64), upd[order]

    def refresh_candidates(self, ids, rows, k=20, pool=2000):
        """Precompute top-k candidate items (among the popular head) for changed users."""
        scores = rows @ self.item_emb[:pool].T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        self.candidates[ids % len(self.candidates)] = top


class Replicator:
    def __init__(self, shard, link, acks):
        self.shard = shard
        self._link = link
        self._acks = acks
        self._seq = 0
        self._t0 = time.perf_counter()
        self._unacked = {}   # frame id -> (ids, rows), resent after a reconnect
        self.acked = 0
        self.bytes_sent = 0

    def send(self, ids, rows):
        self._seq += 1
        frame_id = (self.shard, self._seq, time.perf_counter() - self._t0)
        frame = HDR.pack(*frame_id, len(ids)) + ids.tobytes() + rows.tobytes()
        self._unacked[frame_id] = (ids, rows)
        self._link.put(frame)
        self.bytes_sent += len(frame)

    def poll_acks(self):
        while True:
            try:
                ack = self._acks.get_nowait()
            except queue.Empty:
                return
            if self._unacked.pop(ACK.unpack(ack), None) is not None:
                self.acked += 1

    def resend_all(self):
        """After a reconnect: replay everything the replica never confirmed."""
        for (shard, seq, sent_at), (ids, rows) in sorted(self._unacked.items()):
            self._link.put(HDR.pack(shard, seq, sent_at, len(ids)) + ids.tobytes() + rows.tobytes())


class ReplicaApplier(threading.Thread):
    def __init__(self, link, acks, t0, snapshot):
        super().__init__(name="replica-applier", daemon=True)
        self.link = link
        self.acks = acks
        self.t0 = t0
        self.table = snapshot.copy()   # bootstrap from a snapshot, then apply frames
        self.applied_seq = 0
        self.lag_ms = []

    def run(self):
        while True:
            frame = self.link.get()
            if frame is None:
                return
            shard, seq, sent_at, n = HDR.unpack_from(frame)
            off = HDR.size
            ids = np.frombuffer(frame, np.int64, n, off)
            rows = np.frombuffer(frame, np.float32, n * DIM, off + 8 * n).reshape(n, DIM)
            self.table[ids] = rows
            self.applied_seq = max(self.applied_seq, seq)
            self.lag_ms.append((time.perf_counter() - self.t0 - sent_at) * 1e3)
            if len(self.lag_ms) > 512:
                del self.lag_ms[:256]
            self.acks.put(ACK.pack(shard, seq, sent_at))


def main():
    rng = np.random.default_rng(4242)
    primary = FeaturePrimary(rng)
    link, acks = queue.Queue(maxsize=64), queue.Queue()
    repl = Replicator(shard=3, link=link, acks=acks)
    applier = ReplicaApplier(link, acks, repl._t0, primary.taste)
    applier.start()
    t0 = time.perf_counter()
    print(f"replicating {N_BATCHES} micro-batches; rss at loop start {rss_mb():.1f} MB",
          flush=True)
    for step in range(N_BATCHES):
        users, items, dwell = primary.make_events()
        ids, rows = primary.fold(users, items, dwell)
        repl.send(ids, rows)
        primary.refresh_candidates(ids, rows)
        repl.poll_acks()
        if (step + 1) % 60 == 0:
            el = time.perf_counter() - t0
            lag = np.percentile(applier.lag_ms, [50, 99]) if applier.lag_ms else (0, 0)
            drift = float(np.abs(applier.table[ids] - primary.taste[ids]).max())
            print(f"  batch {step + 1:5d}  {el / (step + 1) * 1e3:.1f} ms/batch  "
                  f"replica seq {applier.applied_seq}  lag p50 {lag[0]:.2f} ms p99 {lag[1]:.2f} ms  "
                  f"max drift {drift:.3f}  sent {repl.bytes_sent / 2**20:.0f} MB  "
                  f"rss {rss_mb():.1f} MB", flush=True)
    link.put(None)
    applier.join()
    repl.poll_acks()
    print(f"loop done; rss at loop end {rss_mb():.1f} MB", flush=True)


if __name__ == "__main__":
    main()
