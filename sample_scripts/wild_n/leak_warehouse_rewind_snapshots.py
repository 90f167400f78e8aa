# expect: leak
# holder: recorder._memo|self._memo
# pattern: the planner's StateRecorder snapshots every simulator state with copy.deepcopy(state, self._memo), re-using one memo dict pre-seeded with {id(layout): layout} so the static layout is shared instead of copied; deepcopy stores every copied object in that memo (and keeps the originals alive in memo[id(memo)]), so although only the last 64 snapshots are kept in a deque, every state's arrays (original and copy) stay reachable from the memo (NumPy-only multi-robot warehouse simulation with a lookahead planner, no torch)
# step_ms: 4
"""Multi-robot warehouse simulation with a small lookahead dispatcher.

A fleet of robots moves on a grid warehouse (shelves are obstacles), picks up
orders at shelf access points and delivers them to packing stations, and
goes to a charger when the battery is low.  Every tick the dispatcher assigns
open orders to idle robots; it compares two assignment rules (nearest robot
first vs. earliest deadline first) by simulating a few ticks ahead and keeps
the better one.  If the fleet gets stuck (nobody moved for a few ticks) the
simulation is rewound a few ticks and re-planned with fresh noise.

The simulator step is purely functional (it returns a new state) so that
lookahead rollouts never touch the live state.
"""
import argparse
import copy
import dataclasses
import time
from collections import deque

import numpy as np

MOVES = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]])
BIG = 1 << 20


