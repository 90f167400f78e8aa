# expect: leak
# holder: debug_states
# pattern: NumPy-only Metropolis Monte-Carlo (2D Ising annealing); the long-running helper anneal() appends a full copy of the lattice every other sweep to a local debug_states list "for debugging", and only returns summary statistics at the end
# step_ms: 2
"""Simulated annealing of a 2D Ising model with checkerboard Metropolis updates.

``anneal`` walks a temperature schedule from hot to cold, doing a fixed
number of sweeps per temperature, and measures energy, magnetisation,
specific heat and susceptibility.  It is a single long-running call that
only returns a small table of per-temperature statistics.

Why it leaks: while chasing a bug in the checkerboard masks somebody added
``debug_states.append(spins.copy())`` every other sweep, intending to dump
a movie of the lattice if the energy ever went up at low temperature.  The
dump never triggers, but the list lives in ``anneal``'s frame for the
whole run: one L x L int8 lattice (25 KiB for L=160) per two sweeps, a
few MB per second.

Fix: drop it, keep a ``deque(maxlen=...)`` of recent states, or store a
snapshot only every few hundred sweeps.
"""
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

L = 160
J = 1.0
T_HOT, T_COLD = 3.5, 1.5
N_TEMPS = 42
SWEEPS_PER_T = 240
EQUIL = 60


def local_field(s):
    return (np.roll(s, 1, 0) + np.roll(s, -1, 0) + np.roll(s, 1, 1) + np.roll(s, -1, 1))


def energy(s):
    return -J * float((s * (np.roll(s, 1, 0) + np.roll(s, 1, 1))).sum())


def sweep(spins, beta, masks, rng):
    for mask in masks:
        dE = 2 * J * spins * local_field(spins)
        accept = (dE <= 0) | (rng.random(spins.shape) < np.exp(-beta * np.clip(dE, 0, None)))
        flip = accept & mask
        spins[flip] *= -1


def anneal(spins, temps, rng):
    ii, jj = np.indices(spins.shape)
    black = (ii + jj) % 2 == 0
    masks = (black, ~black)
    n = spins.size
    table = []
    debug_states = []          # TODO remove: kept to replay the lattice if E goes up when cold
    t0 = time.time()
    for k, T in enumerate(temps):
        beta = 1.0 / T
        Es, Ms = [], []
        for s in range(SWEEPS_PER_T):
            sweep(spins, beta, masks, rng)
            if s % 2 == 0:
                debug_states.append(spins.copy())
            if s >= EQUIL:
                Es.append(energy(spins))
                Ms.append(abs(int(spins.sum())))
        Es, Ms = np.asarray(Es), np.asarray(Ms, dtype=float)
        row = dict(T=T,
                   e=Es.mean() / n,
                   m=Ms.mean() / n,
                   c=beta ** 2 * Es.var() / n,
                   chi=beta * Ms.var() / n)
        table.append(row)
        if len(table) > 1 and T < 2.0 and row["e"] > table[-2]["e"] + 0.05:
            np.save("/tmp/ising_debug_states.npy", np.stack(debug_states[-SWEEPS_PER_T // 2:]))
        print(f"[{k:2d}] T={T:.3f}  e={row['e']:+.4f}  |m|={row['m']:.3f}  "
              f"C={row['c']:.3f}  chi={row['chi']:.2f}  {time.time() - t0:.1f}s", flush=True)
    return table


def main():
    rng = np.random.default_rng(1234)
    spins = rng.choice(np.array([-1, 1], dtype=np.int8), size=(L, L))
    temps = np.linspace(T_HOT, T_COLD, N_TEMPS)
    table = anneal(spins, temps, rng)
    tc = max(table, key=lambda r: r["c"])["T"]
    print(f"specific-heat peak near T={tc:.3f} (Onsager: 2.269)")


if __name__ == "__main__":
    main()
