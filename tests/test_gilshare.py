"""The agent's thread kept from starving for the GIL (gilshare.py): when it sets the
interpreter's switch interval, and when it leaves it alone."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from memprobe.bootstrap.memprobe_agent.gilshare import LATE_S, OF, SHARE_S, TIMES, GilShare


@pytest.fixture(autouse=True)
def _own_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def test_cycles_late_again_and_again_shorten_the_switch_interval() -> None:
    # GIVEN an agent thread whose cycles waited for the GIL, the waits scattered among
    # punctual cycles (a few late, then on time, then late)
    share = GilShare()
    said = [share.woke(w) for w in [LATE_S * 3, 0.0, 0.001, LATE_S * 2] + [0.0] * 2]
    assert said == [None] * 6 and sys.getswitchinterval() == 0.005
    # WHEN one more of its last cycles is late
    text = share.woke(LATE_S * 5)
    # THEN the interval is shortened once, and the run is told why
    assert sys.getswitchinterval() == SHARE_S
    assert text is not None and "switch interval 5 ms -> 1 ms" in text
    sys.setswitchinterval(0.005)
    assert all(share.woke(LATE_S * 9) is None for _ in range(OF))
    assert sys.getswitchinterval() == 0.005


def test_late_cycles_far_apart_change_nothing() -> None:
    # GIVEN a busy machine: now and then a cycle that the OS woke late
    share = GilShare()
    waits = ([LATE_S * 2] + [0.01] * (OF - 1)) * 10
    # THEN the interval stays the interpreter's own
    assert all(share.woke(w) is None for w in waits)
    assert sys.getswitchinterval() == 0.005


def test_an_interval_the_program_chose_is_left_alone() -> None:
    # GIVEN a program that set its own switch interval after the agent started
    share = GilShare()
    sys.setswitchinterval(0.02)
    # WHEN the agent's cycles are late again and again
    said = [share.woke(LATE_S * 4) for _ in range(TIMES + 2)]
    # THEN its choice stands
    assert said == [None] * (TIMES + 2)
    assert sys.getswitchinterval() == 0.02
