# expect: leak
# holder: template.collision_log|self.template.collision_log|env.collision_log
# pattern: NumPy-only REINFORCE (hand-written policy-gradient update, no torch) for a robot navigating a cluttered warehouse grid; every episode's environment is made with WarehouseEnv.spawn() = copy.copy(self) so the expensive static maps (occupancy, clearance, goal list) are shared, and reset() re-initialises the per-episode scalars, but copy.copy is shallow: the collision_log list created in __init__ is the same list object in the long-lived template and every spawned copy, so each collision's 3x33x33 local-map crop (plus pose and action) is appended to the template's list and stays alive for the whole run, although the code only ever reads the current episode's entries
# step_ms: 20
"""Policy-gradient navigation in a cluttered warehouse grid.

A holonomic robot has to reach a randomly chosen pick station on a 128x128
occupancy grid with shelves, pillars and randomly parked pallets.  The
policy is a linear softmax over 8 move directions on hand-crafted features
(7x7 local occupancy, goal direction, clearance gradient) and is trained
with REINFORCE with a running-mean baseline and entropy bonus, using a
hand-written gradient and plain SGD update (pure NumPy).

The static maps (occupancy grid, clearance transform, station list) are
expensive to build, so one template environment is built up front and each
episode runs on a cheap copy of it.  Collisions are logged together with a
local crop of the map so that the worst episodes can be inspected.
"""
import argparse
import copy
import time

import numpy as np

MOVES = np.array([(-1, 0), (1, 0), (0, -1), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)])
VIEW = 3      # 7x7 occupancy patch
CROP = 16     # 33x33 crop stored with a collision


def clearance_transform(occ, iters=24):
    """Chamfer-like distance to the nearest obstacle, capped at `iters` cells."""
    d = np.where(occ, 0.0, float(iters))
    for _ in range(iters):
        p = np.pad(d, 1, mode="edge")
        nb = np.minimum.reduce([p[:-2, 1:-1], p[2:, 1:-1], p[1:-1, :-2], p[1:-1, 2:]]) + 1.0
        d = np.minimum(d, nb)
    return d.astype(np.float32)


class WarehouseEnv:
    def __init__(self, size=128, seed=0, max_steps=120, start_radius=30):
        rng = np.random.default_rng(seed)
        occ = np.zeros((size, size), dtype=bool)
        occ[0, :] = occ[-1, :] = occ[:, 0] = occ[:, -1] = True
        for r in range(8, size - 8, 12):            # shelf rows with cross aisles
            for c0 in range(6, size - 14, 22):
                occ[r:r + 3, c0:c0 + 16] = True
        for _ in range(60):                          # pillars
            r, c = rng.integers(4, size - 4, 2)
            occ[r:r + 2, c:c + 2] = True
        free = np.argwhere(~occ)
        self.size = size
        self.occ = occ
        self.clear = clearance_transform(occ)
        self.stations = free[rng.choice(len(free), 24, replace=False)]
        self.max_steps = max_steps
        self.start_radius = start_radius
        self.collision_log = []
        self.pallets = None

    def spawn(self, seed):
        env = copy.copy(self)
        env.reset(seed)
        return env

    def reset(self, seed):
        self.rng = np.random.default_rng(seed)
        self.t = 0
        self.collisions = 0
        self.log_start = len(self.collision_log)
        occ = self.occ.copy()
        pr = self.rng.integers(2, self.size - 2, (400, 2))
        occ[pr[:, 0], pr[:, 1]] = True              # parked pallets for this episode
        self.goal = self.stations[self.rng.integers(len(self.stations))]
        occ[self.goal[0], self.goal[1]] = False
        self.pallets = occ
        free = np.argwhere(~occ)
        near = free[np.abs(free - self.goal).sum(1) <= self.start_radius]
        self.pos = near[self.rng.integers(len(near))].copy()
        self.start_dist = np.abs(self.goal - self.pos).sum()
        return self.features()

    def features(self):
        r, c = self.pos
        p = np.pad(self.pallets, VIEW, constant_values=True)[r:r + 2 * VIEW + 1, c:c + 2 * VIEW + 1]
        g = (self.goal - self.pos).astype(np.float32)
        gn = g / (np.linalg.norm(g) + 1e-6)
        cl = self.clear
        grad = np.array([cl[min(r + 1, self.size - 1), c] - cl[max(r - 1, 0), c],
                         cl[r, min(c + 1, self.size - 1)] - cl[r, max(c - 1, 0)]], np.float32) / 2
        return np.concatenate([p.ravel().astype(np.float32), gn, grad, [1.0]])

    def crop(self):
        r, c = self.pos
        pad = CROP
        layers = [np.pad(self.pallets.astype(np.float32), pad, constant_values=1.0),
                  np.pad(self.clear, pad), np.zeros((self.size + 2 * pad,) * 2, np.float32)]
        gr, gc = self.goal
        layers[2][gr + pad, gc + pad] = 1.0
        return np.stack([L[r:r + 2 * pad + 1, c:c + 2 * pad + 1] for L in layers])

    def step(self, a):
        self.t += 1
        nxt = self.pos + MOVES[a]
        reward = -0.01
        if self.pallets[nxt[0], nxt[1]]:
            self.collisions += 1
            self.collision_log.append({"t": self.t, "pos": self.pos.copy(), "action": int(a),
                                       "crop": self.crop()})
            reward -= 0.3
        else:
            before = np.abs(self.goal - self.pos).sum()
            self.pos = nxt
            reward += 0.02 * (before - np.abs(self.goal - self.pos).sum())
        done = bool((self.pos == self.goal).all())
        if done:
            reward += 1.0
        return self.features(), reward, done or self.t >= self.max_steps, done

    def episode_collisions(self):
        return self.collision_log[self.log_start:]


