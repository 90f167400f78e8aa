# expect: no_leak
# pattern: discrete-event store-and-forward router simulation (pure Python + NumPy, no torch); packet payloads are 9 KB numpy buffers taken from a BufferPool free list that only allocates when the list is empty; tail-dropped packets never take a buffer and transmitted ones give theirs back; the offered load ramps up over the first quarter of the run until the hot-spot output queues sit at their byte limits, so the pool grows to the peak number of buffered packets and then only recycles
# step_ms: 1
"""Output-queued router model for buffer sizing.

32 input ports send jumbo frames to 32 output ports with a hot-spot traffic
matrix; each output port has a FIFO with a byte limit and tail drop.  Payload
buffers come from a shared pool, as in the forwarding plane we are sizing,
so the pool's high-water mark is the number we want.  The offered load is
ramped from 40% to 100% of line rate and then held, with bursty on/off
sources.
"""
import argparse
import collections
import time
import zlib

import numpy as np

MTU = 9000
PORTS = 32
SIZES = (1500, 4000, MTU)
SIZE_P = (0.3, 0.2, 0.5)
MEAN_LEN = sum(a * b for a, b in zip(SIZES, SIZE_P))


class BufferPool:
    def __init__(self, size):
        self.size = size
        self._free = []
        self.allocated = 0

    def get(self):
        if self._free:
            return self._free.pop()
        self.allocated += 1
        return np.empty(self.size, np.uint8)

    def put(self, buf):
        self._free.append(buf)

    @property
    def in_use(self):
        return self.allocated - len(self._free)


Packet = collections.namedtuple("Packet", "src dst length seq buf t_in")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ticks", type=int, default=19000)
    ap.add_argument("--queue-bytes", type=int, default=2_000_000)
    ap.add_argument("--ramp", type=float, default=0.25, help="fraction of the run spent ramping the load")
    ap.add_argument("--seed", type=int, default=9)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    pool = BufferPool(MTU)
    queues = [collections.deque() for _ in range(PORTS)]
    qbytes = [0] * PORTS
    hot = rng.dirichlet(np.ones(PORTS) * 0.7)
    tx_per_tick = MTU * 2.0  # bytes an output port can send per tick
    sent = dropped = 0
    delay_sum = 0.0
    checksum = 0
    on = np.ones(PORTS, bool)
    seq = 0
    peak_in_use = 0
    t0 = time.time()
    for tick in range(1, args.ticks + 1):
        load = 0.4 + 0.6 * min(1.0, tick / (args.ramp * args.ticks))
        # on/off burst sources
        flip = rng.random(PORTS) < 0.05
        on ^= flip
        # packets per tick that fill `load` of the total output capacity
        pkts = load * PORTS * tx_per_tick / MEAN_LEN
        n_arrivals = rng.poisson(np.where(on, pkts / max(on.sum(), 1), 0.0))
        for src in np.nonzero(n_arrivals)[0]:
            for _ in range(n_arrivals[src]):
                dst = int(rng.choice(PORTS, p=hot)) if rng.random() < 0.5 else int(rng.integers(PORTS))
                length = int(rng.choice(SIZES, p=SIZE_P))
                if qbytes[dst] + length > args.queue_bytes:
                    dropped += 1
                    continue
                buf = pool.get()
                buf[:8] = np.frombuffer(seq.to_bytes(8, "little"), np.uint8)
                buf[8:length] = src
                queues[dst].append(Packet(int(src), dst, length, seq, buf, tick))
                qbytes[dst] += length
                seq += 1
        peak_in_use = max(peak_in_use, pool.in_use)

        for port, q in enumerate(queues):
            budget = tx_per_tick
            while q and q[0].length <= budget:
                pkt = q.popleft()
                budget -= pkt.length
                qbytes[port] -= pkt.length
                checksum = zlib.crc32(pkt.buf[:pkt.length], checksum)
                delay_sum += tick - pkt.t_in
                sent += 1
                pool.put(pkt.buf)

        if tick % 4000 == 0:
            print(f"tick {tick:6d}  load {load:.2f}  sent {sent}  dropped {dropped}  "
                  f"mean delay {delay_sum / max(sent, 1):6.1f} ticks  pool {pool.allocated} buffers "
                  f"({pool.allocated * MTU / 1e6:.0f} MB), in use {pool.in_use}  ({time.time() - t0:.1f}s)",
                  flush=True)

    print(f"peak buffers in use {peak_in_use}, drop rate {dropped / max(sent + dropped, 1):.3%}, crc {checksum:08x}")


if __name__ == "__main__":
    main()
