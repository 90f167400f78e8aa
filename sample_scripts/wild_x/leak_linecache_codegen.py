# expect: leak
# holder: linecache.cache|linecache
# pattern: pure Python + NumPy streaming risk-scoring job with adaptive quantile bucketisation (no torch, no optimizer, ~9 ms per micro-batch of 1024 rows x 48 numeric fields, code in main() + a TransformCompiler class and a fixed-size QuantileWindow ring buffer); every micro-batch the bucket boundaries are re-estimated and TransformCompiler.build() generates the source of a specialised transform function with the boundaries inlined as literals, exec()s it and, like attrs/dataclasses do for generated code, registers the source in linecache.cache under a fresh unique filename so tracebacks show the generated lines; the compiled function is dropped after the batch but every registered source (~40 KB of line strings) stays in the module-global linecache.cache, so memory climbs steadily
# step_ms: 9
"""Streaming risk scorer with adaptive bucketisation.

Numeric transaction fields are bucketised against quantile boundaries that are
re-estimated from a sliding window of recent rows, then one-hot bucket weights
and a few log/ratio terms are summed into a logistic risk score.  The
transform is generated as straight-line Python for each boundary set (much
faster than a generic loop over fields), and the generated source is
registered with linecache so errors inside it produce readable tracebacks.
"""
import argparse
import linecache
import time
import uuid

import numpy as np

N_FIELDS = 48
N_BUCKETS = 32
WINDOW = 8192


class QuantileWindow:
    """Fixed-size ring buffer of the most recent rows; boundaries = window quantiles."""

    def __init__(self, n_fields, size):
        self.buf = np.zeros((size, n_fields), dtype=np.float32)
        self.size = size
        self.pos = 0
        self.filled = 0

    def push(self, rows):
        n = len(rows)
        idx = (self.pos + np.arange(n)) % self.size
        self.buf[idx] = rows
        self.pos = (self.pos + n) % self.size
        self.filled = min(self.size, self.filled + n)

    def boundaries(self, n_buckets):
        qs = np.linspace(0.0, 1.0, n_buckets + 1)[1:-1]
        sample = self.buf[: self.filled: 4]
        return np.quantile(sample, qs, axis=0).T  # (fields, n_buckets - 1)


class TransformCompiler:
    def __init__(self, field_names):
        self.field_names = field_names
        self.builds = 0

    def _source(self, bounds, name):
        lines = [f"def {name}(X, W, out):", "    searchsorted = _np.searchsorted"]
        for j, fname in enumerate(self.field_names):
            edges = ", ".join(repr(float(b)) for b in bounds[j])
            lines.append(f"    # {fname}")
            lines.append(f"    b = searchsorted(_np.array([{edges}], dtype=_np.float32), X[:, {j}])")
            lines.append(f"    out += W[{j}, b]")
        lines.append("    out += 0.1 * _np.log1p(_np.abs(X[:, 0])) - 0.05 * X[:, 1] / (1.0 + _np.abs(X[:, 2]))")
        lines.append("    return out")
        return "\n".join(lines) + "\n"

    def build(self, bounds):
        name = "transform_v%d" % self.builds
        src = self._source(bounds, name)
        filename = f"<risk-transform {name} {uuid.uuid4().hex}>"
        # make the generated code visible to traceback / pdb (same trick as attrs)
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        code = compile(src, filename, "exec")
        ns = {"_np": np}
        exec(code, ns)
        self.builds += 1
        return ns[name]


def synth_batch(rng, n, drift):
    base = rng.lognormal(mean=0.0, sigma=1.0, size=(n, N_FIELDS)).astype(np.float32)
    base[:, ::3] *= 1.0 + drift
    base[:, 1::3] = rng.normal(loc=drift, size=(n, len(range(1, N_FIELDS, 3))))
    label = (base[:, 0] * 0.3 - base[:, 1] + rng.normal(size=n) > 1.5).astype(np.float32)
    return base, label


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2200)
    ap.add_argument("--batch", type=int, default=1024)
    args = ap.parse_args()
    rng = np.random.default_rng(3)

    fields = [f"f{j:02d}_{kind}" for j, kind in zip(range(N_FIELDS),
              ["amount", "velocity", "ratio", "age", "count", "score"] * 8)]
    window = QuantileWindow(N_FIELDS, WINDOW)
    compiler = TransformCompiler(fields)
    W = (rng.normal(size=(N_FIELDS, N_BUCKETS)) * 0.05).astype(np.float32)
    flagged = 0
    tp = 0
    t0 = time.time()
    for step in range(1, args.steps + 1):
        X, y = synth_batch(rng, args.batch, drift=0.3 * np.sin(step / 400.0))
        window.push(X)
        transform = compiler.build(window.boundaries(N_BUCKETS))
        logits = transform(X, W, np.full(len(X), -1.0, dtype=np.float32))
        p = 1.0 / (1.0 + np.exp(-logits))
        flag = p > 0.5
        flagged += int(flag.sum())
        tp += int((flag & (y > 0)).sum())
        if step % 500 == 0:
            print(f"batch {step:5d}  flagged {flagged}  precision {tp / max(flagged, 1):.3f}  "
                  f"{time.time() - t0:.1f}s", flush=True)
    print(f"done: {compiler.builds} transform builds")


if __name__ == "__main__":
    main()
