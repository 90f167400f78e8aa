# expect: leak
# holder: Scheduler._heap|sched._heap|_heap|Monster
# pattern: small top-down arena game with a tabular Q-learning hero (NumPy Q-table over a hand-made egocentric state, epsilon-greedy, no torch; one step = one 1/30 s game frame: run due timers, agent acts and learns, monsters move along a BFS flow field, collisions, and every 3rd frame a 160x160 RGB frame is rendered from per-monster sprite sheets, ~0.5 ms per frame at the start rising to ~1.3 ms as dead timers pile up, code in main() + Scheduler/World/Monster/QAgent classes); the engine's Scheduler is a heapq of repeating timers: a callback returning Scheduler.STOP cancels its timer, anything else reschedules it; every Monster registers sched.every(0.25, self.think) and sched.every(1/8, self.animate) in __init__, and both methods start with `if not self.alive: return` (plain return -> None, not Scheduler.STOP); killed or despawned monsters are removed from World.monsters, but their two timers keep firing and rescheduling forever, and each timer's bound method keeps the dead Monster (its tinted 8-frame RGBA sprite sheet and wander heat map, ~40 KB) alive in Scheduler._heap, across episodes too, so memory (and the timer work per frame) grows with every monster ever spawned
# step_ms: 1
"""Arena: a tiny real-time game loop with a learning hero.

Monsters spawn from the corners, chase the hero along a flow field and hit it;
the hero (tabular Q-learning) learns to fight and dodge. The engine runs game
logic from a timer scheduler like most small game engines do.
"""

import heapq
import itertools
import time
from collections import deque

import numpy as np

GRID = 40
FPS = 30
N_FRAMES = 19000
SPRITE = 32


class Scheduler:
    """Repeating timers in game time. A callback may return Scheduler.STOP
    to cancel its timer; any other return value keeps it running."""

    STOP = object()

    def __init__(self):
        self._heap = []
        self._seq = itertools.count()
        self.fired = 0

    def every(self, interval, fn, delay=None):
        due = self.now + (interval if delay is None else delay)
        heapq.heappush(self._heap, (due, next(self._seq), interval, fn))

    def run_until(self, t):
        self.now = t
        heap = self._heap
        while heap and heap[0][0] <= t:
            due, _, interval, fn = heapq.heappop(heap)
            self.fired += 1
            if fn() is Scheduler.STOP:
                continue
            heapq.heappush(heap, (due + interval, next(self._seq), interval, fn))

    now = 0.0


def make_sprite_sheet(rng, tint):
    """8 animation frames of a blobby monster, tinted per individual."""
    yy, xx = np.mgrid[0:SPRITE, 0:SPRITE].astype(np.float32) - SPRITE / 2
    frames = np.zeros((8, SPRITE, SPRITE, 4), dtype=np.uint8)
    for k in range(8):
        wob = 1.0 + 0.12 * np.sin(np.arctan2(yy, xx) * 5 + k * np.pi / 4)
        inside = np.hypot(xx, yy) < 12 * wob
        shade = np.clip(1.2 - np.hypot(xx + 4, yy + 4) / 18, 0.3, 1.0)
        frames[k, ..., :3] = (shade[..., None] * tint * inside[..., None]).astype(np.uint8)
        frames[k, ..., 3] = inside * 255
    return frames


class Monster:
    def __init__(self, world, pos, kind):
        self.world = world
        self.pos = np.array(pos, dtype=np.int64)
        self.kind = kind
        self.hp = 2 + kind
        self.alive = True
        self.age = 0.0
        self.frame = 0
        self.intent = np.zeros(2, dtype=np.int64)
        rng = world.rng
        tint = np.array([180, 60, 60]) + rng.integers(-50, 50, size=3)
        self.sprites = make_sprite_sheet(rng, np.clip(tint, 0, 255))
        self.heat = np.zeros((GRID, GRID), dtype=np.float32)   # where it has wandered
        sched = world.sched
        sched.every(0.25, self.think, delay=float(rng.uniform(0, 0.25)))
        sched.every(1 / 8, self.animate)

    def think(self):
        if not self.alive:
            return
        self.age += 0.25
        w = self.world
        y, x = self.pos
        self.heat *= 0.95
        self.heat[y, x] += 1.0
        best, step = w.flow[y, x], np.zeros(2, dtype=np.int64)
        for d in ((0, 1), (1, 0), (0, -1), (-1, 0)):
            ny, nx = y + d[0], x + d[1]
            if 0 <= ny < GRID and 0 <= nx < GRID and not w.walls[ny, nx]:
                score = w.flow[ny, nx] + 0.3 * self.heat[ny, nx]
                if score < best:
                    best, step = score, np.array(d)
        if w.rng.random() < 0.15:
            step = np.array(((0, 1), (1, 0), (0, -1), (-1, 0))[int(w.rng.integers(4))])
        self.intent = step
        if self.age > 10.0:
            w.despawn(self)

    def animate(self):
        if not self.alive:
            return
        self.frame = (self.frame + 1) % 8


