"""The deep size behind ``memprobe.watch``: shared things once, bounded cost, no target code."""

from __future__ import annotations

import collections
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memprobe.bootstrap.memprobe_agent import deepsize, watching

torch = pytest.importorskip("torch")


def test_views_of_one_storage_count_once() -> None:
    # GIVEN a list of 1,000 row views of one 4 MB tensor (sampled: more than 256 items)
    big = torch.zeros(1000, 1000)
    views = [big[i] for i in range(1000)]
    # WHEN sized
    est = deepsize.deep_size(views)
    # THEN the storage is counted once (not 1,000 times, not scaled up by the sampling)
    assert 0.99 * big.nbytes <= est.bytes <= big.nbytes + sys.getsizeof(views) + 64


def test_one_tensor_put_in_many_times_counts_once() -> None:
    t = torch.zeros(256, 256)
    est = deepsize.deep_size([t] * 5000)
    assert est.bytes < t.nbytes + sys.getsizeof([t] * 5000) + 1024


def test_shared_object_under_sampled_items_is_not_scaled_up() -> None:
    # GIVEN 5,000 items each holding its own array and one shared config
    cfg = {"table": np.zeros(100_000)}  # 800 KB, shared by all
    items = [{"x": np.zeros(100), "cfg": cfg} for _ in range(5000)]
    est = deepsize.deep_size(items)
    own = 5000 * (100 * 8 + sys.getsizeof({"x": 0, "cfg": 0}))
    expected = own + cfg["table"].nbytes + sys.getsizeof(items)
    # THEN within a few percent: the shared 800 KB is not multiplied by the 20x scale-up
    assert abs(est.bytes - expected) < 0.05 * expected, (est, expected)


def test_array_views_count_their_base_once() -> None:
    base = np.zeros((100, 1000))
    est = deepsize.deep_size([base[i] for i in range(100)] + [base])
    assert base.nbytes <= est.bytes < base.nbytes * 1.1


def test_small_objects_are_exact() -> None:
    obj = {"a": [1.5, 2.5], "b": "text"}
    est = deepsize.deep_size(obj)
    assert est.exact
    expected = (
        sys.getsizeof(obj)
        + sum(sys.getsizeof(k) for k in obj)
        + sys.getsizeof(obj["a"])
        + 2 * sys.getsizeof(1.5)
        + sys.getsizeof("text")
    )
    assert est.bytes == expected


def test_a_million_items_is_fast_and_close() -> None:
    # GIVEN a list of 10^6 floats (32 MB of objects)
    lst = [float(i) for i in range(10**6)]
    exact = sys.getsizeof(lst) + sum(sys.getsizeof(x) for x in lst[:10]) * 10**5
    t0 = time.perf_counter()
    est = deepsize.deep_size(lst)
    took = time.perf_counter() - t0
    # THEN sampled (256 items) within 1 %, in milliseconds, not the second an exact walk takes
    assert not est.exact
    assert abs(est.bytes - exact) < 0.01 * exact
    assert took < 0.1, took


def test_growing_list_estimate_follows_its_length() -> None:
    # the stride is a power of two: appending keeps the same items sampled, so the estimate
    # of a list of alike items grows by exactly what was appended
    lst = [bytes(100) for _ in range(3000)]
    before = deepsize.deep_size(lst).bytes
    lst.extend(bytes(100) for _ in range(10))
    after = deepsize.deep_size(lst).bytes
    per_item = sys.getsizeof(bytes(100)) + 8
    assert abs((after - before) - 10 * per_item) <= 10 * 8 + 64


def test_user_code_never_runs() -> None:
    calls = []

    class Sneaky(list):  # type: ignore[type-arg]
        def __len__(self) -> int:
            calls.append("len")
            return 0

        def __iter__(self):  # type: ignore[no-untyped-def]
            calls.append("iter")
            return iter([])

        def __sizeof__(self) -> int:
            calls.append("sizeof")
            return 0

    s = Sneaky([bytes(1000)] * 3)
    est = deepsize.deep_size({"s": s})
    assert calls == []
    assert est.bytes > 1000


