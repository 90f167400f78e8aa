"""NumPy arrays that a loop grows, watched like containers of their elements.

An ndarray is no gc object, so no census lists it, and a loop that grows one
(``self.window = np.concatenate([self.window, block])``, ``np.append``) makes a new
object every step: no identity can be followed. The census finds big arrays under the
user's roots by their holder (``big_arrays``); one that keeps growing under the same
holder (``GrownArrays``) becomes a candidate of the container tracker, its length its
element count (``length``) and its items' type its dtype (``item_types``).
"""

from __future__ import annotations

import sys
import types
from typing import Any, Dict, List, Tuple

from . import wire
from .census import elem_types, qualified
from .roots import find_matching

BIG_ARRAY = 1 << 20  # an array among the user's roots is looked at from this size
# an array under one holder is watched once it has grown this much since first seen there,
# seen at this many censuses in a row (see GrownArrays.grown)
ARRAY_GROWTH = 1 << 20
ARRAY_RUN = 3


def big_arrays(
    deadline: float, min_bytes: int = BIG_ARRAY, limit: int = 8
) -> List[Tuple[str, Any]]:
    """(holder, array) for NumPy arrays of ``min_bytes`` or more among the user's roots and
    three levels below them. An ndarray is no gc object, so no census lists it: an array
    that a loop grows (``self.window = np.concatenate([self.window, block])``) is found only
    by its holder. Only ``type()`` and the ``base`` and ``nbytes`` getters are asked of what
    is reached."""
    np = sys.modules.get("numpy")
    ndarray = vars(np).get("ndarray") if isinstance(np, types.ModuleType) else None
    if not isinstance(ndarray, type):
        return []

    def big(value: Any) -> bool:
        # owning its buffer: a view of a preallocated ring (``ring[:filled]``) grows while
        # the ring fills, and holds nothing of its own
        return (
            type(value) is ndarray
            and getattr(value, "base", None) is None
            and int(getattr(value, "nbytes", 0)) >= min_bytes
        )

    return find_matching(big, deadline, limit=limit, depth=3)


def length(obj: Any) -> int:
    """A container's length; an array's element count (``size``: a (16, T) window grows
    along T, while ``len`` is 16)."""
    return int(obj.size) if qualified(obj) == wire.NDARRAY else len(obj)


def item_types(obj: Any) -> List[str]:
    """Its last items' types (census.elem_types); an array's dtype (``float32``)."""
    if qualified(obj) == wire.NDARRAY:
        return [str(obj.dtype)]
    return elem_types(obj)


class GrownArrays:
    """Arrays that grew under their holder, from census to census: only (first bytes, last
    bytes, censuses in a row) by holder are kept, no reference to an array."""

    def __init__(self) -> None:
        self.sizes: Dict[str, Tuple[int, int, int]] = {}

    def grown(self, found: List[Tuple[str, Any]]) -> List[Any]:
        """Of the big arrays ``found`` (holder, array) by ``big_arrays``, those that grew
        under their holder: larger than at the last census, by ``ARRAY_GROWTH`` bytes since
        the holder was first seen, and seen there at ``ARRAY_RUN`` censuses in a row (a
        function's temporaries, present only when a census lands inside it, are not)."""
        seen: Dict[str, Tuple[int, int, int]] = {}
        grown: List[Any] = []
        for holder, arr in found:
            nbytes = int(arr.nbytes)
            first, last, run = self.sizes.get(holder, (nbytes, -1, 0))
            seen[holder] = (first, nbytes, run + 1)
            if run + 1 >= ARRAY_RUN and nbytes > last and nbytes - first >= ARRAY_GROWTH:
                grown.append(arr)
        self.sizes = seen
        return grown
