# expect: leak
# holder: generation_archive|archive
# pattern: genetic algorithm (no optimizer) deep-copies the whole population of small nets into an archive list every generation "to replay later"
# step_ms: 220
"""Neuroevolution of a tiny controller for a 2-D "reach the beacon" task.

Plain genetic algorithm: evaluate, keep elites, mutate copies. No optimizer and no
backprop. For later visualisation the author stores a deep copy of every
generation's population in ``generation_archive``; only the last entry is ever
looked at, so ~40 small networks per generation pile up.
Fix: archive only the best individual's state_dict (or nothing).
"""
import copy
import time
import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(3)
rng = np.random.default_rng(3)

POP = 40
ELITES = 6
SIGMA = 0.05
EPISODE_LEN = 60
N_TARGETS = 8


class Controller(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2))

    def forward(self, obs):
        return torch.tanh(self.body(obs))


class BeaconWorld:
    """Point mass with momentum; reward = -distance to beacon."""

    def __init__(self, targets):
        self.targets = targets

    def rollout(self, policy):
        # all beacons are simulated at once, one row per beacon
        tgt = torch.tensor(self.targets, dtype=torch.float32)
        pos = torch.zeros_like(tgt)
        vel = torch.zeros_like(tgt)
        total = 0.0
        for _ in range(EPISODE_LEN):
            obs = torch.cat([pos, vel, tgt - pos], dim=1)
            force = policy(obs)
            vel = 0.9 * vel + 0.1 * force
            pos = pos + 0.1 * vel
            total -= torch.linalg.norm(tgt - pos, dim=1).sum().item()
        return total / (len(self.targets) * EPISODE_LEN)


@torch.no_grad()
def mutate(parent):
    child = copy.deepcopy(parent)
    for p in child.parameters():
        p.add_(SIGMA * torch.randn_like(p))
    return child


world = BeaconWorld(targets=rng.uniform(-1, 1, size=(N_TARGETS, 2)).tolist())
population = [Controller() for _ in range(POP)]
generation_archive = []
best_curve = []

t0 = time.time()
gen = 0
while time.time() - t0 < 20.0:
    with torch.no_grad():
        fitness = np.array([world.rollout(ind) for ind in population])
    order = np.argsort(-fitness)
    best_curve.append(float(fitness[order[0]]))
    generation_archive.append({
        "gen": gen,
        "fitness": fitness.copy(),
        "population": [copy.deepcopy(ind) for ind in population],
    })
    elites = [population[i] for i in order[:ELITES]]
    children = []
    while len(children) < POP - ELITES:
        parent = elites[rng.integers(ELITES)]
        children.append(mutate(parent))
    population = elites + children
    gen += 1
    if gen % 25 == 0:
        print(f"gen {gen:4d} best {best_curve[-1]:.3f} mean {fitness.mean():.3f} ({time.time() - t0:.1f}s)")

print(f"{gen} generations, {1000 * (time.time() - t0) / gen:.0f} ms/generation")
last = generation_archive[-1]
print("final best fitness %.3f" % last["fitness"].max())
