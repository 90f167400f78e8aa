"""A search that builds each trial's code as a module and registers it in ``sys.modules``
(so ``importlib``/``pickle`` can find it) and never removes it: ``sys.modules`` grows one
module a trial, each module keeping its arrays, while no import goes on."""

import sys
import time
import types

TRIALS = int(sys.argv[1]) if len(sys.argv) > 1 else 60


def make_trial(i: int) -> types.ModuleType:
    mod = types.ModuleType(f"trial_{i}")
    exec(f"weights = [float(j) * {i} for j in range(20000)]\nscore = sum(weights)", vars(mod))
    sys.modules[mod.__name__] = mod
    return mod


def main() -> None:
    best = 0.0
    for i in range(TRIALS):
        best = max(best, make_trial(i).score)
        time.sleep(0.08)
    print(f"{TRIALS} trials, best {best:.0f}")


if __name__ == "__main__":
    main()
