# expect: leak
# holder: hub._subscribers|SnapshotHub._subscribers|hub
# pattern: asyncio digital-twin service for a signalised road network (vectorised Nagel-Schreckenberg cellular automaton in NumPy, a small torch MLP picks signal phases under torch.inference_mode, no optimizer, ~5 ms per simulation tick, code in async functions + a SnapshotHub class); every tick a Snapshot (96x256 float16 density map, phase vector, speed summary, ~50 KB) is fanned out with put_nowait() to one unbounded asyncio.Queue per connected dashboard client; clients call hub.unsubscribe(q) only after their read loop ends normally, but about half of the sessions are dropped by the connection manager with task.cancel(), and the CancelledError skips the unsubscribe line (it is not in a finally), so their queues stay in hub._subscribers and every later snapshot is queued into every dead queue; all snapshots published after the first dropped session stay alive and the dead-queue count keeps rising, so memory grows for the whole run
# step_ms: 5
"""Road-network digital twin.

Runs a cellular-automaton traffic model of an arterial grid and lets a
learned controller pick the signal phases.  Dashboard clients subscribe
to the snapshot stream of the twin; each client renders its own corridor
view and reports travel-time estimates.  Everything runs in one asyncio
event loop: the simulation task, the connection manager that accepts and
drops dashboard sessions, and the client sessions themselves.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
log = logging.getLogger("twin")

N_ROADS = 96
ROAD_LEN = 4096
V_MAX = 5
SIGNAL_SPACING = 128  # a signal every 128 cells
DOWNSAMPLE = 16


@dataclass(frozen=True)
class Snapshot:
    tick: int
    density: np.ndarray          # (N_ROADS, ROAD_LEN // DOWNSAMPLE) float16
    phases: np.ndarray           # (N_ROADS, n_signals) bool, True = green
    mean_speed: float
    n_vehicles: int


class RoadNetwork:
    """Periodic single-lane roads with fixed-time stop lines (NaSch rules)."""

    def __init__(self, density: float, p_slow: float, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.p_slow = p_slow
        self.n_sig = ROAD_LEN // SIGNAL_SPACING
        self.stop_cells = np.arange(self.n_sig) * SIGNAL_SPACING + SIGNAL_SPACING - 1
        self.pos: list[np.ndarray] = []
        self.vel: list[np.ndarray] = []
        for _ in range(N_ROADS):
            n = int(density * ROAD_LEN)
            p = np.sort(self.rng.choice(ROAD_LEN, n, replace=False))
            self.pos.append(p)
            self.vel.append(np.zeros(n, dtype=np.int64))
        self.green = np.ones((N_ROADS, self.n_sig), dtype=bool)

    def features(self) -> np.ndarray:
        """Queue length and approach density in front of every stop line."""
        feats = np.zeros((N_ROADS, self.n_sig, 4), dtype=np.float32)
        for r in range(N_ROADS):
            occ = np.zeros(ROAD_LEN, dtype=np.float32)
            occ[self.pos[r]] = 1.0
            stopped = np.zeros(ROAD_LEN, dtype=np.float32)
            stopped[self.pos[r][self.vel[r] == 0]] = 1.0
            segs = occ.reshape(self.n_sig, SIGNAL_SPACING)
            stp = stopped.reshape(self.n_sig, SIGNAL_SPACING)
            feats[r, :, 0] = segs[:, -32:].mean(1)
            feats[r, :, 1] = stp[:, -32:].mean(1)
            feats[r, :, 2] = segs[:, :64].mean(1)
            feats[r, :, 3] = self.green[r]
        return feats

    def step(self) -> tuple[np.ndarray, float, int]:
        speeds = []
        density = np.zeros((N_ROADS, ROAD_LEN), dtype=np.float32)
        for r in range(N_ROADS):
            p, v = self.pos[r], self.vel[r]
            if len(p) == 0:
                continue
            gap = (np.roll(p, -1) - p - 1) % ROAD_LEN
            red = self.stop_cells[~self.green[r]]
            if len(red):
                k = np.searchsorted(red, p)
                nxt = np.where(k < len(red), red[np.minimum(k, len(red) - 1)], red[0] + ROAD_LEN)
                gap = np.minimum(gap, nxt - p)
            v = np.minimum(v + 1, V_MAX)
            v = np.minimum(v, gap)
            slow = self.rng.random(len(v)) < self.p_slow
            v = np.maximum(v - slow, 0)
            p = (p + v) % ROAD_LEN
            order = np.argsort(p, kind="stable")
            self.pos[r], self.vel[r] = p[order], v[order]
            density[r, self.pos[r]] = 1.0
            speeds.append(v.mean())
        ds = density.reshape(N_ROADS, ROAD_LEN // DOWNSAMPLE, DOWNSAMPLE).mean(2).astype(np.float16)
        return ds, float(np.mean(speeds)), int(sum(len(p) for p in self.pos))


class PhaseController(nn.Module):
    def __init__(self, n_in: int = 4, hidden: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                                 nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class SnapshotHub:
    """Fan-out of twin snapshots to dashboard sessions."""

    def __init__(self) -> None:
        self._subscribers: list[asyncio.Queue] = []
        self.published = 0

    def subscribe(self) -> asyncio.Queue:
        q: asyncio.Queue = asyncio.Queue()
        self._subscribers.append(q)
        return q

    def unsubscribe(self, q: asyncio.Queue) -> None:
        try:
            self._subscribers.remove(q)
        except ValueError:
            pass

    def publish(self, snap: Snapshot) -> None:
        for q in self._subscribers:
            q.put_nowait(snap)
        self.published += 1

    @property
    def n_subscribers(self) -> int:
        return len(self._subscribers)


@dataclass
class SessionStats:
    opened: int = 0
    closed: int = 0
    dropped: int = 0
    frames: int = 0
    travel_time_estimates: list = field(default_factory=list)


async def dashboard_session(hub: SnapshotHub, corridor: int, n_frames: int,
                            stats: SessionStats) -> Optional[float]:
    q = hub.subscribe()
    stats.opened += 1
    ema = None
    for _ in range(n_frames):
        snap: Snapshot = await q.get()
        row = snap.density[corridor]
        occ = float(row.mean())
        ema = occ if ema is None else 0.9 * ema + 0.1 * occ
        stats.frames += 1
    hub.unsubscribe(q)
    stats.closed += 1
    tt = (ROAD_LEN / max(snap.mean_speed, 0.1)) * (1.0 + ema)
    if len(stats.travel_time_estimates) < 1000:
        stats.travel_time_estimates.append(tt)
    return tt


async def connection_manager(hub: SnapshotHub, stats: SessionStats, stop: asyncio.Event,
                             seed: int) -> None:
    rng = np.random.default_rng(seed)
    live: set[asyncio.Task] = set()
    while not stop.is_set():
        await asyncio.sleep(float(rng.exponential(0.12)))
        corridor = int(rng.integers(0, N_ROADS))
        t = asyncio.create_task(dashboard_session(hub, corridor, int(rng.integers(20, 200)), stats))
        live.add(t)
        t.add_done_callback(live.discard)
        # Network churn: some browser tabs go away without saying goodbye.
        if live and rng.random() < 0.5:
            victim = list(live)[int(rng.integers(0, len(live)))]
            victim.cancel()
            stats.dropped += 1
    for t in list(live):
        t.cancel()
    await asyncio.gather(*live, return_exceptions=True)


async def run_twin(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    net = RoadNetwork(density=0.22, p_slow=0.15, seed=args.seed)
    ctrl = PhaseController().eval()
    hub = SnapshotHub()
    stats = SessionStats()
    stop = asyncio.Event()
    mgr = asyncio.create_task(connection_manager(hub, stats, stop, args.seed + 1))

    t0 = last = time.perf_counter()
    for tick in range(1, args.ticks + 1):
        if tick % 4 == 0:
            feats = torch.from_numpy(net.features())
            with torch.inference_mode():
                logits = ctrl(feats)
            net.green = (logits.argmax(-1) == 0).numpy()
        density, mean_speed, n_veh = net.step()
        hub.publish(Snapshot(tick, density, net.green.copy(), mean_speed, n_veh))
        await asyncio.sleep(0)
        now = time.perf_counter()
        if now - last > 3.0 or tick == args.ticks:
            log.info("tick %d/%d speed=%.2f sessions open=%d closed=%d dropped=%d subs=%d "
                     "(%.1f ms/tick)", tick, args.ticks, mean_speed, stats.opened, stats.closed,
                     stats.dropped, hub.n_subscribers, 1000 * (now - t0) / tick)
            last = now
    stop.set()
    await mgr
    tts = stats.travel_time_estimates
    log.info("done: %d frames delivered, median travel time %.0f ticks",
             stats.frames, float(np.median(tts)) if tts else float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser(description="road-network digital twin")
    ap.add_argument("--ticks", type=int, default=3600)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    asyncio.run(run_twin(args))


if __name__ == "__main__":
    main()
