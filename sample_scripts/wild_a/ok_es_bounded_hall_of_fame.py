# expect: no_leak
# pattern: evolution strategies without any optimizer or autograd; a heap-based hall of fame keeps parameter clones but is capped at 8 entries (heappushpop), fitness history kept as floats
# step_ms: 150
"""OpenAI-style evolution strategies for a point-mass navigation policy.

Each generation samples antithetic parameter perturbations, evaluates them with
batched rollouts under torch.no_grad(), and moves the mean along the
fitness-weighted noise.  Good candidates are cloned into a hall of fame, which
looks like it could grow forever, but the heap is capped at HOF_SIZE via
heapq.heappushpop, so after the first generations memory stays flat.
"""
import heapq
import itertools
import time

import torch
import torch.nn as nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

HOF_SIZE = 8


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2))

    def forward(self, s):
        return torch.tanh(self.net(s))


@torch.no_grad()
def rollout_fitness(policy, goals, horizon=40, dt=0.1):
    n = goals.shape[0]
    pos = torch.zeros(n, 2)
    vel = torch.zeros(n, 2)
    total = torch.zeros(n)
    for _ in range(horizon):
        a = policy(torch.cat([pos, vel, goals], dim=1))
        vel = 0.9 * vel + dt * a
        pos = pos + dt * vel
        total -= (pos - goals).norm(dim=1) + 0.01 * a.pow(2).sum(1)
    return total.mean().item()


def centered_ranks(x):
    ranks = torch.empty_like(x)
    ranks[x.argsort()] = torch.arange(len(x), dtype=x.dtype)
    return ranks / (len(x) - 1) - 0.5


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    policy = Policy()
    theta = parameters_to_vector(policy.parameters()).clone()
    dim = theta.numel()
    pop_half, sigma, lr = 24, 0.05, 0.03
    generations = 110
    hall_of_fame = []  # min-heap of (fitness, tiebreak, params)
    tiebreak = itertools.count()
    fitness_curve = []
    t0 = time.time()
    for gen in range(generations):
        goals = torch.rand(16, 2) * 2 - 1
        eps = torch.randn(pop_half, dim)
        eps = torch.cat([eps, -eps])
        fitness = torch.empty(2 * pop_half)
        for i in range(2 * pop_half):
            candidate = theta + sigma * eps[i]
            vector_to_parameters(candidate, policy.parameters())
            fitness[i] = rollout_fitness(policy, goals)
            entry = (fitness[i].item(), next(tiebreak), candidate.clone())
            if len(hall_of_fame) < HOF_SIZE:
                heapq.heappush(hall_of_fame, entry)
            else:
                heapq.heappushpop(hall_of_fame, entry)
        grad = (centered_ranks(fitness)[:, None] * eps).sum(0) / (2 * pop_half * sigma)
        theta = theta + lr * grad
        fitness_curve.append(fitness.mean().item())
        if gen % 20 == 0 or gen == generations - 1:
            best = max(hall_of_fame)[0]
            print(f"gen {gen:3d}  mean fitness {fitness_curve[-1]:8.3f}  hall-of-fame best {best:8.3f}"
                  f"  ({time.time() - t0:.1f}s)", flush=True)

    vector_to_parameters(max(hall_of_fame)[2], policy.parameters())
    print(f"re-evaluated best: {rollout_fitness(policy, torch.rand(256, 2) * 2 - 1):.3f}")


if __name__ == "__main__":
    main()