class World:
    def __init__(self, sched, rng):
        self.sched = sched
        self.rng = rng
        self.walls = np.zeros((GRID, GRID), dtype=bool)
        self.reset()

    def reset(self):
        rng = self.rng
        self.walls[:] = rng.random((GRID, GRID)) < 0.12
        self.walls[0, :] = self.walls[-1, :] = self.walls[:, 0] = self.walls[:, -1] = True
        self.hero = np.array([GRID // 2, GRID // 2])
        self.walls[GRID // 2 - 2:GRID // 2 + 3, GRID // 2 - 2:GRID // 2 + 3] = False
        for c in ((1, 1), (1, GRID - 2), (GRID - 2, 1), (GRID - 2, GRID - 2)):
            self.walls[c] = False
        self.hp = 10
        for m in getattr(self, "monsters", []):
            m.alive = False
        self.monsters = []
        self.kills = 0
        self.flow = self.bfs(self.hero)

    def bfs(self, src):
        dist = np.full((GRID, GRID), 1e6, dtype=np.float32)
        dist[src[0], src[1]] = 0
        q = deque([(int(src[0]), int(src[1]))])
        walls = self.walls
        while q:
            y, x = q.popleft()
            d = dist[y, x] + 1
            for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                if not walls[ny, nx] and dist[ny, nx] > d:
                    dist[ny, nx] = d
                    q.append((ny, nx))
        return dist

    def spawn(self):
        corners = ((1, 1), (1, GRID - 2), (GRID - 2, 1), (GRID - 2, GRID - 2))
        c = corners[int(self.rng.integers(4))]
        self.monsters.append(Monster(self, c, int(self.rng.integers(3))))

    def despawn(self, m):
        m.alive = False
        if m in self.monsters:
            self.monsters.remove(m)

    def move_monsters(self):
        hits = 0
        for m in self.monsters:
            if not m.intent.any():
                continue
            ny, nx = m.pos + m.intent
            if self.walls[ny, nx]:
                continue
            if ny == self.hero[0] and nx == self.hero[1]:
                hits += 1
                m.intent = np.zeros(2, dtype=np.int64)
                continue
            m.pos[:] = (ny, nx)
            m.intent = np.zeros(2, dtype=np.int64)
        return hits


ACTIONS = ((0, 0), (0, 1), (1, 0), (0, -1), (-1, 0), None)  # None = attack


class QAgent:
    def __init__(self, rng, n_states=8 * 4 * 3 * 16, alpha=0.1, gamma=0.95):
        self.q = np.zeros((n_states, len(ACTIONS)))
        self.rng = rng
        self.alpha, self.gamma = alpha, gamma
        self.eps = 0.3

    @staticmethod
    def encode(world):
        hy, hx = world.hero
        if world.monsters:
            d = np.array([m.pos for m in world.monsters]) - world.hero
            dist = np.abs(d).sum(axis=1)
            i = int(dist.argmin())
            ang = int(((np.arctan2(d[i, 0], d[i, 1]) + np.pi) / (2 * np.pi) * 8)) % 8
            db = min(3, int(dist[i]) // 3)
        else:
            ang, db = 0, 3
        hpb = min(2, world.hp // 4)
        w = world.walls
        bits = int(w[hy, hx + 1]) | int(w[hy + 1, hx]) << 1 | int(w[hy, hx - 1]) << 2 | int(w[hy - 1, hx]) << 3
        return ((ang * 4 + db) * 3 + hpb) * 16 + bits

    def act(self, s):
        if self.rng.random() < self.eps:
            return int(self.rng.integers(len(ACTIONS)))
        return int(self.q[s].argmax())

    def learn(self, s, a, r, s2, done):
        target = r if done else r + self.gamma * self.q[s2].max()
        self.q[s, a] += self.alpha * (target - self.q[s, a])


def render(world, canvas):
    canvas[:] = 30
    canvas[np.repeat(np.repeat(world.walls, 4, 0), 4, 1)] = 90
    for m in world.monsters:
        spr = m.sprites[m.frame, ::8, ::8]
        y, x = m.pos * 4
        alpha = spr[..., 3:] / 255.0
        canvas[y:y + 4, x:x + 4] = (alpha * spr[..., :3] + (1 - alpha) * canvas[y:y + 4, x:x + 4]).astype(np.uint8)
    y, x = world.hero * 4
    canvas[y:y + 4, x:x + 4] = (60, 200, 80)
    return canvas


def main():
    rng = np.random.default_rng(21)
    sched = Scheduler()
    world = World(sched, rng)
    agent = QAgent(rng)
    canvas = np.zeros((GRID * 4, GRID * 4, 3), dtype=np.uint8)
    s = agent.encode(world)
    episode, ep_return, returns = 0, 0.0, deque(maxlen=20)
    spawned = 0
    t0 = last = time.perf_counter()
    for frame in range(N_FRAMES):
        game_t = frame / FPS
        sched.run_until(game_t)
        if frame % 3 == 0 and len(world.monsters) < 30:
            world.spawn()
            spawned += 1
        a = agent.act(s)
        reward = -0.01
        if ACTIONS[a] is None:
            for m in list(world.monsters):
                if np.abs(m.pos - world.hero).sum() == 1:
                    m.hp -= 1
                    if m.hp <= 0:
                        world.despawn(m)
                        world.kills += 1
                        reward += 1.0
        else:
            ny, nx = world.hero + ACTIONS[a]
            if not world.walls[ny, nx]:
                world.hero[:] = (ny, nx)
        if frame % 3 == 0:
            world.flow = world.bfs(world.hero)
            render(world, canvas)
        hits = world.move_monsters()
        world.hp -= hits
        reward -= hits
        done = world.hp <= 0
        s2 = agent.encode(world)
        agent.learn(s, a, reward, s2, done)
        s = s2
        ep_return += reward
        if done:
            returns.append(ep_return)
            episode += 1
            ep_return = 0.0
            agent.eps = max(0.05, agent.eps * 0.97)
            world.reset()
            s = agent.encode(world)
        now = time.perf_counter()
        if now - last >= 1.0:
            last = now
            avg = np.mean(returns) if returns else float("nan")
            print(f"frame {frame:5d} episode {episode:3d} avg_return={avg:6.2f} live={len(world.monsters)} "
                  f"spawned={spawned} timers_fired={sched.fired}", flush=True)
    print(f"done: {N_FRAMES} frames, {episode} episodes in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
