"""Where a leaking list can live (issue 12): ``python holder_shapes.py SHAPE STEPS``.

Each shape appends every step's loss tensor (with its graph) to a list held in a
different place; ``drop`` grows a main()-local list, then lets it go and says how soon
it was freed (a profiler must not keep alive what the program dropped).
"""

import sys
import time
import weakref
from typing import Any, Callable, Dict, Iterator, List

import torch
from torch import nn

torch.set_num_threads(1)


class Tracker:
    records: List[Any] = []  # a class attribute


def log_metric(x: Any, buf: List[Any] = []) -> None:  # noqa: B006 - a mutable default argument, on purpose
    buf.append(x)


def make_logger() -> Callable[[Any], None]:
    history: List[Any] = []

    def log(x: Any) -> None:
        history.append(x)  # a closure cell

    return log


def batches(n: int) -> Iterator[torch.Tensor]:
    seen: List[torch.Tensor] = []  # a generator's local
    for _ in range(n):
        x = torch.randn(8, 16)
        seen.append(x)
        yield x


class Sentinel:
    pass


SKIP = ValueError("batch too large")  # one exception object, raised again and again


def check(x: Any) -> None:
    raise SKIP


class Accumulator:
    def __init__(self) -> None:
        self.running: Any = 0.0  # a running sum kept with its graph


class Bank:
    def __init__(self) -> None:
        self.feats = torch.zeros(64, 1)  # written in place with each step's keys


class Memory:
    def __init__(self) -> None:
        self.bank = Bank()


def main(shape: str, steps: int) -> None:
    model = nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    losses: Any = [Sentinel()]  # a list, until the program drops it
    freed = weakref.ref(losses[0])
    by_step: Dict[int, Any] = {}
    curves: Dict[str, List[Any]] = {"train": [], "val": []}  # a dict of lists
    acc = Accumulator()
    callbacks = [Sentinel(), Sentinel()]  # the second keeps a list it rebinds every step
    callbacks[1].kept = []  # type: ignore[attr-defined]
    log = make_logger()
    stream = batches(steps) if shape == "generator" else None
    dropped_at = None
    mem = Memory()
    for step in range(steps):
        x = next(stream) if stream is not None else torch.randn(8, 16)
        keys = model(x) if shape == "bank" else None  # with its graph: never detached
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if shape == "local" or (shape == "drop" and dropped_at is None):
            losses.append(loss)
        elif shape == "closure":
            log(loss)
        elif shape == "default":
            log_metric(loss)
        elif shape == "classattr":
            Tracker.records.append(loss)
        elif shape == "bystep":
            by_step[step] = loss
        elif shape == "dictoflists":
            curves["train"].append(loss)
        elif shape == "reraised":
            try:
                check(loss)  # its frame, with the loss, joins SKIP.__traceback__ each time
            except ValueError:
                pass
        elif shape == "carried":
            acc.running = acc.running + loss  # every step's graph stays below the sum
        elif shape == "bank" and keys is not None:
            # the bank, two attributes down, keeps every step's keys and their graphs
            mem.bank.feats[step % 64] = keys[0]
        elif shape == "rebound":
            # a new list each step, one item longer
            callbacks[1].kept = callbacks[1].kept + [loss]  # type: ignore[attr-defined]
        if shape == "drop" and step == steps // 2:
            losses = None  # the program lets the list go
            dropped_at = time.monotonic()
        if dropped_at is not None and freed() is None:
            print(f"freed {time.monotonic() - dropped_at:.3f} s after the drop")
            return
        time.sleep(0.005)
    print("done" if shape != "drop" else "NOT FREED")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
