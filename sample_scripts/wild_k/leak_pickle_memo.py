# expect: leak
# holder: memo|_pickler|writer|TrajectoryWriter
# pattern: a trajectory writer reuses one pickle.Pickler for the whole run (so the shared topology dict is written only once); the Pickler's memo keeps a strong reference to every object it has pickled, so every frame's position/velocity/force arrays stay alive
# step_ms: 5
"""Lennard-Jones fluid, velocity-Verlet MD with a Berendsen thermostat (numpy only).

Frames are streamed to a trajectory file in a temporary directory.  The
writer keeps a single Pickler so that the (large, constant) topology record
is memoised and only stored once in the stream.
"""
import pickle
import tempfile
import time
import os

import numpy as np


class TrajectoryWriter:
    """Streams frames as consecutive pickles; read back with one Unpickler."""

    def __init__(self, path, topology):
        self.path = path
        self.topology = topology
        self._fh = None
        self._pickler = None
        self.n_frames = 0

    def __enter__(self):
        self._fh = open(self.path, "wb")
        self._pickler = pickle.Pickler(self._fh, protocol=pickle.HIGHEST_PROTOCOL)
        self._pickler.dump({"kind": "header", "topology": self.topology})
        return self

    def write(self, frame):
        frame["topology"] = self.topology          # memoised: written once, referenced after
        self._pickler.dump(frame)
        self.n_frames += 1

    def __exit__(self, *exc):
        self._fh.flush()
        self._fh.close()
        return False


def lj_forces(pos, box, rc=2.5):
    d = pos[:, None, :] - pos[None, :, :]
    d -= box * np.round(d / box)
    r2 = np.einsum("ijk,ijk->ij", d, d)
    np.fill_diagonal(r2, np.inf)
    mask = r2 < rc * rc
    inv2 = np.where(mask, 1.0 / r2, 0.0)
    inv6 = inv2 ** 3
    fmag = 24.0 * inv2 * inv6 * (2.0 * inv6 - 1.0)
    forces = np.einsum("ij,ijk->ik", fmag, d)
    pot_i = 2.0 * np.sum(inv6 * (inv6 - 1.0), axis=1)
    return forces, pot_i


def main():
    rng = np.random.default_rng(11)
    n_side = 6
    n = n_side ** 3                  # 216 particles
    density = 0.8
    box = (n / density) ** (1 / 3)
    grid = np.stack(np.meshgrid(*[np.arange(n_side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    pos = (grid + 0.5) * box / n_side + rng.normal(0, 0.02, (n, 3))
    vel = rng.normal(0, 1.0, (n, 3))
    vel -= vel.mean(0)
    topology = {
        "n_atoms": n,
        "types": np.zeros(n, dtype=np.int8),
        "masses": np.ones(n),
        "names": [f"Ar{i}" for i in range(n)],
        "box": box,
        "start": pos.copy(),
    }

    dt, t_target, tau = 0.004, 1.2, 0.1
    n_steps = 4000
    forces, pot_i = lj_forces(pos, box)
    unwrapped = pos.copy()
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "traj.pkl")
        with TrajectoryWriter(path, topology) as writer:
            for step in range(1, n_steps + 1):
                vel += 0.5 * dt * forces
                pos += dt * vel
                unwrapped += dt * vel
                pos %= box
                forces, pot_i = lj_forces(pos, box)
                pot = pot_i.sum()
                vel += 0.5 * dt * forces
                kin = 0.5 * np.sum(vel * vel)
                temp = 2 * kin / (3 * n)
                vel *= np.sqrt(1 + dt / tau * (t_target / temp - 1))
                msd = np.mean(np.sum((unwrapped - topology["start"]) ** 2, axis=1))
                writer.write({"step": step, "pos": pos.copy(), "vel": vel.copy(),
                              "forces": forces.copy(), "unwrapped": unwrapped.copy(),
                              "pot_i": pot_i, "temp": float(temp), "msd": float(msd)})
                if step % 500 == 0:
                    print(f"step {step:5d}  T={temp:.3f}  U/N={pot / n:.3f}  MSD={msd:.3f}  "
                          f"file {os.path.getsize(path) / 2**20:.1f} MiB  {time.time() - t0:.1f}s", flush=True)
        with open(path, "rb") as fh:
            up = pickle.Unpickler(fh)
            header = up.load()
            first = up.load()
        print(f"done: {writer.n_frames} frames, header atoms={header['topology']['n_atoms']}, "
              f"first frame step={first['step']}, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
