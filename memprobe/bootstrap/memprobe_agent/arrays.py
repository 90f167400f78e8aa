"""NumPy arrays and tensors that a loop grows, watched like containers of their elements.

A loop that grows one (``self.window = np.concatenate([self.window, block])``,
``np.append``, ``self.bank = torch.cat([self.bank, emb])``) makes a new object every
step: no identity can be followed (and an ndarray is no gc object, so no census lists
it). The census finds big arrays and tensors under the user's roots by their holder
(``big_arrays``); one that keeps growing under the same holder (``GrownArrays``) becomes a
candidate of the container tracker, its length its element count (``length``) and its
items' type its dtype (``item_types``). So does an ``itertools.tee`` branch read behind the
others, by its backlog (tees.py): the same object all along, but no container a census
can measure.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from . import referents, tees, wire
from .census import qualified
from .containertypes import elem_types
from .roots import find_matching
from .sizes import is_sparse, sparse_extents
from .typeinfo import loaded_class

BIG_ARRAY = 1 << 20  # an array among the user's roots is looked at from this size
# an array under one holder is watched once it has grown this much since first seen there,
# seen at this many censuses in a row (see GrownArrays.grown)
ARRAY_GROWTH = 1 << 20
ARRAY_RUN = 3
# a tee branch is looked at from two full links behind, and watched once its backlog grew
# by as much, at two censuses in a row: each item may be a whole batch, and a tee held by a
# function's frame for a moment is no temporary of a few censuses
TEE_BACKLOG = TEE_GROWTH = 2 * tees.LINK_ITEMS
TEE_RUN = 2


def big_arrays(
    deadline: float, min_bytes: int = BIG_ARRAY, limit: int = 8
) -> List[Tuple[str, Any]]:
    """(holder, array) for NumPy arrays and plain tensors of ``min_bytes`` or more among the
    user's roots and three levels below them: one that a loop rebuilds longer every step
    (``self.window = np.concatenate([self.window, block])``) is found only by its holder.
    Only ``type()`` and C getters (``base``, ``nbytes``; a tensor's ``_base``, ``nelement``,
    ``element_size``) are asked of what is reached."""
    ndarray, tensor = loaded_class("numpy", "ndarray"), loaded_class("torch", "Tensor")
    if ndarray is None and tensor is None:
        return []

    def big(value: Any) -> bool:
        # owning its buffer: a view of a preallocated ring (``ring[:filled]``) grows while
        # the ring fills, and holds nothing of its own. A tensor of the plain class only
        # (a Parameter is a model's weight)
        cls = type(value)
        if cls is ndarray:
            return value.base is None and int(value.nbytes) >= min_bytes
        if cls is tensor:
            return value._base is None and _tensor_bytes(value) >= min_bytes
        return cls is tees.TEE and tees.backlog(value) >= TEE_BACKLOG

    return find_matching(big, deadline, limit=limit, depth=3)


def _tensor_bytes(t: Any) -> int:
    sparse = sparse_extents(t)  # its entries' bytes, not its shape's
    if sparse is not None:
        return sum(nbytes for _, nbytes in sparse)
    return int(t.nelement()) * int(t.element_size())


def size(obj: Any) -> int:
    """What its growth is measured in: an array's or a tensor's element bytes, a tee
    branch's backlog in items."""
    if type(obj) is tees.TEE:
        return tees.backlog(obj)
    return int(obj.nbytes) if qualified(obj) == wire.NDARRAY else _tensor_bytes(obj)


def length(obj: Any) -> int:
    """A container's length; an array's or a tensor's element count (``size``: a (16, T)
    window grows along T, while ``len`` is 16); what a keeper (referents.py) refers to."""
    name = qualified(obj)
    if name == wire.NDARRAY:
        return int(obj.size)
    if type(obj) is tees.TEE:
        return tees.backlog(obj)
    if name == wire.TENSOR:
        return int(obj._nnz()) if is_sparse(obj) else int(obj.nelement())
    return referents.count(obj) if referents.is_keeper_type(type(obj)) else len(obj)


def item_types(obj: Any) -> List[str]:
    """Its last items' types (containertypes.elem_types); an array's or a tensor's dtype
    (``float32``, ``torch.float32``)."""
    if qualified(obj) in (wire.NDARRAY, wire.TENSOR):
        return [str(obj.dtype)]
    if type(obj) is tees.TEE:
        return tees.item_types(obj)
    if referents.is_keeper_type(type(obj)):
        return referents.item_types(obj)
    return elem_types(obj)


class GrownArrays:
    """Arrays that grew under their holder, from census to census: only (first bytes, last
    bytes, censuses in a row, last length) by holder are kept, no reference to an array."""

    def __init__(self) -> None:
        self.sizes: Dict[str, Tuple[int, int, int, int]] = {}

    def grown(self, found: List[Tuple[str, Any]]) -> List[Tuple[Any, int]]:
        """Of the big arrays ``found`` (holder, array) by ``big_arrays``, those that grew
        under their holder: larger than at the last census, by ``ARRAY_GROWTH`` bytes since
        the holder was first seen, and seen there at ``ARRAY_RUN`` censuses in a row (a
        function's temporaries, present only when a census lands inside it, are not). Each
        with its ``length`` at the last census: where its growth is counted from (a new
        object every step, or one no census listed before: the tracker has no length of
        its own for it, and counting from nothing made a rate too high by as much as it
        had before)."""
        seen: Dict[str, Tuple[int, int, int, int]] = {}
        grown: List[Tuple[Any, int]] = []
        for holder, arr in found:
            now, n = size(arr), length(arr)
            first, last, run, before = self.sizes.get(holder, (now, -1, 0, n))
            seen[holder] = (first, now, run + 1, n)
            tee = type(arr) is tees.TEE
            needed, runs = (TEE_GROWTH, TEE_RUN) if tee else (ARRAY_GROWTH, ARRAY_RUN)
            if run + 1 >= runs and now > last and now - first >= needed:
                grown.append((arr, before))
        self.sizes = seen
        return grown
