# expect: leak
# holder: failures
# pattern: A2C training loop retries rollouts that raise SimulationDiverged and keeps every caught exception in a list; each traceback pins the rollout frame with its particle log and autograd graph
# step_ms: 55
"""Hand-written A2C on a small "herding" particle simulation.

A shepherd agent moves in the unit square and repels a flock of particles;
the reward is the negative distance between the flock centroid and a target.
The explicit-Euler integrator is stiff: when the shepherd gets very close to a
particle the repulsion explodes and the environment raises
``SimulationDiverged``.  The training loop then retries the rollout (every
rollout starts from a freshly reset episode), recording the failure "so we can look at the divergent
cases after the run".

Why it leaks: ``failures`` keeps the exception objects themselves.  Each
exception carries ``__traceback__``, whose frames keep *all* locals of
``collect_rollout`` and ``HerdingEnv.step`` alive: the per-step particle
position log, observation tensors and the list of log-probs/values with their
autograd graph.  Every divergence pins roughly a megabyte.

Fix: store ``repr(exc)`` / ``traceback.format_exc()`` (strings) instead of the
exception, or ``exc.with_traceback(None)``.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N_ENVS = 8
N_PARTICLES = 128
N_STEPS = 48
N_UPDATES = 300
MAX_RETRIES = 5
GAMMA = 0.97
ACTIONS = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.float32)


class SimulationDiverged(RuntimeError):
    pass


class HerdingEnv:
    obs_dim = 10

    def __init__(self, n_envs, n_particles, seed=0, dt=0.05, v_max=0.37):
        self.rng = np.random.default_rng(seed)
        self.n, self.p = n_envs, n_particles
        self.dt, self.v_max = dt, v_max
        self.reset()

    def reset(self):
        r = self.rng
        self.agent = r.uniform(0, 1, size=(self.n, 2)).astype(np.float32)
        self.pos = (r.uniform(0.3, 0.7, size=(self.n, 1, 2))
                    + 0.08 * r.standard_normal((self.n, self.p, 2))).astype(np.float32)
        self.vel = np.zeros_like(self.pos)
        self.target = r.uniform(0.1, 0.9, size=(self.n, 2)).astype(np.float32)
        return self._obs()

    def _obs(self):
        c = self.pos.mean(1)
        spread = self.pos.std(1)
        return np.concatenate([self.agent, c, spread, self.target, c - self.agent], axis=1).astype(np.float32)

    def step(self, action):
        self.agent = np.clip(self.agent + 0.04 * ACTIONS[action], 0, 1)
        d = self.pos - self.agent[:, None, :]
        r2 = (d ** 2).sum(-1, keepdims=True)
        force = 2e-4 * d / (r2 + 1e-5) ** 1.5
        cohesion = 0.5 * (self.pos.mean(1, keepdims=True) - self.pos)
        self.vel = 0.9 * self.vel + self.dt * (force + cohesion)
        speed = np.sqrt((self.vel ** 2).sum(-1))
        if speed.max() > self.v_max:
            raise SimulationDiverged(f"particle speed {speed.max():.1f} exceeds {self.v_max}")
        self.pos = np.clip(self.pos + self.dt * self.vel, -0.5, 1.5)
        dist = np.linalg.norm(self.pos.mean(1) - self.target, axis=1)
        return self._obs(), -dist


class ActorCritic(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=128):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def collect_rollout(env, model, n_steps):
    obs = torch.from_numpy(env.reset())  # fixed-horizon episodes
    particle_log = np.zeros((n_steps, env.n, env.p, 2), dtype=np.float32)  # for replay videos
    log_probs, values, entropies, rewards = [], [], [], []
    for t in range(n_steps):
        logits, value = model(obs)
        dist = torch.distributions.Categorical(logits=logits)
        action = dist.sample()
        next_obs, reward = env.step(action.numpy())
        particle_log[t] = env.pos
        log_probs.append(dist.log_prob(action))
        values.append(value)
        entropies.append(dist.entropy())
        rewards.append(torch.from_numpy(reward.astype(np.float32)))
        obs = torch.from_numpy(next_obs)
    with torch.no_grad():
        _, last_value = model(obs)
    return {"log_probs": torch.stack(log_probs), "values": torch.stack(values),
            "entropy": torch.stack(entropies), "rewards": torch.stack(rewards),
            "last_value": last_value, "spread": float(particle_log[-1].std(1).mean())}


def a2c_loss(batch):
    R = batch["last_value"]
    returns = []
    for r in reversed(batch["rewards"]):
        R = r + GAMMA * R
        returns.append(R)
    returns = torch.stack(returns[::-1])
    adv = returns - batch["values"]
    policy_loss = -(batch["log_probs"] * adv.detach()).mean()
    value_loss = F.mse_loss(batch["values"], returns)
    return policy_loss + 0.5 * value_loss - 0.01 * batch["entropy"].mean()


def main():
    env = HerdingEnv(N_ENVS, N_PARTICLES, seed=1)
    model = ActorCritic(HerdingEnv.obs_dim, len(ACTIONS))
    opt = torch.optim.Adam(model.parameters(), lr=7e-4)
    failures = []
    skipped = 0
    t0 = time.time()
    for update in range(N_UPDATES):
        for attempt in range(MAX_RETRIES):
            try:
                batch = collect_rollout(env, model, N_STEPS)
                break
            except SimulationDiverged as exc:
                failures.append({"update": update, "attempt": attempt, "error": exc})
        else:
            skipped += 1
            continue
        loss = a2c_loss(batch)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        if (update + 1) % 100 == 0:
            print(f"[{time.time() - t0:5.1f}s] update {update + 1:4d}  loss={loss.item():+.3f}  "
                  f"mean reward={batch['rewards'].mean().item():+.3f}  divergences={len(failures)}")
    print(f"done: {len(failures)} divergent rollouts, {skipped} updates skipped")


if __name__ == "__main__":
    main()
