"""How many bytes an object holds: bounded, sampled, each tensor/array storage counted once.

Used for a growing container's items (what a leak holds now) and for
``memprobe.watch``. Cost is bounded whatever the object's size: a container of
more than ``SAMPLE`` items is measured on ``SAMPLE`` items spread evenly over it
and scaled up, the walk goes ``MAX_DEPTH`` levels down and visits at most
``MAX_VISITS`` objects (then ``exact`` is False). Only ``type()``, C getters and
builtin ``__sizeof__`` are used: a user class' own ``__sizeof__`` never runs.

What is counted: the Python objects (builtin containers, strings, numbers,
instance ``__dict__``s), each tensor's storage extent (by device and base
address, so views and a tensor shared by many items count once) and each NumPy
array's buffer (its base array once), plus what each tensor or array object costs
beside its data: a CPU tensor of four floats takes ~620-720 B of RSS on torch 2.13
(Python object, TensorImpl, StorageImpl; a view ~610 B), an ndarray of four ~180 B
(measured with 10^5 of each), so a list of small tensors weighs what it costs, not
what its numbers take. Not counted, because Python cannot see
it: what an autograd graph saves in C++ (see graphs.py).
"""

from __future__ import annotations

import collections
import sys
from typing import Any, Dict, List, Optional, Set, Tuple, cast

from .containertypes import DICT_TYPES
from .deeptypes import builtin_base, builtin_sizeof, kinds
from .typeinfo import ident, instance_dict, mro

SAMPLE = 32
TENSOR_OBJECT_BYTES = 600  # beside its storage (see above)
ARRAY_OBJECT_BYTES = 112  # beside its buffer: the ndarray object itself
MAX_DEPTH = 5
MAX_VISITS = 4000
_GC_HEADER = 16
_BASICSIZE = type.__dict__["__basicsize__"]
_ATOMS = (int, float, complex, bool, str, bytes, bytearray, type(None))
_SEQS = (list, tuple, collections.deque, set, frozenset)


class _Walk:
    def __init__(self, max_visits: int) -> None:
        self.seen: Set[int] = set()
        self.storages: Dict[Tuple[str, int], int] = {}
        self.arrays: Set[int] = set()
        self.visits = 0
        self.max_visits = max_visits
        self.exact = True
        self.kinds = kinds()

    def size(self, obj: Any, depth: int) -> float:
        key = ident(obj)
        if key in self.seen:
            return 0.0
        self.seen.add(key)
        self.visits += 1
        if self.visits > self.max_visits or depth > MAX_DEPTH:
            self.exact = False
            return 0.0
        cls = type(obj)
        kind = self.kinds.get(cls)
        if kind is None and cls not in _ATOMS and cls not in _SEQS and cls not in DICT_TYPES:
            kind = _kind_by_mro(cls, self.kinds)
        if kind == "tensor":
            return float(TENSOR_OBJECT_BYTES + self._tensor(obj))
        if kind == "ndarray":
            return float(ARRAY_OBJECT_BYTES + self._array(obj))
        if cls in _ATOMS:
            return float(sys.getsizeof(obj))
        if cls in _SEQS:
            try:
                items = list(obj)
            except Exception:  # noqa: BLE001 - changed under us
                return float(sys.getsizeof(obj))
            return sys.getsizeof(obj) + self._items(items, depth)
        if cls in DICT_TYPES:
            try:
                pairs: List[Any] = list(obj.items())
            except Exception:  # noqa: BLE001
                return float(sys.getsizeof(obj))
            # sampled as pairs: an even stride over keys and values laid out in turn would
            # pick keys only (a memo of arrays keyed by tuples read as its keys' bytes)
            return sys.getsizeof(obj) + self._items(pairs, depth, pairs=True)
        builtin: Any = builtin_base(cls)
        if builtin is not None:
            # a builtin container's subclass (a Counter, mock's _CallList of _Call tuples):
            # its items read through the builtin's own methods, never an override
            total = float(builtin_sizeof(obj, cls))
            try:
                if builtin is dict:
                    total += self._items(list(dict.items(obj)), depth, pairs=True)
                else:
                    total += self._items(list(builtin.__iter__(obj)), depth)
            except Exception:  # noqa: BLE001 - changed under us
                self.exact = False
        else:
            try:
                total = float(_BASICSIZE.__get__(cls, type) + _GC_HEADER)
            except Exception:  # noqa: BLE001
                total = float(_GC_HEADER)
        d = instance_dict(obj)
        if d is not None:
            total += sys.getsizeof(d) + self._items(list(d.values()), depth)
        return total

    def _items(self, items: List[Any], depth: int, pairs: bool = False) -> float:
        """What ``items`` hold, from an even sample of ``SAMPLE`` of them where there are
        more, scaled up; ``pairs``: each item a dict's (key, value), both counted."""
        n = len(items)
        picked = items
        if n > SAMPLE:
            self.exact = False
            step = n / SAMPLE
            picked = [items[int(k * step)] for k in range(SAMPLE)]
        if pairs:
            total = sum(self.size(k, depth + 1) + self.size(v, depth + 1) for k, v in picked)
        else:
            total = sum(self.size(i, depth + 1) for i in picked)
        return total * (n / len(picked)) if picked else 0.0

    def _tensor(self, t: Any) -> int:
        added = 0
        for key, nbytes in tensor_extents(t):
            old = self.storages.get(key, 0)
            if nbytes > old:
                self.storages[key] = nbytes
                added += nbytes - old
        return added

    def _array(self, a: Any) -> int:
        root = a
        for _ in range(8):  # a view's bytes are its base array's, counted once
            base = root.base
            if base is None or type(base) is not type(root):
                break
            root = base
        if ident(root) in self.arrays:
            return 0
        self.arrays.add(ident(root))
        try:
            return int(root.nbytes)
        except Exception:  # noqa: BLE001
            return 0