def test_deadline_bounds_a_huge_nested_walk() -> None:
    nested = [[[float(i)] * 50 for i in range(300)] for _ in range(300)]
    est = deepsize.deep_size(nested, deadline_s=0.005)
    assert est.seconds < 0.2
    assert est.bytes > 0


def test_watch_holds_lists_only_until_the_program_drops_them() -> None:
    events = []
    w = watching.Watches(0.03, 0.0, lambda kind, msg: events.append(kind))
    lst = [bytes(10)] * 10
    w.add("buf", lst)
    out: dict[str, Any] = {}
    w.sample(out, time.monotonic())
    assert out["watch:buf:len"] == 10 and out["watch:buf:bytes"] > 0
    del lst
    out = {}
    w.sample(out, time.monotonic())
    assert out == {} and "watch_freed" in events and not w.items


def test_watch_by_weakref_and_python_len_only_on_its_thread() -> None:
    class Ring:
        def __init__(self) -> None:
            self.data: collections.deque[int] = collections.deque(maxlen=3)

        def __len__(self) -> int:
            return len(self.data)

    ring = Ring()
    ring.data.extend([1, 2, 3, 4])
    w = watching.Watches(0.03, 0.0, lambda kind, msg: None)
    w.add("ring", ring)
    assert w.items["ring"].held == "weakref"
    out: dict[str, Any] = {}
    w.sample(out, time.monotonic())
    assert out["watch:ring:len"] == 3
    other: dict[str, Any] = {}
    t = threading.Thread(target=w.sample, args=(other, time.monotonic()))
    t.start()
    t.join()
    assert "watch:ring:len" not in other  # its __len__ is Python: not from another thread


def test_marks_round_trip_and_old_records_load_without_them(tmp_path: Path) -> None:
    from dataclasses import replace

    from memprobe import record as rec

    data = Path(__file__).parent / "data" / "run-v1-synthetic-leaky.json"
    old = rec.load(str(data))
    assert old.marks == []  # written before marks existed
    marked = replace(old, marks=[rec.Mark(t=1.5, pid=None, step=3, label="epoch 1")])
    out = tmp_path / "run.json"
    rec.save(marked, str(out))
    assert rec.load(str(out)).marks == marked.marks


def test_a_large_dict_of_arrays_is_sized_by_its_values_as_well_as_its_keys() -> None:
    from memprobe.bootstrap.memprobe_agent import sizes

    # GIVEN a memo of 1,600 decoded images (12 KiB arrays) keyed by (index, seed) tuples,
    # too many to size one by one
    memo = {(i, 7 * i): np.zeros(12 * 1024, dtype=np.uint8) for i in range(1600)}
    # WHEN a container's items are sized as the census does (a bounded walk, sampled)
    est, exact = sizes.deep_size(memo, 1500)
    # THEN the estimate is the arrays' 18.75 MiB and more, not the keys' few hundred KiB
    # (an even stride over keys and values in turn picked keys only)
    assert not exact
    assert 18.75 * 2**20 <= est <= 1.2 * 18.75 * 2**20


def test_a_container_subclass_is_sized_by_its_items_through_its_base() -> None:
    from unittest import mock

    from memprobe.bootstrap.memprobe_agent import sizes

    class Tally(collections.Counter):  # type: ignore[type-arg]
        def __sizeof__(self) -> int:  # the program's own code: never run
            raise AssertionError("ran the program's __sizeof__")

    # GIVEN a Mock "spy" that recorded 100 calls with a 4 KB array each, and a Counter
    # subclass of text keys
    spy = mock.Mock(wraps=lambda batch: batch)
    for _ in range(100):
        spy(np.zeros(1000, dtype=np.float32))
    tally = Tally({f"token-{i}": i for i in range(100)})
    # THEN its call list holds the arrays its _Call tuples keep (≈ 400 KB), not the 128 B
    # of an empty object; the Counter about what the same dict holds
    held, _ = sizes.deep_size(spy._mock_call_args_list)
    assert 400_000 <= held <= 600_000
    plain, _ = sizes.deep_size(dict(tally))
    assert 0.9 * plain <= sizes.deep_size(tally)[0] <= 1.2 * plain
