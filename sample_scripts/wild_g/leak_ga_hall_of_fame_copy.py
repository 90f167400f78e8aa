# expect: leak
# holder: hall_of_fame
# pattern: NumPy genetic algorithm (no torch) evolving the weights of a small MLP; every generation the top individuals are appended to self.hall_of_fame, and update_hall_of_fame() sorts and truncates to 10 a copy (hof = list(self.hall_of_fame)) that is only used for elitism, so the original list keeps every individual's genome
# step_ms: 120
"""Neuro-evolution with a simple generational GA.

Genomes are flat float64 weight vectors of a 2-layer MLP that has to fit a
noisy 2D regression surface.  Each generation: evaluate fitness, keep an
elite, tournament selection, blend crossover, Gaussian mutation.  The
"hall of fame" is meant to remember the 10 best individuals ever seen and
re-inject them as elites.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time
from dataclasses import dataclass

import numpy as np

N_IN, N_HIDDEN, N_OUT = 2, 96, 1
POP_SIZE = 48
HOF_SIZE = 10
GENERATIONS = 180
TOURNAMENT = 3
MUT_SIGMA = 0.05
N_SAMPLES = 512
HOF_CANDIDATES_PER_GEN = 6


def n_params():
    return N_IN * N_HIDDEN + N_HIDDEN + N_HIDDEN * N_HIDDEN + N_HIDDEN + N_HIDDEN * N_OUT + N_OUT


@dataclass
class Individual:
    genome: np.ndarray
    fitness: float = -np.inf
    generation: int = 0


def unpack(genome):
    i = 0
    shapes = [(N_IN, N_HIDDEN), (N_HIDDEN,), (N_HIDDEN, N_HIDDEN), (N_HIDDEN,), (N_HIDDEN, N_OUT), (N_OUT,)]
    out = []
    for s in shapes:
        k = int(np.prod(s))
        out.append(genome[i:i + k].reshape(s))
        i += k
    return out


def predict(genome, x):
    w1, b1, w2, b2, w3, b3 = unpack(genome)
    h = np.tanh(x @ w1 + b1)
    h = np.tanh(h @ w2 + b2)
    return (h @ w3 + b3)[:, 0]


class GeneticAlgorithm:
    def __init__(self, x, y, seed=0):
        self.x, self.y = x, y
        self.rng = np.random.default_rng(seed)
        self.population = [Individual(self.rng.normal(0, 0.3, n_params())) for _ in range(POP_SIZE)]
        self.hall_of_fame = []
        self.best_history = []

    def evaluate(self, gen):
        for ind in self.population:
            if ind.fitness == -np.inf:
                err = predict(ind.genome, self.x) - self.y
                ind.fitness = -float(np.mean(err * err))
                ind.generation = gen

    def update_hall_of_fame(self):
        ranked = sorted(self.population, key=lambda ind: ind.fitness, reverse=True)
        for ind in ranked[:HOF_CANDIDATES_PER_GEN]:
            self.hall_of_fame.append(Individual(ind.genome.copy(), ind.fitness, ind.generation))
        hof = list(self.hall_of_fame)
        hof.sort(key=lambda ind: ind.fitness, reverse=True)
        del hof[HOF_SIZE:]
        return hof

    def tournament(self):
        idx = self.rng.choice(len(self.population), TOURNAMENT, replace=False)
        return max((self.population[i] for i in idx), key=lambda ind: ind.fitness)

    def next_generation(self, elites):
        children = [Individual(e.genome.copy(), e.fitness, e.generation) for e in elites[:4]]
        while len(children) < POP_SIZE:
            a, b = self.tournament(), self.tournament()
            alpha = self.rng.uniform(-0.25, 1.25, size=a.genome.shape)
            child = alpha * a.genome + (1 - alpha) * b.genome
            mask = self.rng.random(child.shape) < 0.1
            child[mask] += self.rng.normal(0, MUT_SIGMA, size=int(mask.sum()))
            children.append(Individual(child))
        self.population = children

    def run(self, generations):
        t0 = time.time()
        for gen in range(generations):
            self.evaluate(gen)
            hof = self.update_hall_of_fame()
            self.best_history.append(hof[0].fitness)
            self.next_generation(hof)
            if gen % 30 == 0 or gen == generations - 1:
                print(f"gen {gen:4d}: best mse {-hof[0].fitness:.4f} "
                      f"(from gen {hof[0].generation}), hof list {len(self.hall_of_fame)}, "
                      f"{time.time() - t0:.1f}s")
        return hof


def main():
    rng = np.random.default_rng(42)
    x = rng.uniform(-2, 2, size=(N_SAMPLES, N_IN))
    y = np.sin(x[:, 0] * 1.5) * np.cos(x[:, 1]) + 0.05 * rng.normal(size=N_SAMPLES)
    ga = GeneticAlgorithm(x, y, seed=0)
    hof = ga.run(GENERATIONS)
    print(f"final best mse {-hof[0].fitness:.4f}; genome size {n_params()} params")


if __name__ == "__main__":
    main()
