# expect: leak
# holder: CellRun.trace|run.trace|trace._cycles|self._cycles
# pattern: NumPy/SciPy Monte-Carlo ageing study of a fleet of Li-ion cells (no torch, no optimizer; each loop iteration simulates one charge/discharge cycle of one cell with an equivalent-circuit model via scipy.signal.lfilter); every cell run is a @dataclass CellRun whose list fields use field(default_factory=list), but the per-cycle waveform recorder is declared `trace: TraceRecorder = TraceRecorder()`; dataclasses only reject list/dict/set defaults, so the single TraceRecorder instance created at class-definition time is a class attribute shared by every CellRun, and its _cycles list keeps every cycle's voltage/temperature/SoC curves (3x400 float64, ~9.6 KB) of every cell ever simulated, although each CellRun is dropped after its summary and the failure plot only reads the last few cycles
# step_ms: 2
"""Fleet ageing Monte-Carlo for a battery-pack design review.

Each virtual cell gets randomised manufacturing parameters (capacity,
resistance, RC time constant, thermal mass) and is cycled with a synthetic
drive profile until it reaches end of life (80 % of its initial capacity) or
the cycle budget. Per-cycle discharge curves are recorded so that cells that
fail early can be plotted for the report. The fleet statistics (cycles to end
of life per chemistry) are written at the end.
"""
import contextlib
import functools
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import signal  # noqa: E402

log = logging.getLogger("fleet_ageing")


@dataclass
class StudyConfig:
    n_cells: int = 24
    max_cycles: int = 700
    samples_per_cycle: int = 400
    dt_s: float = 9.0
    n_shells: int = 8
    eol_fraction: float = 0.80
    early_failure_cycles: int = 330
    ambient_c: float = 25.0
    seed: int = 2024
    plot_last_cycles: int = 4


# ----------------------------------------------------------------- chemistries

CHEMISTRIES: Dict[str, Callable[[np.ndarray], np.ndarray]] = {}


def chemistry(name):
    def deco(fn):
        CHEMISTRIES[name] = fn
        return fn
    return deco


@chemistry("NMC")
def ocv_nmc(soc):
    return 3.0 + 1.2 * soc - 0.25 * np.exp(-18 * soc) + 0.08 * np.tanh(12 * (soc - 0.55))


@chemistry("LFP")
def ocv_lfp(soc):
    return 3.2 + 0.12 * soc - 0.35 * np.exp(-25 * soc) + 0.2 * np.exp(-28 * (1 - soc))