class Layout:
    """Static warehouse map plus BFS distance tables to every station."""

    def __init__(self, h, w, rng):
        free = np.ones((h, w), dtype=bool)
        # shelf rows with aisles
        for r in range(3, h - 3, 4):
            for c0 in range(3, w - 6, 9):
                free[r:r + 2, c0:c0 + 7] = False
        self.h, self.w, self.free = h, w, free
        shelf_access = [(r + 2, c0 + 3) for r in range(3, h - 3, 4) for c0 in range(3, w - 6, 9)]
        packing = [(h - 1, c) for c in range(4, w, max(1, w // 6))][:6]
        chargers = [(0, c) for c in range(2, w - 2, max(1, (w - 4) // 6))][:6]
        self.stations = np.array(shelf_access + packing + chargers)
        self.n_shelf = len(shelf_access)
        self.packing_ids = np.arange(self.n_shelf, self.n_shelf + len(packing))
        self.charger_ids = np.arange(self.n_shelf + len(packing), len(self.stations))
        self.dist = np.stack([self._bfs(tuple(s)) for s in self.stations])

    def _bfs(self, src):
        dist = np.full((self.h, self.w), BIG, dtype=np.int32)
        dist[src] = 0
        q = deque([src])
        while q:
            r, c = q.popleft()
            for dr, dc in MOVES[1:]:
                rr, cc = r + dr, c + dc
                if 0 <= rr < self.h and 0 <= cc < self.w and self.free[rr, cc] and dist[rr, cc] == BIG:
                    dist[rr, cc] = dist[r, c] + 1
                    q.append((rr, cc))
        return dist


@dataclasses.dataclass
class State:
    t: int
    pos: np.ndarray        # (n_robots, 2)
    job: np.ndarray        # (n_robots,) order index or -1
    loaded: np.ndarray     # (n_robots,) bool, carrying the order's item
    battery: np.ndarray    # (n_robots,)
    charging: np.ndarray   # (n_robots,) heading to / sitting on a charger
    orders: np.ndarray     # (n_orders, 3): shelf station, packing station, deadline
    open_: np.ndarray      # (n_orders,) waiting for a robot
    heat: np.ndarray       # (h/2, w/2) decayed congestion map per 2x2 block
    delivered: int = 0
    late: int = 0


def new_orders(rng, layout, n, t):
    shelf = rng.integers(0, layout.n_shelf, size=n)
    pack = rng.choice(layout.packing_ids, size=n)
    deadline = t + rng.integers(60, 200, size=n)
    return np.stack([shelf, pack, deadline], axis=1)


def targets(state, layout):
    tgt = np.where(state.loaded, state.orders[state.job, 1], state.orders[state.job, 0])
    # robots without a job stay where they are (see sim_step); park them on station 0
    tgt = np.where(state.job < 0, 0, tgt)
    home = layout.charger_ids[np.arange(len(tgt)) % len(layout.charger_ids)]
    return np.where(state.charging, home, tgt)


def sim_step(state, layout, rng):
    """One tick; returns a new State (the input is not modified)."""
    n = len(state.pos)
    tgt = targets(state, layout)
    cand = state.pos[:, None, :] + MOVES[None]
    inside = (cand[..., 0] >= 0) & (cand[..., 0] < layout.h) & (cand[..., 1] >= 0) & (cand[..., 1] < layout.w)
    cr = cand[..., 0].clip(0, layout.h - 1)
    cc = cand[..., 1].clip(0, layout.w - 1)
    d = layout.dist[tgt[:, None], cr, cc].astype(np.float64)
    d[~(inside & layout.free[cr, cc])] = BIG
    d += 0.3 * state.heat[cr // 2, cc // 2] + rng.random(d.shape) * 0.1
    choice = d.argmin(1)
    idle = (state.job < 0) & ~state.charging
    choice[idle] = 0  # idle robots wait in place
    new_pos = cand[np.arange(n), choice]
    # aisles are two robots wide: at most two robots may enter the same cell per tick
    flat = new_pos[:, 0] * layout.w + new_pos[:, 1]
    order = np.argsort(flat, kind="stable")
    sorted_flat = flat[order]
    rank = np.arange(n) - np.searchsorted(sorted_flat, sorted_flat, side="left")
    blocked = np.zeros(n, dtype=bool)
    blocked[order] = rank >= 2
    new_pos = np.where(blocked[:, None], state.pos, new_pos)

    moved = (new_pos != state.pos).any(1)
    battery = np.clip(state.battery - 0.001 * moved - 0.0002, 0.0, 1.0)
    at = layout.dist[tgt, new_pos[:, 0], new_pos[:, 1]] == 0
    on_charger = at & state.charging
    battery = np.where(on_charger, np.minimum(battery + 0.02, 1.0), battery)
    # hysteresis: go charging below 20%, leave the charger at 90%
    charging = (state.charging | (battery < 0.2)) & (battery < 0.9)

    job, loaded = state.job.copy(), state.loaded.copy()
    working = at & (job >= 0) & ~state.charging
    picked = working & ~loaded
    dropped = working & loaded
    loaded[picked] = True
    done = job[dropped]
    n_late = int((state.orders[done, 2] < state.t).sum()) if len(done) else 0
    job[dropped] = -1
    loaded[dropped] = False

    orders, open_ = state.orders, state.open_
    if len(done):
        orders = orders.copy()
        orders[done] = new_orders(rng, layout, len(done), state.t)
        open_ = open_.copy()
        open_[done] = True

    heat = state.heat * np.float32(0.95)
    np.add.at(heat, (new_pos[:, 0] // 2, new_pos[:, 1] // 2), np.float32(1.0))
    return dataclasses.replace(
        state, t=state.t + 1, pos=new_pos, job=job, loaded=loaded, battery=battery,
        charging=charging, orders=orders, open_=open_, heat=heat,
        delivered=state.delivered + len(done), late=state.late + n_late,
    )


def assign(state, layout, rule):
    open_ids = np.flatnonzero(state.open_)
    free_robots = np.flatnonzero((state.job < 0) & ~state.charging & (state.battery > 0.3))
    if len(open_ids) == 0 or len(free_robots) == 0:
        return state
    if rule == "deadline":
        open_ids = open_ids[np.argsort(state.orders[open_ids, 2])]
    job, open_ = state.job.copy(), state.open_.copy()
    avail = np.ones(len(free_robots), dtype=bool)
    for o in open_ids[: len(free_robots)]:
        shelf = state.orders[o, 0]
        d = layout.dist[shelf, state.pos[free_robots, 0], state.pos[free_robots, 1]].astype(np.float64)
        d[~avail] = np.inf
        k = int(d.argmin())
        job[free_robots[k]] = o
        open_[o] = False
        avail[k] = False
    return dataclasses.replace(state, job=job, open_=open_)


class StateRecorder:
    """Keeps the recent states so the dispatcher can rewind out of deadlocks."""

    def __init__(self, layout, keep=64):
        self.layout = layout
        # the layout (grid + distance tables) never changes: seed deepcopy's memo
        # with it so that snapshots share it instead of duplicating it each tick
        self._memo = {id(layout): layout}
        self.history = deque(maxlen=keep)

    def push(self, state):
        self.history.append(copy.deepcopy(state, self._memo))

    def rewind(self, ticks):
        ticks = min(ticks, len(self.history))
        for _ in range(ticks - 1):
            self.history.pop()
        return self.history[-1]


def lookahead(state, layout, rng, horizon):
    for _ in range(horizon):
        state = sim_step(state, layout, rng)
    return state.delivered * 10 - float(np.sum(state.job >= 0)) - state.late * 5


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=6600)
    ap.add_argument("--robots", type=int, default=80)
    ap.add_argument("--orders", type=int, default=120)
    ap.add_argument("--height", type=int, default=40)
    ap.add_argument("--width", type=int, default=60)
    ap.add_argument("--horizon", type=int, default=6)
    ap.add_argument("--log-every", type=int, default=1650)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    layout = Layout(args.height, args.width, rng)
    free_cells = np.argwhere(layout.free)
    start = free_cells[rng.choice(len(free_cells), size=args.robots, replace=False)]
    state = State(
        t=0, pos=start, job=np.full(args.robots, -1), loaded=np.zeros(args.robots, dtype=bool),
        battery=rng.uniform(0.5, 1.0, size=args.robots), charging=np.zeros(args.robots, dtype=bool),
        orders=new_orders(rng, layout, args.orders, 0), open_=np.ones(args.orders, dtype=bool),
        heat=np.zeros((args.height // 2, args.width // 2), dtype=np.float32),
    )
    recorder = StateRecorder(layout)
    stalled = rewinds = 0
    rule_wins = {"nearest": 0, "deadline": 0}
    t0 = time.time()
    print(f"stations={len(layout.stations)}  robots={args.robots}  ticks={args.ticks}")
    for tick in range(1, args.ticks + 1):
        recorder.push(state)
        if state.open_.any():
            best, best_score = None, -np.inf
            for rule in ("nearest", "deadline"):
                cand = assign(state, layout, rule)
                score = lookahead(cand, layout, np.random.default_rng(tick), args.horizon)
                if score > best_score:
                    best, best_score, best_rule = cand, score, rule
            rule_wins[best_rule] += 1
            state = best
        nxt = sim_step(state, layout, rng)
        stalled = stalled + 1 if np.array_equal(nxt.pos, state.pos) else 0
        state = nxt
        if stalled >= 4:
            state = recorder.rewind(8)
            rng = np.random.default_rng(rng.integers(1 << 31))
            stalled = 0
            rewinds += 1
        if tick % args.log_every == 0:
            busy = float(np.mean(state.job >= 0))
            charging = int(state.charging.sum())
            print(
                f"tick {tick}  delivered={state.delivered}  late={state.late}  busy={busy:.2f}  charging={charging}  "
                f"rewinds={rewinds}  rules={rule_wins}  ({time.time() - t0:.1f}s)"
            )
    print("done")


if __name__ == "__main__":
    main()
