# expect: leak
# holder: buffer|RolloutBuffer|log_probs|states
# pattern: RL rollout buffer never cleared; hand-written SGD update (no torch.optim)
# step_ms: 23
"""Policy gradient (REINFORCE with n-step returns) on 16 hand-written
cart-poles (no gym), with a manual parameter update -- ``p -= lr * p.grad``
under ``torch.no_grad()`` -- because "it's only a two-layer policy".

``RolloutBuffer`` stores the states, log-probs, rewards and done flags of
every tick of the 16 environments, and remembers where each rollout started;
the update takes the last rollout's slice. ``buffer.clear()`` exists but is
never called after the update, so every log-prob tensor (with its grad_fn
nodes) and every state tensor of the whole run stays in the buffer's lists:
a few KiB per tick.

Fix: call ``buffer.clear()`` after each update.
"""

import argparse
import math
import random
import time

import torch
import torch.nn as nn


class CartPole:
    g, m_cart, m_pole, length, force = 9.8, 1.0, 0.1, 0.5, 10.0

    def __init__(self, rng, dt=0.02):
        self.rng = rng
        self.dt = dt
        self.reset()

    def reset(self):
        self.state = [self.rng.uniform(-0.05, 0.05) for _ in range(4)]
        self.t = 0
        return list(self.state)

    def step(self, action):
        x, x_dot, th, th_dot = self.state
        f = self.force if action == 1 else -self.force
        total = self.m_cart + self.m_pole
        tmp = (f + self.m_pole * self.length * th_dot**2 * math.sin(th)) / total
        th_acc = (self.g * math.sin(th) - math.cos(th) * tmp) / (
            self.length * (4 / 3 - self.m_pole * math.cos(th) ** 2 / total)
        )
        x_acc = tmp - self.m_pole * self.length * th_acc * math.cos(th) / total
        x, x_dot = x + self.dt * x_dot, x_dot + self.dt * x_acc
        th, th_dot = th + self.dt * th_dot, th_dot + self.dt * th_acc
        self.state = [x, x_dot, th, th_dot]
        self.t += 1
        done = abs(x) > 2.4 or abs(th) > 0.21 or self.t * self.dt >= 5.0
        return list(self.state), 1.0, done


class RolloutBuffer:
    def __init__(self):
        self.states, self.log_probs, self.rewards, self.dones = [], [], [], []
        self.starts = [0]

    def add(self, states, log_probs, rewards, dones):
        self.states.append(states)
        self.log_probs.append(log_probs)
        self.rewards.append(rewards)
        self.dones.append(dones)

    def end_rollout(self):
        self.starts.append(len(self.rewards))

    def last_rollout(self):
        a, b = self.starts[-2], self.starts[-1]
        return self.log_probs[a:b], self.rewards[a:b], self.dones[a:b]

    def clear(self):
        for lst in (self.states, self.log_probs, self.rewards, self.dones):
            lst.clear()
        self.starts = [0]


def nstep_returns(rewards, dones, gamma, bootstrap):
    ret = bootstrap
    out = []
    for r, d in zip(reversed(rewards), reversed(dones)):
        ret = r + gamma * ret * (1.0 - d)
        out.append(ret)
    out.reverse()
    R = torch.stack(out)
    return (R - R.mean()) / (R.std() + 1e-6)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", type=int, default=600)
    ap.add_argument("--envs", type=int, default=16)
    ap.add_argument("--horizon", type=int, default=64)
    ap.add_argument("--substeps", type=int, default=4)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--gamma", type=float, default=0.98)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    envs = [CartPole(random.Random(args.seed + i), 0.02 / args.substeps) for i in range(args.envs)]
    obs = [e.reset() for e in envs]
    policy = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2))
    buffer = RolloutBuffer()
    finished = []
    t0 = time.time()
    for upd in range(args.updates):
        for _ in range(args.horizon):
            st = torch.tensor(obs, dtype=torch.float32)
            logp = torch.log_softmax(policy(st), dim=-1)
            actions = torch.multinomial(logp.exp().detach(), 1).squeeze(1)
            rewards, dones = [], []
            for i, (env, a) in enumerate(zip(envs, actions.tolist())):
                for _ in range(args.substeps):
                    o, r, d = env.step(a)
                    if d:
                        break
                if d:
                    finished.append(env.t * env.dt)
                    o = env.reset()
                obs[i] = o
                rewards.append(r)
                dones.append(float(d))
            buffer.add(
                st,
                logp.gather(1, actions[:, None]).squeeze(1),
                torch.tensor(rewards),
                torch.tensor(dones),
            )
        buffer.end_rollout()

        log_probs, rewards, dones = buffer.last_rollout()
        returns = nstep_returns(rewards, dones, args.gamma, torch.zeros(args.envs))
        loss = -(torch.stack(log_probs) * returns).mean()
        policy.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in policy.parameters():
                p -= args.lr * p.grad
        # buffer.clear()  # TODO re-enable once the PPO epochs are done

        if upd % 100 == 0:
            recent = finished[-100:] or [0.0]
            print(
                f"update {upd:4d}  balance {sum(recent) / len(recent):4.2f}s  "
                f"buffer {len(buffer.rewards)} ticks  {time.time() - t0:.1f}s",
                flush=True,
            )


if __name__ == "__main__":
    main()