@functools.lru_cache(maxsize=8)
def drive_profile(n, dt_s, seed):
    """Synthetic current profile (A, discharge positive): urban + highway phases."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) * dt_s
    base = 1.6 + 0.9 * np.sin(2 * np.pi * t / 900.0) + 0.4 * np.sin(2 * np.pi * t / 130.0)
    bursts = np.clip(rng.standard_normal(n), 0, None) * 0.8
    regen = -0.6 * (rng.random(n) < 0.08)
    prof = np.clip(base + bursts + regen, -1.0, 4.5)
    prof.setflags(write=False)
    return prof


# ----------------------------------------------------------------- recording

class TraceRecorder:
    """Keeps per-cycle waveforms so a failing cell can be inspected afterwards."""

    def __init__(self):
        self._cycles: List[np.ndarray] = []
        self._meta: List[tuple] = []

    def record(self, cycle, curves, capacity_ah):
        self._cycles.append(curves)
        self._meta.append((cycle, capacity_ah))

    def last(self, k):
        return self._cycles[-k:], self._meta[-k:]

    def __len__(self):
        return len(self._cycles)


@dataclass
class CellParams:
    chemistry: str
    capacity_ah: float
    r0_ohm: float
    r1_ohm: float
    tau_s: float
    thermal_mass: float
    fade_rate: float


@dataclass
class CellRun:
    cell_id: int
    params: CellParams
    capacity_history: List[float] = field(default_factory=list)
    resistance_history: List[float] = field(default_factory=list)
    trace: TraceRecorder = TraceRecorder()
    eol_cycle: int = -1


# ----------------------------------------------------------------- model

def sample_params(rng, cell_id) -> CellParams:
    chem = "NMC" if cell_id % 3 else "LFP"
    return CellParams(
        chemistry=chem,
        capacity_ah=float(rng.normal(5.0 if chem == "NMC" else 4.6, 0.08)),
        r0_ohm=float(rng.lognormal(np.log(0.018), 0.1)),
        r1_ohm=float(rng.lognormal(np.log(0.012), 0.15)),
        tau_s=float(rng.uniform(40, 90)),
        thermal_mass=float(rng.uniform(70, 110)),
        fade_rate=float(rng.lognormal(np.log(3.2e-4 if chem == "NMC" else 2.4e-4), 0.35)),
    )


def particle_model(p: CellParams, dt_s, n_shells):
    """Discrete state-space model of solid diffusion in one electrode particle."""
    d = 1.0 / p.tau_s * n_shells ** 2 * 0.05
    A = np.zeros((n_shells, n_shells))
    for k in range(n_shells):
        if k > 0:
            A[k, k - 1] = d * (k / (k + 0.5))
        if k < n_shells - 1:
            A[k, k + 1] = d * ((k + 1) / (k + 0.5))
        A[k, k] = -A[k].sum()
    B = np.zeros((n_shells, 1))
    B[-1, 0] = -n_shells / 3600.0 * 3.0
    C = np.zeros((1, n_shells))
    C[0, -1] = 1.0
    return signal.cont2discrete((A, B, C, np.zeros((1, 1))), dt_s)


def simulate_cell(run: CellRun, cfg: StudyConfig, rng) -> Iterator[dict]:
    """Generator: one item per charge/discharge cycle."""
    p = run.params
    ocv = CHEMISTRIES[p.chemistry]
    current = drive_profile(cfg.samples_per_cycle, cfg.dt_s, cfg.seed)
    particle = particle_model(p, cfg.dt_s, cfg.n_shells)
    a = np.exp(-cfg.dt_s / p.tau_s)
    th = np.exp(-cfg.dt_s / (p.thermal_mass * 12.0))
    capacity = p.capacity_ah
    r0 = p.r0_ohm
    for cycle in range(cfg.max_cycles):
        scale = 1.0 + 0.05 * rng.standard_normal()
        i_cycle = current * scale
        # surface stoichiometry of the single-particle model drives the OCV
        x0 = np.full(cfg.n_shells, 1.0)
        _, surf, _ = signal.dlsim(particle, i_cycle / capacity, x0=x0)
        soc = np.clip(surf[:, 0], 0.0, 1.0)
        v_rc = signal.lfilter([p.r1_ohm * (1 - a)], [1, -a], i_cycle)
        heat = i_cycle ** 2 * (r0 + p.r1_ohm)
        temp = cfg.ambient_c + signal.lfilter([1 - th], [1, -th], heat * 4.0)
        v = ocv(soc) - i_cycle * r0 - v_rc
        dod = 1.0 - soc[-1]
        stress = np.exp(0.045 * (temp.mean() - cfg.ambient_c)) * (0.6 + dod)
        capacity *= 1.0 - p.fade_rate * stress * (1 + 0.2 * rng.standard_normal())
        r0 *= 1.0 + 0.35 * p.fade_rate * stress
        yield {"cycle": cycle, "v": v, "temp": temp, "soc": soc,
               "capacity": capacity, "r0": r0, "vmin": float(v.min())}


# ----------------------------------------------------------------- runner

class FleetRunner:
    def __init__(self, cfg: StudyConfig, out_dir: str):
        self.cfg = cfg
        self.out_dir = out_dir
        self.rng = np.random.default_rng(cfg.seed)
        self.hooks: Dict[str, List[Callable]] = {"cycle": [], "run_end": []}
        self.summaries: List[dict] = []
        self.cycles_done = 0

    def on(self, event, fn):
        self.hooks[event].append(fn)
        return fn

    def _fire(self, event, *args):
        for fn in self.hooks[event]:
            fn(*args)

    def run_cell(self, cell_id) -> dict:
        run = CellRun(cell_id=cell_id, params=sample_params(self.rng, cell_id))
        eol_cap = self.cfg.eol_fraction * run.params.capacity_ah
        for rec in simulate_cell(run, self.cfg, self.rng):
            curves = np.stack([rec["v"], rec["temp"], rec["soc"]])
            run.trace.record(rec["cycle"], curves, rec["capacity"])
            run.capacity_history.append(rec["capacity"])
            run.resistance_history.append(rec["r0"])
            self.cycles_done += 1
            self._fire("cycle", run, rec)
            if rec["capacity"] < eol_cap:
                run.eol_cycle = rec["cycle"]
                break
        summary = {
            "cell": cell_id, "chemistry": run.params.chemistry,
            "eol_cycle": run.eol_cycle if run.eol_cycle >= 0 else self.cfg.max_cycles,
            "final_capacity": run.capacity_history[-1] / run.params.capacity_ah,
            "r0_growth": run.resistance_history[-1] / run.params.r0_ohm,
        }
        self._fire("run_end", run, summary)
        return summary

    def run(self):
        for cell_id in range(self.cfg.n_cells):
            with timed(f"cell {cell_id:03d}") as t:
                s = self.run_cell(cell_id)
            self.summaries.append(s)
            log.info("cell %03d %s: eol at cycle %4d, capacity %.3f, R0 x%.2f (%.2fs, %d cycles total)",
                     cell_id, s["chemistry"], s["eol_cycle"], s["final_capacity"],
                     s["r0_growth"], t["elapsed"], self.cycles_done)
        return self.summaries


@contextlib.contextmanager
def timed(label):
    box = {"label": label}
    t0 = time.perf_counter()
    try:
        yield box
    finally:
        box["elapsed"] = time.perf_counter() - t0


def plot_failure(run: CellRun, summary, cfg: StudyConfig, out_dir: str):
    if summary["eol_cycle"] >= cfg.early_failure_cycles:
        return
    curves, meta = run.trace.last(cfg.plot_last_cycles)
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    t = np.arange(cfg.samples_per_cycle) * cfg.dt_s / 60
    for c, (cycle, cap) in zip(curves, meta):
        axes[0].plot(t, c[0], lw=0.8, label=f"cycle {cycle} ({cap:.2f} Ah)")
        axes[1].plot(t, c[1], lw=0.8)
    axes[0].set_xlabel("min"); axes[0].set_ylabel("V"); axes[0].legend(fontsize=6)
    axes[1].set_xlabel("min"); axes[1].set_ylabel("degC")
    fig.suptitle(f"early failure: cell {summary['cell']} ({summary['chemistry']})")
    fig.savefig(os.path.join(out_dir, f"cell_{summary['cell']:03d}.png"), dpi=60)
    plt.close(fig)


def undervoltage_watch(threshold):
    counts = {"events": 0}

    def hook(run, rec):
        if rec["vmin"] < threshold:
            counts["events"] += 1
    hook.counts = counts
    return hook


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    cfg = StudyConfig()
    out_dir = tempfile.mkdtemp(prefix="fleet_ageing_")
    try:
        runner = FleetRunner(cfg, out_dir)
        uv = runner.on("cycle", undervoltage_watch(threshold=2.5))
        runner.on("run_end", functools.partial(plot_failure, cfg=cfg, out_dir=out_dir))
        t0 = time.perf_counter()
        summaries = runner.run()
        eol = {}
        for s in summaries:
            eol.setdefault(s["chemistry"], []).append(s["eol_cycle"])
        for chem, cycles in sorted(eol.items()):
            print(f"{chem}: {len(cycles)} cells, median EOL {np.median(cycles):.0f} cycles, "
                  f"p10 {np.percentile(cycles, 10):.0f}")
        n_plots = len([f for f in os.listdir(out_dir) if f.endswith(".png")])
        print(f"{runner.cycles_done} cycles simulated in {time.perf_counter() - t0:.1f}s, "
              f"{uv.counts['events']} under-voltage cycles, {n_plots} failure plots")
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
