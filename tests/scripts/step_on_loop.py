"""An evolutionary loop without an optimizer: ``generation()`` is the step.

``--leak`` keeps every generation's scores (a list that only grows, ~8 KiB a
generation); without it the scores are dropped. ``--gens N`` generations.
"""

import sys
import time

history: list[list[float]] = []


def generation(population: object, keep: bool) -> float:
    scores = [float(i) * 0.5 for i in range(1000)]
    if keep:
        history.append(scores)
    time.sleep(0.01)
    return max(scores)


class Env:
    def step(self, action: int) -> int:
        return action + 1


def main() -> None:
    leak = "--leak" in sys.argv
    gens = int(sys.argv[sys.argv.index("--gens") + 1]) if "--gens" in sys.argv else 300
    env = Env()
    for g in range(gens):
        generation(None, leak)
        env.step(g)
    print(f"done {gens} generations", flush=True)


if __name__ == "__main__":
    main()