def softmax(z):
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def run_episode(env, W, rng, temperature):
    obs = env.features()
    feats, acts, probs, rews = [], [], [], []
    done = False
    while not done:
        pi = softmax(W @ obs / temperature)
        a = rng.choice(8, p=pi)
        feats.append(obs)
        acts.append(a)
        probs.append(pi)
        obs, r, done, success = env.step(a)
        rews.append(r)
    return np.array(feats), np.array(acts), np.array(probs), np.array(rews), success


def policy_gradient(W, feats, acts, probs, rews, baseline, gamma, temperature, ent_coef):
    returns = np.zeros_like(rews)
    g = 0.0
    for t in range(len(rews) - 1, -1, -1):
        g = rews[t] + gamma * g
        returns[t] = g
    adv = returns - baseline
    onehot = np.eye(8)[acts]
    dlogits = (onehot - probs) * adv[:, None]
    logp = np.log(probs + 1e-8)
    ent = -(probs * logp).sum(1, keepdims=True)
    dlogits += ent_coef * (-probs * (logp + ent))
    return (dlogits.T @ feats) / temperature / len(rews), returns[0]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--iterations", type=int, default=950)
    p.add_argument("--episodes-per-iter", type=int, default=4)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--gamma", type=float, default=0.98)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--log-every", type=int, default=95)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()

    rng = np.random.default_rng(args.seed)
    template = WarehouseEnv(seed=args.seed)
    n_feat = len(template.spawn(0).features())
    W = np.zeros((8, n_feat))
    baseline = 0.0
    hist = {"ret": [], "succ": [], "coll": []}
    worst = (-1, None)
    t0 = time.perf_counter()
    for it in range(1, args.iterations + 1):
        grad = np.zeros_like(W)
        for e in range(args.episodes_per_iter):
            env = template.spawn(int(rng.integers(1 << 31)))
            feats, acts, probs, rews, success = run_episode(env, W, rng, args.temperature)
            g, ret = policy_gradient(W, feats, acts, probs, rews, baseline, args.gamma,
                                     args.temperature, args.ent_coef)
            grad += g
            baseline = 0.95 * baseline + 0.05 * ret
            hist["ret"].append(ret)
            hist["succ"].append(success)
            hist["coll"].append(env.collisions)
            if env.collisions > worst[0]:
                worst = (env.collisions, [c["pos"] for c in env.episode_collisions()][:5])
        W += args.lr * grad / args.episodes_per_iter

        if it % args.log_every == 0:
            k = args.log_every * args.episodes_per_iter
            ms = (time.perf_counter() - t0) * 1000 / it
            print(f"iter {it:4d}  return {np.mean(hist['ret'][-k:]):+.3f}  success {np.mean(hist['succ'][-k:]):.2f}  "
                  f"collisions/ep {np.mean(hist['coll'][-k:]):.1f}  {ms:.0f} ms/iter", flush=True)
    print(f"worst episode: {worst[0]} collisions, first at {worst[1]}")


if __name__ == "__main__":
    main()
