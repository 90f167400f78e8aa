"""Containers the gc does not track (issue 12): ``python untracked_memo.py STEPS``.

A dict whose keys and values are all atomic (strings, numpy arrays) is untracked, so
``gc.get_objects`` never lists it. ``Pipeline.transform`` memoises its output by a hash
of the input, and the stream never repeats: ``main:pipe._cache`` grows by one array a
step. ``SEEN`` is a module-global dict of small arrays keyed by step, growing the same way.
"""

import gc
import sys
import time

import numpy as np

SEEN: dict[int, np.ndarray] = {}


class Pipeline:
    def __init__(self) -> None:
        self._cache: dict[str, np.ndarray] = {}

    def transform(self, x: np.ndarray) -> np.ndarray:
        key = x.tobytes().hex()[:32]
        out = self._cache.get(key)
        if out is None:
            out = (x * 2.0).astype(np.float32)
            self._cache[key] = out
        return out


def main(steps: int) -> None:
    pipe = Pipeline()
    rng = np.random.default_rng(0)
    for step in range(steps):
        pipe.transform(rng.standard_normal(256))
        SEEN[step] = np.full(4, step)
        time.sleep(0.005)
    gc.collect()
    print("untracked:", not gc.is_tracked(pipe._cache), not gc.is_tracked(SEEN))


if __name__ == "__main__":
    main(int(sys.argv[1]))
