"""Holders kept in C, outside every object a census can walk: ``atexit``'s callbacks.

``atexit.register(self.flush)`` once per job keeps every job until the program exits; the
bound methods sit in the interpreter's own table, so a job's only referrer a census could
find is a method object no Python object refers to. The agent counts the table
(``atexit._ncallbacks()``, census ``gc.atexit``); a culprit with no holder whose censuses
saw that count grow is named by it.
"""

from __future__ import annotations

from typing import Optional

from memprobe.analysis.census import Profile
from memprobe.analysis.culprit_make import Culprit, held_by, make_culprit
from memprobe.analysis.hints import HINT_ATEXIT
from memprobe.analysis.wording import fmt_count

ATEXIT_HOLDER = "atexit's callbacks (atexit.register)"
MIN_CALLBACKS = 8  # gained over the censuses: libraries register a few at import


def with_atexit(c: Optional[Culprit], prof: Profile) -> Optional[Culprit]:
    """``c`` with atexit's callbacks as its holder, when it has none and they grew; the
    callbacks alone when nothing else was blamed."""
    if c is not None and c.holder is not None:
        return c
    grown = prof.count_grown("atexit:callbacks", MIN_CALLBACKS)
    if grown is None:
        return c
    rate, now = grown
    said = (
        f"`atexit` keeps {fmt_count(rate)} more callbacks per {prof.per} ({now:,.0f} now), "
        "each with the object it was registered for, until the program exits."
    )
    if c is None:
        return make_culprit(
            prof, "atexit callback", ATEXIT_HOLDER, False, "atexit", HINT_ATEXIT, said, {}, None
        )
    return held_by(c, ATEXIT_HOLDER, said, HINT_ATEXIT, {"atexit_callbacks": round(now)})