def deep_size(obj: Any, max_visits: int = MAX_VISITS) -> Tuple[int, bool]:
    """(bytes, exact): what ``obj`` holds, estimated from a sample where it is large."""
    walk = _Walk(max_visits)
    with torch_function_off():
        total = walk.size(obj, 0)
    return int(total), walk.exact


class torch_function_off:
    """Tensor subclasses' ``__torch_function__`` off while their getters are read."""

    def __init__(self) -> None:
        torch = sys.modules.get("torch")
        c = torch.__dict__.get("_C") if torch is not None else None
        ctx = getattr(c, "DisableTorchFunctionSubclass", None) if c is not None else None
        self._ctx = ctx() if ctx is not None else None

    def __enter__(self) -> None:
        if self._ctx is not None:
            self._ctx.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(*exc)


def tensor_extent(t: Any) -> Optional[Tuple[Tuple[str, int], int]]:
    """((device, storage base address), bytes this view reaches) from C getters only:
    ``t.untyped_storage()`` would pin a Python object to the storage for good."""
    try:
        if t.is_sparse or t.numel() == 0:
            return None
        size = t.element_size()
        off = t.storage_offset()
        reach = off + 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))
        return (str(t.device), t.data_ptr() - off * size), reach * size
    except Exception:  # noqa: BLE001 - meta, sparse, exotic subclasses
        return None


# a sparse tensor's bytes are in the dense tensors of its indices and values, read through
# these C methods (``_values``: an uncoalesced COO tensor has no ``values()``)
_SPARSE_PARTS = {
    "torch.sparse_coo": ("_indices", "_values"),
    "torch.sparse_csr": ("crow_indices", "col_indices", "values"),
    "torch.sparse_bsr": ("crow_indices", "col_indices", "values"),
    "torch.sparse_csc": ("ccol_indices", "row_indices", "values"),
    "torch.sparse_bsc": ("ccol_indices", "row_indices", "values"),
}


_BY_LAYOUT: Dict[Any, Any] = {}  # torch.layout object -> its _SPARSE_PARTS entry or None
_UNSEEN = object()


def _sparse_parts(t: Any) -> Optional[Tuple[str, ...]]:
    """The ``_SPARSE_PARTS`` entry of the tensor's layout; None for a strided tensor."""
    layout = t.layout
    names = _BY_LAYOUT.get(layout, _UNSEEN)
    if names is _UNSEEN:  # once per layout object: no string made per tensor
        names = _BY_LAYOUT[layout] = _SPARSE_PARTS.get(str(layout))
    return cast(Optional[Tuple[str, ...]], names)


def is_sparse(t: Any) -> bool:
    """A tensor of a sparse layout (COO or compressed), from its layout alone."""
    return _sparse_parts(t) is not None


def sparse_extents(t: Any) -> Optional[List[Tuple[Tuple[str, int], int]]]:
    """None for a strided tensor; for a sparse one the extents (``tensor_extent``) of the
    dense tensors holding its indices and values: what it takes grows with its entries (an
    uncoalesced sum only concatenates them), not with its shape."""
    names = _sparse_parts(t)
    if names is None:
        return None
    out: List[Tuple[Tuple[str, int], int]] = []
    for name in names:
        ext = tensor_extent(getattr(t, name)())
        if ext is not None:
            out.append(ext)
    return out


def tensor_extents(t: Any) -> List[Tuple[Tuple[str, int], int]]:
    """Every storage extent a tensor reaches: a sparse one's indices and values, a strided
    one's own (none for an empty, meta or exotic one)."""
    sparse = sparse_extents(t)
    if sparse is not None:
        return sparse
    ext = tensor_extent(t)
    return [ext] if ext is not None else []


def _kind_by_mro(cls: type, kinds: Dict[type, str]) -> Optional[str]:
    for base in mro(cls):
        kind = kinds.get(base)
        if kind is not None:
            kinds[cls] = kind
            return kind
    return None
