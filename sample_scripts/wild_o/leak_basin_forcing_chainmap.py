# expect: leak
# holder: params|params.maps
# pattern: NumPy-only distributed rainfall-runoff simulation; static catchment parameters and scenario overrides live in a collections.ChainMap and each day's forcing grids (precip, temperature, PET) are layered on top with `params = params.new_child(forcing)` in the daily loop, so the ChainMap's maps list gains one dict of three grids per simulated day and nothing ever drops the older layers
# step_ms: 5
"""Distributed HBV-style rainfall-runoff run for one headwater catchment.

Snow (degree-day), soil moisture bucket and two linear reservoirs per grid
cell, with 15-minute sub-steps; cell runoff is routed to the outlet through a
travel-time unit hydrograph.  Forcing comes from a stochastic weather
generator (spatially correlated rain fields, seasonal temperature with an
elevation lapse rate), which is what we use for the design-flood ensemble.
"""
import argparse
import collections
import time

import numpy as np

DEFAULTS = {
    "tt": 0.0,            # snow/rain threshold temperature (C)
    "cfmax": 3.5,         # degree-day factor (mm/C/day)
    "fc": 250.0,          # field capacity (mm)
    "beta": 2.0,
    "lp": 0.7,
    "k0": 0.25, "k1": 0.08, "k2": 0.01,  # reservoir recession constants (1/day)
    "perc": 1.5,          # percolation (mm/day)
    "uzl": 20.0,
    "lapse": -0.0065,     # C per m
}


def correlated_field(rng, n, corr_len):
    white = rng.standard_normal((n, n))
    k = np.fft.fftfreq(n)[:, None] ** 2 + np.fft.rfftfreq(n)[None] ** 2
    spec = np.fft.rfft2(white) * np.exp(-k * (corr_len ** 2) * 20)
    f = np.fft.irfft2(spec, s=(n, n))
    return (f - f.mean()) / (f.std() + 1e-9)


def make_catchment(n, rng):
    yy, xx = np.mgrid[0:n, 0:n] / n
    elev = 400 + 1600 * (1 - np.hypot(xx - 0.5, yy - 0.9)) ** 2 + 80 * correlated_field(rng, n, 0.2)
    dist = np.hypot(xx - 0.5, yy - 0.02)  # outlet at the bottom edge
    travel_days = np.clip((dist / dist.max() * 6).astype(int), 0, 6)
    return elev.astype(np.float32), travel_days


def weather(rng, n, days, elev):
    wet = False
    for day in range(days):
        wet = rng.random() < (0.65 if wet else 0.3)
        season = np.cos(2 * np.pi * (day - 200) / 365)
        t_sea = 8 + 11 * season + rng.normal(0, 2.5)
        tair = (t_sea + DEFAULTS["lapse"] * elev + 0.8 * correlated_field(rng, n, 0.3)).astype(np.float32)
        if wet:
            amount = rng.gamma(0.8, 12.0)
            precip = np.maximum(0, amount * (1 + 0.6 * correlated_field(rng, n, 0.15)) * (elev / elev.mean()))
        else:
            precip = np.zeros((n, n))
        pet = np.maximum(0, 0.0023 * (tair + 17.8) * 9 * (3 + season)).astype(np.float32)
        yield day, {"precip": precip.astype(np.float32), "tair": tair, "pet": pet}


def simulate_day(state, p, substeps=96):
    """Advance all cells by one day in 15-minute sub-steps; returns runoff (mm) per cell."""
    dt = 1 / substeps
    tt, cfmax, fc, beta, lp = p["tt"], p["cfmax"], p["fc"], p["beta"], p["lp"]
    k0, k1, k2, perc_max, uzl = p["k0"], p["k1"], p["k2"], p["perc"], p["uzl"]
    t, precip, pet = p["tair"], p["precip"], p["pet"]
    warm = t > tt
    rain_rate = np.where(warm, precip, 0) * dt
    snow_rate = np.where(warm, 0, precip) * dt
    melt_pot = np.maximum(0, cfmax * (t - tt)) * dt
    snow, sm, uz, lz = state["snow"], state["sm"], state["uz"], state["lz"]
    runoff = np.zeros_like(sm)
    for _ in range(substeps):
        melt = np.minimum(snow, melt_pot)
        snow += snow_rate - melt
        inflow = rain_rate + melt
        recharge = inflow * np.clip(sm / fc, 0, 1) ** beta
        sm += inflow - recharge
        et = pet * dt * np.clip(sm / (lp * fc), 0, 1)
        sm -= np.minimum(et, sm)
        uz += recharge
        perc = np.minimum(uz, perc_max * dt)
        uz -= perc
        q0 = k0 * np.maximum(uz - uzl, 0) * dt
        q1 = k1 * uz * dt
        uz -= q0 + q1
        lz += perc
        q2 = k2 * lz * dt
        lz -= q2
        runoff += q0 + q1 + q2
    return runoff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", type=int, default=64)
    ap.add_argument("--days", type=int, default=4400)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--scenario", default="wet-2050", choices=["baseline", "wet-2050"])
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.grid
    elev, travel_days = make_catchment(n, rng)
    overrides = {"cfmax": 4.0, "tt": 0.5} if args.scenario == "wet-2050" else {}
    params = collections.ChainMap(overrides, DEFAULTS)

    state = {k: np.zeros((n, n), np.float32) for k in ("snow", "sm", "uz", "lz")}
    state["sm"] += 120
    uh = np.zeros(travel_days.max() + 1)
    queue = np.zeros(uh.size)
    cell_area_km2 = 0.25
    discharge = []
    t0 = time.time()
    for day, forcing in weather(rng, n, args.days, elev):
        params = params.new_child(forcing)
        runoff_mm = simulate_day(state, params)
        # route: each cell's runoff arrives at the outlet after its travel time
        arrivals = np.bincount(travel_days.ravel(), weights=runoff_mm.ravel(), minlength=uh.size)
        queue = np.roll(queue, -1)
        queue[-1] = 0
        queue += arrivals
        q_m3s = queue[0] * 1e-3 * cell_area_km2 * 1e6 / 86400
        discharge.append(q_m3s)

        if (day + 1) % 365 == 0:
            year = np.array(discharge[-365:])
            print(f"year {(day + 1) // 365:2d}: mean Q {year.mean():7.2f} m3/s  peak {year.max():8.2f} m3/s  "
                  f"snow {state['snow'].mean():6.1f} mm  ({time.time() - t0:.1f}s)", flush=True)

    q = np.array(discharge)
    annual_max = q[: len(q) // 365 * 365].reshape(-1, 365).max(1)
    print(f"{len(q)} days simulated; annual maxima median {np.median(annual_max):.1f} m3/s, "
          f"max {annual_max.max():.1f} m3/s")


if __name__ == "__main__":
    main()
