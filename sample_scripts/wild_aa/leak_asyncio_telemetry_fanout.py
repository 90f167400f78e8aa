# expect: leak
# holder: TelemetryHub._subs|hub._subs|Subscription.queue|_subs|queue
# pattern: asyncio fan-out hub for a power-grid telemetry dashboard (NumPy only, no torch; one tick = simulate 48 substations' 3-phase voltage snippets, FFT harmonics, THD and phase-imbalance alarms, publish to topics, ~2 ms; code in async main() + TelemetryHub/Subscription/GridSimulator classes); dashboard viewers connect and disconnect all the time, each with its own unbounded asyncio.Queue wrapped in a Subscription stored in hub._subs keyed by client_id; on disconnect the viewer calls hub.unsubscribe(sub), which does `self._subs.pop(sub, None)` ("idempotent") with the Subscription object instead of its client_id, so nothing is ever removed and publish() keeps put_nowait()-ing every harmonics frame (48x32 float32, every tick) and waveform snapshot (every 20th tick) into the queues of every viewer that has left; the frames pile up in dead queues (shared arrays, so memory grows with the number of ticks since the first disconnect)
# step_ms: 2
"""Telemetry fan-out for the grid operations dashboard (load-test replay).

A simulator publishes harmonics spectra, waveform snapshots and alarms for
48 substations every tick; browser viewers subscribe to a few topics for a
while and go away again.  The replay runs for a fixed 16 s.
"""
import asyncio
import itertools
import time

import numpy as np

N_SUB = 48
SNIPPET = 256
FS = 3200.0
RUN_SECONDS = 16.0
TOPICS = ("harmonics", "waveforms", "alarms", "summary")


class Subscription:
    __slots__ = ("client_id", "topics", "queue", "since")

    def __init__(self, client_id, topics):
        self.client_id = client_id
        self.topics = frozenset(topics)
        self.queue = asyncio.Queue()
        self.since = time.monotonic()


class TelemetryHub:
    def __init__(self):
        self._subs = {}
        self.published = 0

    def subscribe(self, client_id, topics):
        sub = Subscription(client_id, topics)
        self._subs[client_id] = sub
        return sub

    def unsubscribe(self, sub):
        # idempotent: a viewer may be closed twice (idle timeout + socket close)
        self._subs.pop(sub, None)

    def publish(self, topic, payload):
        self.published += 1
        for sub in self._subs.values():
            if topic in sub.topics:
                sub.queue.put_nowait((topic, payload))


class GridSimulator:
    def __init__(self, rng):
        self.rng = rng
        self.t = 0.0
        self.phase = rng.uniform(0, 2 * np.pi, N_SUB)
        self.harm_amp = rng.uniform(0.005, 0.04, (N_SUB, 4))
        self.tt = np.arange(SNIPPET) / FS
        self.window = np.hanning(SNIPPET).astype(np.float32)

    def tick(self):
        r = self.rng
        self.t += SNIPPET / FS
        f0 = 50.0 + 0.02 * np.sin(0.1 * self.t) + r.normal(0, 0.003)
        self.harm_amp = np.clip(self.harm_amp + r.normal(0, 0.0008, self.harm_amp.shape), 0.0, 0.12)
        w = 2 * np.pi * f0 * (self.t + self.tt)[None, None, :]
        shifts = np.array([0.0, -2 * np.pi / 3, 2 * np.pi / 3])[None, :, None]
        base = np.sin(w + shifts + self.phase[:, None, None])
        for k, order in enumerate((3, 5, 7, 11)):
            base += self.harm_amp[:, k, None, None] * np.sin(order * (w + shifts))
        volts = (230.0 * np.sqrt(2) * base + r.normal(0, 1.5, base.shape)).astype(np.float32)
        spec = np.abs(np.fft.rfft(volts[:, 0, :] * self.window, axis=-1)).astype(np.float32)
        fund = spec[:, 4:5] + 1e-6
        thd = np.sqrt((spec[:, 8:] ** 2).sum(1)) / fund[:, 0]
        rms = np.sqrt((volts ** 2).mean(-1))
        imbalance = (rms.max(1) - rms.min(1)) / rms.mean(1)
        return volts, spec, thd, imbalance


async def viewer(hub, client_id, topics, lifetime, stats):
    sub = hub.subscribe(client_id, topics)
    stats["online"] += 1
    seen = 0
    peak_thd = 0.0
    deadline = time.monotonic() + lifetime
    try:
        while time.monotonic() < deadline:
            try:
                topic, payload = await asyncio.wait_for(sub.queue.get(), timeout=0.2)
            except asyncio.TimeoutError:
                continue
            seen += 1
            if topic == "summary":
                peak_thd = max(peak_thd, float(payload["thd_max"]))
            elif topic == "harmonics":
                _ = payload[:, :16].mean(0)  # sparkline
    finally:
        hub.unsubscribe(sub)
        stats["online"] -= 1
        stats["sessions"] += 1
        stats["frames_seen"] += seen


async def viewer_arrivals(hub, rng, stats, stop):
    ids = itertools.count(1)
    tasks = set()
    while not stop.is_set():
        topics = rng.choice(TOPICS, size=rng.integers(1, 4), replace=False).tolist()
        if rng.random() < 0.5 and "summary" not in topics:
            topics.append("summary")
        t = asyncio.create_task(viewer(hub, next(ids), topics, float(rng.uniform(0.2, 1.5)), stats))
        tasks.add(t)
        t.add_done_callback(tasks.discard)
        await asyncio.sleep(float(rng.exponential(0.06)))
    for t in list(tasks):
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def publisher(hub, sim, stats, stop):
    tick = 0
    while not stop.is_set():
        volts, spec, thd, imbalance = sim.tick()
        tick += 1
        hub.publish("harmonics", spec[:, :32].copy())
        if tick % 20 == 0:
            hub.publish("waveforms", volts[:, :, ::2].copy())
        alarms = np.flatnonzero((thd > 0.05) | (imbalance > 0.02))
        if alarms.size:
            hub.publish("alarms", [(int(i), float(thd[i]), float(imbalance[i])) for i in alarms[:8]])
        hub.publish("summary", {"tick": tick, "thd_max": float(thd.max()), "imb_max": float(imbalance.max())})
        stats["ticks"] = tick
        await asyncio.sleep(0)


async def main():
    rng = np.random.default_rng(5)
    hub = TelemetryHub()
    sim = GridSimulator(rng)
    stats = {"online": 0, "sessions": 0, "frames_seen": 0, "ticks": 0}
    stop = asyncio.Event()
    tasks = [asyncio.create_task(publisher(hub, sim, stats, stop)),
             asyncio.create_task(viewer_arrivals(hub, rng, stats, stop))]
    t0 = time.monotonic()
    while time.monotonic() - t0 < RUN_SECONDS:
        await asyncio.sleep(2.0)
        print(f"t={time.monotonic() - t0:5.1f}s ticks {stats['ticks']:6d} viewers online {stats['online']:3d} "
              f"sessions done {stats['sessions']:4d} frames delivered {stats['frames_seen']}")
    stop.set()
    await asyncio.gather(*tasks)
    print(f"replay finished: {stats['ticks']} ticks, {hub.published} messages published")


if __name__ == "__main__":
    asyncio.run(main())
