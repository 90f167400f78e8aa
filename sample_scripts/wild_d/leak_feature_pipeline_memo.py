# expect: leak
# holder: _transform_cache
# pattern: scikit-style fit/transform feature pipeline memoizes transform() outputs in a dict keyed by a content hash of the input batch; every streamed batch is new so the dict only grows
# step_ms: 9
"""Numpy feature-engineering pipeline feeding a streaming ridge regressor.

``FeaturePipeline`` follows the scikit-learn ``fit`` / ``transform`` protocol:
robust scaling, PCA projection and a handful of pairwise interaction terms.
Because the same batch is sometimes transformed twice (once for scoring, once
for the model update) ``transform`` memoizes its output keyed by a hash of the
batch contents.

Why it leaks: the cache is an unbounded dict and the stream never repeats a
batch, so there is exactly one hit per batch and then the entry sits in
``self._transform_cache`` forever (~80 KiB of float32 features per batch).

Fix: drop the memo (just transform once and reuse the result), or bound it,
e.g. keep only the last key/value pair or an ``OrderedDict`` LRU of a few
entries.
"""
import hashlib
import time

import numpy as np

N_RAW = 64
ROWS = 1024
N_BATCHES = 2000


class FeaturePipeline:
    def __init__(self, n_components=10, n_interact=4, clip=6.0):
        self.n_components = n_components
        self.n_interact = n_interact
        self.clip = clip
        self._transform_cache = {}
        self.cache_hits = 0

    def fit(self, X):
        self.median_ = np.median(X, axis=0)
        q75, q25 = np.percentile(X, [75, 25], axis=0)
        self.scale_ = np.where(q75 - q25 > 1e-9, q75 - q25, 1.0)
        Z = np.clip((X - self.median_) / self.scale_, -self.clip, self.clip)
        Z -= Z.mean(axis=0)
        _, s, vt = np.linalg.svd(Z, full_matrices=False)
        self.components_ = vt[: self.n_components].T
        self.explained_ = (s[: self.n_components] ** 2).sum() / (s ** 2).sum()
        iu = np.triu_indices(self.n_interact)
        self._iu = iu
        return self

    def _key(self, X):
        return hashlib.blake2b(X.tobytes(), digest_size=16).hexdigest()

    def transform(self, X):
        key = self._key(X)
        cached = self._transform_cache.get(key)
        if cached is not None:
            self.cache_hits += 1
            return cached
        Z = np.clip((X - self.median_) / self.scale_, -self.clip, self.clip)
        P = Z @ self.components_
        head = P[:, : self.n_interact]
        inter = (head[:, :, None] * head[:, None, :])[:, self._iu[0], self._iu[1]]
        out = np.hstack([P, inter]).astype(np.float32)
        self._transform_cache[key] = out
        return out

    def fit_transform(self, X):
        return self.fit(X).transform(X)


class StreamingRidge:
    def __init__(self, dim, alpha=1.0, decay=0.995):
        self.A = alpha * np.eye(dim + 1)
        self.b = np.zeros(dim + 1)
        self.w = np.zeros(dim + 1)
        self.decay = decay

    @staticmethod
    def _aug(F):
        return np.hstack([F, np.ones((F.shape[0], 1), dtype=F.dtype)]).astype(np.float64)

    def predict(self, F):
        return self._aug(F) @ self.w

    def update(self, F, y):
        Fa = self._aug(F)
        self.A = self.decay * self.A + Fa.T @ Fa
        self.b = self.decay * self.b + Fa.T @ y
        self.w = np.linalg.solve(self.A, self.b)


class DriftMonitor:
    """Population stability index of every raw column against the fit batch."""

    def __init__(self, X_ref, n_bins=10):
        self.edges = [np.quantile(X_ref[:, j], np.linspace(0, 1, n_bins + 1)[1:-1]) for j in range(X_ref.shape[1])]
        self.ref = [self._hist(X_ref[:, j], e) for j, e in enumerate(self.edges)]

    @staticmethod
    def _hist(col, edges):
        counts = np.bincount(np.searchsorted(edges, col), minlength=len(edges) + 1)
        return (counts + 0.5) / (counts.sum() + 0.5 * len(counts))

    def psi(self, X):
        out = np.empty(X.shape[1])
        for j, (e, ref) in enumerate(zip(self.edges, self.ref)):
            cur = self._hist(X[:, j], e)
            out[j] = np.sum((cur - ref) * np.log(cur / ref))
        return out


def batches(n, seed=0):
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(N_RAW, N_RAW)) / np.sqrt(N_RAW)
    true_w = rng.normal(size=N_RAW)
    for i in range(n):
        latent = rng.standard_t(df=4, size=(ROWS, N_RAW))
        X = latent @ mixing + 0.002 * i
        y = np.tanh(latent @ true_w / 4.0) + 0.1 * rng.normal(size=ROWS)
        yield X, y


def main():
    stream = batches(N_BATCHES + 1)
    X0, _ = next(stream)
    pipe = FeaturePipeline().fit(X0)
    monitor = DriftMonitor(X0)
    print(f"PCA keeps {pipe.explained_:.1%} of variance")
    model = None
    sq_err, count = 0.0, 0
    t0 = time.time()
    for i, (X, y) in enumerate(stream):
        drift = monitor.psi(X)
        F = pipe.transform(X)
        if model is None:
            model = StreamingRidge(F.shape[1])
        pred = model.predict(F)
        sq_err += float(((pred - y) ** 2).sum())
        count += len(y)
        model.update(pipe.transform(X), y)  # second call is served from the cache
        if (i + 1) % 300 == 0:
            print(f"[{time.time() - t0:5.1f}s] batch {i + 1:5d}  running mse={sq_err / count:.4f}  "
                  f"max psi={drift.max():.3f}  cache hits={pipe.cache_hits}")
            sq_err, count = 0.0, 0


if __name__ == "__main__":
    main()
