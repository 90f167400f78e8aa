# expect: no_leak
# pattern: individual-based population model: each agent object carries a numpy genome; births follow density-dependent (logistic) growth towards a carrying capacity while old or unfit agents die and are dropped, so memory rises along an S-curve for the first ~40% of the run and then holds at the birth/death equilibrium (constant turnover)
# step_ms: 30
"""Individual-based model of an asexual population adapting to a drifting optimum.

Agents have a genome (numpy float32 vector); a few loci define a trait,
the rest is neutral (used to follow lineages / diversity);
fitness depends on the distance to an environmental optimum that drifts over
time.  Reproduction is density dependent (logistic), offspring inherit a
mutated copy of the parent's genome.  No torch, no optimizer.
"""
import math
import random
import time

import numpy as np

GENOME = 1024
CAPACITY = 32000
TRAIT_LOCI = 6


class Agent:
    __slots__ = ("genome", "trait", "age", "energy", "lineage")

    def __init__(self, genome, lineage, energy=1.0):
        self.genome = genome
        self.trait = float(genome[:TRAIT_LOCI].mean())
        self.age = 0
        self.energy = energy
        self.lineage = lineage


class World:
    def __init__(self, n0, seed=0):
        self.rng = np.random.default_rng(seed)
        self.rnd = random.Random(seed)
        self.optimum = 0.0
        self.agents = [Agent(self.rng.normal(0, 0.3, GENOME).astype(np.float32), lineage=i)
                       for i in range(n0)]
        self.t = 0
        self.births = self.deaths = 0
        self.peak = n0

    def fitness(self, trait):
        return math.exp(-((trait - self.optimum) ** 2) / 0.08)

    def step(self, r=0.02, max_age=140):
        self.t += 1
        self.optimum = 0.06 * math.sin(self.t / 80.0)
        n = len(self.agents)
        crowd = 1.0 - n / CAPACITY
        rnd = self.rnd
        survivors, newborn = [], []
        for a in self.agents:
            a.age += 1
            f = self.fitness(a.trait)
            a.energy = 0.9 * a.energy + 0.1 * f
            if a.age > max_age or rnd.random() < 0.01 + 0.02 * (1 - a.energy):
                self.deaths += 1
                continue
            survivors.append(a)
            if rnd.random() < r * max(crowd, 0.0) * 2.0 * a.energy:
                child = a.genome + self.rng.normal(0, 0.02, GENOME).astype(np.float32)
                newborn.append(Agent(child, a.lineage, energy=a.energy))
        self.births += len(newborn)
        self.agents = survivors + newborn
        self.peak = max(self.peak, len(self.agents))

    def summary(self):
        traits = np.fromiter((a.trait for a in self.agents), float, len(self.agents))
        lineages = len({a.lineage for a in self.agents})
        return traits.mean(), traits.std(), lineages


def main():
    world = World(n0=1500, seed=17)
    n_gens = 680
    t0 = time.time()
    sizes = []
    for g in range(1, n_gens + 1):
        world.step()
        sizes.append(len(world.agents))
        if g % 40 == 0:
            m, s, lin = world.summary()
            print(f"gen {g:4d}  N={len(world.agents):6d}  optimum {world.optimum:+.3f}  trait {m:+.3f}+-{s:.3f}  "
                  f"lineages {lin:4d}  {time.time() - t0:.1f}s", flush=True)
    print(f"done: {n_gens} generations, births {world.births}, deaths {world.deaths}, "
          f"N final {sizes[-1]}, N mean(last 100) {np.mean(sizes[-100:]):.0f}, peak {world.peak}, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
