# expect: no_leak
# holder:
# pattern: pure Python + NumPy IoT telemetry normaliser (no torch, no optimizer, ~1.2 ms per gateway batch of 512 readings, code in main() + CalibrationCompiler/CompiledCache classes); looks suspicious because it generates, exec()s and registers in linecache.cache the source of a specialised calibration function per (device model, firmware, calibration revision), and revisions keep changing, but compiled functions live in an OrderedDict LRU of 48 entries and evicting one also pops its linecache entry, so both the cache and linecache.cache stop growing after warm-up (the LRU and the allocator settle within the first ~third of the run, a few MB)
# step_ms: 1.2
"""Telemetry normaliser for the sensor fleet.

Each device model ships a per-channel calibration (polynomial coefficients and
a piecewise-linear temperature correction) that the device registry revises
from time to time.  Calibrations are compiled into straight-line Python for
speed; compiled functions are kept in a small LRU, and their generated source
is registered with linecache while they are cached so tracebacks are readable.
"""
import argparse
import hashlib
import linecache
import time
from collections import OrderedDict

import numpy as np

N_MODELS = 40
N_FIRMWARE = 6
CHANNELS = 12
DEGREE = 5
KNOTS = 16


class CalibrationCompiler:
    def source(self, name, coeffs, knots, corr):
        lines = [f"def {name}(raw, temp):", "    out = _np.empty_like(raw)"]
        for c in range(CHANNELS):
            poly = " + ".join(f"{float(coeffs[c, d])!r} * x{c} ** {d}" if d else repr(float(coeffs[c, 0]))
                              for d in range(DEGREE + 1))
            lines.append(f"    x{c} = raw[:, {c}]")
            lines.append(f"    out[:, {c}] = {poly}")
        kn = ", ".join(repr(float(k)) for k in knots)
        cv = ", ".join(repr(float(v)) for v in corr)
        lines.append(f"    out *= _np.interp(temp, [{kn}], [{cv}])[:, None]")
        lines.append("    return out")
        return "\n".join(lines) + "\n"


class CompiledCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self._fns = OrderedDict()  # key -> (fn, filename)
        self.compiles = 0
        self.evictions = 0

    def get_or_build(self, key, build):
        hit = self._fns.get(key)
        if hit is not None:
            self._fns.move_to_end(key)
            return hit[0]
        fn, filename = build()
        self._fns[key] = (fn, filename)
        self.compiles += 1
        if len(self._fns) > self.capacity:
            _, (_, old_file) = self._fns.popitem(last=False)
            linecache.cache.pop(old_file, None)
            self.evictions += 1
        return fn


class Registry:
    """Device registry: calibration tables per (model, firmware), revised now and then."""

    def __init__(self, rng):
        self.rng = rng
        self.revision = {}

    def table(self, model, fw):
        rev = self.revision.setdefault((model, fw), 0)
        g = np.random.default_rng(model * 1000 + fw * 10 + rev)
        coeffs = g.normal(scale=[1.0, 1.0, 0.1, 0.01, 0.001, 0.0001], size=(CHANNELS, DEGREE + 1))
        knots = np.linspace(-20.0, 60.0, KNOTS)
        corr = 1.0 + 0.01 * g.normal(size=KNOTS)
        return rev, coeffs, knots, corr

    def maybe_revise(self):
        if self.rng.random() < 0.01:
            key = (int(self.rng.integers(N_MODELS)), int(self.rng.integers(N_FIRMWARE)))
            self.revision[key] = self.revision.get(key, 0) + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=16000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--cache", type=int, default=48)
    args = ap.parse_args()
    rng = np.random.default_rng(9)

    registry = Registry(rng)
    compiler = CalibrationCompiler()
    cache = CompiledCache(args.cache)
    popularity = 1.0 / np.arange(1, N_MODELS + 1) ** 1.1
    popularity /= popularity.sum()
    totals = np.zeros(CHANNELS)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        registry.maybe_revise()
        model = int(rng.choice(N_MODELS, p=popularity))
        fw = int(rng.integers(N_FIRMWARE))
        rev, coeffs, knots, corr = registry.table(model, fw)

        def build():
            name = f"calib_m{model}_fw{fw}_r{rev}"
            src = compiler.source(name, coeffs, knots, corr)
            digest = hashlib.sha1(src.encode()).hexdigest()[:12]
            filename = f"<calibration {name} {digest}>"
            linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
            ns = {"_np": np}
            exec(compile(src, filename, "exec"), ns)
            return ns[name], filename

        fn = cache.get_or_build((model, fw, rev), build)
        raw = rng.normal(size=(args.batch, CHANNELS))
        temp = rng.uniform(-10.0, 45.0, size=args.batch)
        totals += fn(raw, temp).mean(0)
        if step % 4000 == 0:
            print(f"batch {step:6d}  compiles {cache.compiles}  evictions {cache.evictions}  "
                  f"linecache {len(linecache.cache)}  {time.time() - t0:.1f}s", flush=True)
    print("channel means:", np.round(totals / args.steps, 3)[:4])


if __name__ == "__main__":
    main()
