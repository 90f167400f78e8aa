# expect: no_leak
# pattern: Lennard-Jones molecular dynamics that compresses a dilute gas to liquid density over the first quarter of the steps and then equilibrates at fixed volume; the Verlet pair list (cKDTree.query_pairs ndarray, rebuilt every few steps) and the chunked per-pair force temporaries grow with the density during compression, then stay the same size, and the g(r) histogram is a fixed array (NumPy/SciPy, no torch)
# step_ms: 110
"""Equation of state of a Lennard-Jones fluid along a compression path.

Starts from a dilute, jittered cubic lattice, squeezes the periodic box
isotropically to the target density (a slow affine rescaling of the
coordinates, with a Langevin thermostat holding the temperature) and then
runs at constant volume to sample the pressure, the potential energy and
the radial distribution function of the liquid.  Reduced LJ units
throughout; the pair list uses a Verlet skin and is refreshed every few
steps.
"""
import argparse
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import cKDTree

RC = 2.5
SKIN = 0.3


@dataclass
class System:
    pos: np.ndarray
    vel: np.ndarray
    box: float
    temperature: float
    pairs: np.ndarray = field(default_factory=lambda: np.empty((0, 2), dtype=np.int64))
    forces: np.ndarray = None
    epot: float = 0.0
    virial: float = 0.0

    @property
    def n(self):
        return len(self.pos)

    @property
    def density(self):
        return self.n / self.box ** 3


def lattice(n, density, rng):
    side = int(np.ceil(n ** (1 / 3)))
    box = (n / density) ** (1 / 3)
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
    pos = (grid + 0.5 + rng.uniform(-0.1, 0.1, (n, 3))) * (box / side)
    return pos, box


def rebuild_pairs(sys_):
    sys_.pos %= sys_.box
    tree = cKDTree(sys_.pos, boxsize=sys_.box)
    sys_.pairs = tree.query_pairs(RC + SKIN, output_type="ndarray")


def pair_chunks(sys_, chunk=200_000):
    """Minimum-image separations for the pair list, a chunk at a time."""
    for lo in range(0, len(sys_.pairs), chunk):
        i, j = sys_.pairs[lo:lo + chunk, 0], sys_.pairs[lo:lo + chunk, 1]
        d = sys_.pos[i] - sys_.pos[j]
        d -= sys_.box * np.round(d / sys_.box)
        yield i, j, d, np.einsum("ij,ij->i", d, d)


def compute_forces(sys_):
    f = np.zeros_like(sys_.pos)
    ecut = 4.0 * (RC ** -12 - RC ** -6)
    epot = virial = 0.0
    for i, j, d, r2 in pair_chunks(sys_):
        inside = r2 < RC * RC
        d, r2, i, j = d[inside], r2[inside], i[inside], j[inside]
        inv6 = (1.0 / r2) ** 3
        epot += float(np.sum(4.0 * inv6 * (inv6 - 1.0)) - ecut * len(r2))
        fscal = 24.0 * inv6 * (2.0 * inv6 - 1.0) / r2
        virial += float(np.sum(fscal * r2))
        fij = d * fscal[:, None]
        for k in range(3):
            f[:, k] += np.bincount(i, fij[:, k], minlength=sys_.n) - np.bincount(j, fij[:, k], minlength=sys_.n)
    sys_.forces, sys_.epot, sys_.virial = f, epot, virial


def langevin_step(sys_, dt, gamma, rng):
    sys_.vel += 0.5 * dt * sys_.forces
    sys_.pos += dt * sys_.vel
    c1 = np.exp(-gamma * dt)
    sys_.vel = c1 * sys_.vel + np.sqrt((1 - c1 * c1) * sys_.temperature) * rng.standard_normal(sys_.vel.shape)
    compute_forces(sys_)
    sys_.vel += 0.5 * dt * sys_.forces


def pressure(sys_):
    kin = np.sum(sys_.vel ** 2)
    vol = sys_.box ** 3
    return (kin + sys_.virial) / (3.0 * vol)


def main():
    p = argparse.ArgumentParser(description="LJ compression / equation of state")
    p.add_argument("--n", type=int, default=32000)
    p.add_argument("--rho0", type=float, default=0.08)
    p.add_argument("--rho1", type=float, default=0.8)
    p.add_argument("--temperature", type=float, default=1.5)
    p.add_argument("--steps", type=int, default=220)
    p.add_argument("--compress-frac", type=float, default=0.25)
    p.add_argument("--rebuild-every", type=int, default=4)
    p.add_argument("--dt", type=float, default=0.004)
    p.add_argument("--seed", type=int, default=11)
    args = p.parse_args()

    rng = np.random.default_rng(args.seed)
    pos, box = lattice(args.n, args.rho0, rng)
    vel = rng.standard_normal((args.n, 3)) * np.sqrt(args.temperature)
    vel -= vel.mean(0)
    system = System(pos=pos, vel=vel, box=box, temperature=args.temperature)
    rebuild_pairs(system)
    compute_forces(system)

    box_final = (args.n / args.rho1) ** (1 / 3)
    n_compress = int(args.compress_frac * args.steps)
    shrink = (box_final / box) ** (1.0 / n_compress)

    bins = np.linspace(0.0, RC, 101)
    gr_hist = np.zeros(len(bins) - 1)
    gr_samples = 0
    press, energy = [], []

    t0 = time.perf_counter()
    for step in range(args.steps):
        if step < n_compress:
            system.pos *= shrink
            system.box *= shrink
        if step % args.rebuild_every == 0 or step < n_compress:
            rebuild_pairs(system)
        langevin_step(system, args.dt, 4.0, rng)

        if step >= n_compress:
            press.append(pressure(system))
            energy.append(system.epot / system.n)
            if step % 10 == 0:
                h = np.zeros(len(bins) - 1)
                for _, _, _, r2 in pair_chunks(system):
                    h += np.histogram(np.sqrt(r2), bins=bins)[0]
                shell = 4.0 / 3.0 * np.pi * (bins[1:] ** 3 - bins[:-1] ** 3)
                gr_hist += 2.0 * h / (system.n * system.density * shell)
                gr_samples += 1

        if (step + 1) % 40 == 0:
            el = time.perf_counter() - t0
            print(
                f"step {step + 1:4d}  rho {system.density:.3f}  pairs {len(system.pairs):8d}  "
                f"U/N {system.epot / system.n:+.3f}  P {pressure(system):+.3f}  "
                f"{1000 * el / (step + 1):.0f} ms/step",
                flush=True,
            )

    gr = gr_hist / max(gr_samples, 1)
    peak = bins[np.argmax(gr)] + 0.5 * (bins[1] - bins[0])
    print(
        f"rho={args.rho1}: <P> = {np.mean(press):.3f} +- {np.std(press) / np.sqrt(len(press)):.3f}, "
        f"<U/N> = {np.mean(energy):.3f}, g(r) first peak {gr.max():.2f} at r={peak:.2f}"
    )


if __name__ == "__main__":
    main()
