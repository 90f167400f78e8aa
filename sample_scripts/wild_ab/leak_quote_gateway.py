# expect: leak
# holder: Broker._routes|_routes|Subscription.queue|sub.queue
# pattern: asyncio market-data fan-out gateway (pure asyncio + NumPy + json, no torch; one step = one order-book tick: the feed simulates a symbol's 100-level book, encodes it as a ~6 KB JSON frame and Broker.publish() put_nowait()s the same bytes object into the unbounded asyncio.Queue of every Subscription routed to that symbol, ~1.3 ms per tick, code in async main() + Broker/Subscription/ClientConn classes); every client session is run as `await asyncio.wait_for(handle_connection(...), timeout=max_session)`, and handle_connection() calls broker.unsubscribe(sub) only after its read loop ends normally (client closed), not in a finally block; when the session limit fires, wait_for cancels the coroutine at `await sub.queue.get()`, the CancelledError skips unsubscribe(), and the dead Subscription stays in Broker._routes; publish() keeps feeding its queue, nobody reads it, so every frame published since the first expired session stays referenced from the dead queues and memory grows with the feed
# step_ms: 1.3
"""Quote fan-out gateway.

Simulates the websocket side of a market-data gateway: one feed task produces
order-book snapshots for a few dozen symbols, clients connect at random,
subscribe to a handful of symbols, consume frames for a while and then either
close the connection themselves or are cut off by the gateway's per-session
time limit.
"""

import asyncio
import json
import random
import time
import zlib
from collections import defaultdict

import numpy as np

SYMBOLS = [f"{a}{b}{c}" for a, b, c in zip("ABCDEFGHJKLMNPQRSTUVWXYZ",
                                          "QWERTYUPASDFGHJKLZXCVBNM",
                                          "MNBVCXZLKJHGFDSAPOIUYTRE")]
N_TICKS = 14000
DEPTH = 100


class Subscription:
    __slots__ = ("client_id", "symbols", "queue", "delivered")

    def __init__(self, client_id, symbols):
        self.client_id = client_id
        self.symbols = tuple(symbols)
        # unbounded on purpose: a slow reader must never stall the feed
        self.queue = asyncio.Queue()
        self.delivered = 0


class Broker:
    def __init__(self):
        self._routes = defaultdict(set)  # symbol -> {Subscription}
        self.frames_out = 0

    def subscribe(self, client_id, symbols):
        sub = Subscription(client_id, symbols)
        for s in sub.symbols:
            self._routes[s].add(sub)
        return sub

    def unsubscribe(self, sub):
        for s in sub.symbols:
            self._routes[s].discard(sub)

    def publish(self, symbol, frame):
        subs = self._routes.get(symbol)
        if not subs:
            return 0
        for sub in subs:
            sub.queue.put_nowait(frame)
        self.frames_out += len(subs)
        return len(subs)


class BookSim:
    """Random-walk limit order books, one per symbol."""

    def __init__(self, symbols, seed=7):
        self.rng = np.random.default_rng(seed)
        self.symbols = symbols
        self.mid = {s: float(self.rng.uniform(20, 400)) for s in symbols}
        self.seq = defaultdict(int)

    def frame(self, symbol):
        rng = self.rng
        mid = self.mid[symbol] = self.mid[symbol] * float(np.exp(rng.normal(0, 4e-4)))
        tick = 0.01 if mid < 100 else 0.05
        offs = np.cumsum(rng.integers(1, 4, size=DEPTH)) * tick
        bids = np.round(mid - offs, 2)
        asks = np.round(mid + offs, 2)
        bsz = rng.gamma(2.0, 300.0, size=DEPTH).astype(np.int64)
        asz = rng.gamma(2.0, 300.0, size=DEPTH).astype(np.int64)
        nord = rng.integers(1, 40, size=(2, DEPTH))
        trades = [[round(mid + float(rng.normal(0, tick)), 2), int(rng.integers(1, 500)),
                   "B" if rng.random() < 0.5 else "S"] for _ in range(12)]
        self.seq[symbol] += 1
        msg = {
            "type": "book", "sym": symbol, "seq": self.seq[symbol], "ts": time.time_ns(),
            "bids": [[float(p), int(q), int(n)] for p, q, n in zip(bids, bsz, nord[0])],
            "asks": [[float(p), int(q), int(n)] for p, q, n in zip(asks, asz, nord[1])],
            "trades": trades,
        }
        return json.dumps(msg, separators=(",", ":")).encode()


class ClientConn:
    """Stand-in for a websocket connection: it 'writes' frames by checking
    them and maintaining the client's view of the top of book."""

    def __init__(self, cid, symbols, budget, max_session):
        self.cid = cid
        self.symbols = symbols
        self.budget = budget
        self.max_session = max_session
        self.crc = 0
        self.top = {}

    async def send(self, frame):
        self.crc = zlib.crc32(frame, self.crc)
        if self.budget % 8 == 0:  # clients only render every few updates
            msg = json.loads(frame)
            self.top[msg["sym"]] = (msg["bids"][0][0], msg["asks"][0][0])
        self.budget -= 1
        return self.budget > 0


async def handle_connection(broker, conn, stats):
    sub = broker.subscribe(conn.cid, conn.symbols)
    while True:
        frame = await sub.queue.get()
        sub.delivered += 1
        if not await conn.send(frame):
            break  # client closed the socket
    broker.unsubscribe(sub)
    stats["closed"] += 1


async def session(broker, conn, stats, live):
    live.add(conn.cid)
    try:
        await asyncio.wait_for(handle_connection(broker, conn, stats), timeout=conn.max_session)
    except asyncio.TimeoutError:
        stats["expired"] += 1
    finally:
        live.discard(conn.cid)


async def acceptor(broker, stats, live, stop, tasks):
    rng = random.Random(11)
    cid = 0
    while not stop.is_set():
        await asyncio.sleep(rng.expovariate(25.0))
        cid += 1
        syms = rng.sample(SYMBOLS, rng.randint(2, 5))
        conn = ClientConn(cid, syms, budget=rng.randint(20, 400),
                          max_session=rng.uniform(0.3, 2.5))
        t = asyncio.create_task(session(broker, conn, stats, live))
        tasks.add(t)
        t.add_done_callback(tasks.discard)


async def main():
    broker = Broker()
    stats = defaultdict(int)
    live, tasks = set(), set()
    stop = asyncio.Event()
    acc = asyncio.create_task(acceptor(broker, stats, live, stop, tasks))
    book = BookSim(SYMBOLS)
    rng = random.Random(3)
    weights = [1.0 / (i + 1) ** 0.6 for i in range(len(SYMBOLS))]
    t0 = last = time.perf_counter()
    for tick in range(N_TICKS):
        sym = rng.choices(SYMBOLS, weights)[0]
        broker.publish(sym, book.frame(sym))
        await asyncio.sleep(0.001)  # exchange pacing; clients run meanwhile
        now = time.perf_counter()
        if now - last >= 1.5:
            last = now
            print(f"[{now - t0:5.1f}s] tick {tick:5d} live={len(live):3d} "
                  f"closed={stats['closed']} expired={stats['expired']} frames_out={broker.frames_out}",
                  flush=True)
    stop.set()
    await acc
    for t in list(tasks):
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(f"done: {N_TICKS} ticks, {broker.frames_out} frames delivered in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    asyncio.run(main())
