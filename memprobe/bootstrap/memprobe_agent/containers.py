"""Growing containers: lists, dicts, sets, deques whose length grows between censuses.

The tracker keeps only ``id -> len`` between censuses (ints: no reference to
the target's objects survives a census). A container that grew is named once
through ``holders.find_holder`` and then watched: its length is reported every
census as ``container:<holder>:len`` and, when its holder path starts at a
module global, between censuses too (``poll``), cheaply, by following the path.
"""

from __future__ import annotations

import collections
import gc
import itertools
import sys
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from . import arrays, frames, graphs, holders, lrucache, referents, roots, sizes, slots, wire
from .census import qualified
from .containertypes import DICT_TYPES, container_base, elem_types
from .typeinfo import ident

MAX_WATCH = 8
NEW_PER_CENSUS = 3
CANDIDATES_PER_SLOT = 3  # nameless candidates given a referrer search, per free slot
MAX_CANDIDATES = 256  # grown containers looked for in one walk from the user's roots
REFERRER_S = 0.05  # the referrer search's share of a census, at most
MIN_NEW = 4  # items a container new since the last census needs to be a candidate
STALE_CENSUSES = 4  # a watched container that stopped growing this long gives its slot up
SCALARS = wire.SCALAR_TYPES
TENSOR_NAMES = frozenset(["torch.Tensor", "torch.nn.parameter.Parameter"])
MAX_COUNT = 20_000  # new items looked at per poll or census, at most
# a keeper (referents.py) is read again no sooner than this many times what its last
# read took (a list of all it keeps: ~1 ms for 100k objects), ~0.5 % of a core at most
KEEPER_POLL_SHARE = 200.0
MEASURE_VISITS = 1500  # objects looked at to size one container's items, per census


def tensor_types() -> Set[type]:
    torch = sys.modules.get("torch")
    if torch is None:
        return set()
    param = sys.modules.get("torch.nn.parameter")
    types = {torch.__dict__.get("Tensor"), param.__dict__.get("Parameter") if param else None}
    return {t for t in types if isinstance(t, type)}


class Watch:
    __slots__ = (
        "holder",
        "keeper",
        "next_poll",
        "chain",
        "path",
        "anchor",
        "type",
        "len",
        "prev_len",
        "first_len",
        "first_step",
        "elem_types",
        "key_types",
        "complete",
        "stale",
        "misses",
        "graphs",
        "counted",
        "bytes",
        "bytes_exact",
        "maxlen",
        "lru_read",
        "owners",
    )

    def __init__(
        self, found: Dict[str, Any], type_name: str, length: int, prev: int, step: Optional[int]
    ) -> None:
        self.holder: str = found["holder"]
        self.chain: List[str] = found["chain"]
        self.path: Optional[List[List[Any]]] = found["path"]
        # (weakref to an object on the path, steps from it): a frame-rooted path followed later
        self.anchor: Optional[Tuple[Any, List[List[Any]]]] = found.get("anchor")
        self.complete: bool = found["complete"]
        self.owners: List[str] = found.get("owners") or []  # Class.attr on the way (roots.py)
        self.type = type_name
        self.keeper = False  # a keeper of references, no container (referents.py)
        self.next_poll = 0.0  # a keeper's: its count takes a list of all it keeps
        self.len = length
        self.prev_len = prev
        self.first_len = prev
        self.first_step = step
        self.elem_types: List[str] = []
        self.key_types: List[str] = []  # a dict's last keys' types (containertypes.elem_types)
        self.stale = 0
        self.misses = 0
        self.graphs: Optional[int] = None  # items that hold an autograd graph (tensor items)
        self.counted = 0  # items counted so far (a list or deque only grows at its end)
        self.bytes: Optional[int] = None  # what its items hold (sizes.deep_size), per census
        # a deque's bound (collections.deque(maxlen=N)) or an lru_cache's (maxsize=N)
        self.maxlen: Optional[int] = None
        self.lru_read = False  # a dict's lru_cache wrapper and maxsize looked for once
        self.bytes_exact = False

    def count_graphs(self, obj: Any) -> None:
        """How many items are tensors holding a ``grad_fn``: new items only, while it grows."""
        if not any(t in TENSOR_NAMES for t in self.elem_types):
            return
        ttypes = tensor_types()
        n = len(obj)
        # lists, deques and dicts (insertion-ordered) grow at their end: count new items only
        base = container_base(type(obj))
        ordered = base in (list, collections.deque) or base in DICT_TYPES
        if self.graphs is None or n < self.counted or not ordered:
            self.graphs, self.counted = 0, 0
        if n - self.counted > MAX_COUNT:
            self.graphs = None
            return
        try:
            if base is list:
                items = obj[self.counted : n]  # islice would step over every older item
            else:
                values = obj.values() if base in DICT_TYPES else obj
                items = list(itertools.islice(values, self.counted, n))
        except Exception:  # noqa: BLE001 - changed under us by another thread
            return
        for item in items:
            try:
                held = type(item) in ttypes and graphs.holds_graph(item)
            except Exception:  # noqa: BLE001 - an exotic tensor subclass: not counted
                held = False
            if held:
                self.graphs = (self.graphs or 0) + 1
        self.counted = n

    def followable(self) -> bool:
        return self.path is not None or self.anchor is not None

    def find(self, frames_by_key: Optional[Dict[Any, Any]] = None) -> Any:
        """The container again, from the object its anchor names or by its module or
        frame path (no heap scan); None when it is gone. Nothing is kept: a container
        the program dropped is found no more, and freed."""
        return self._reach(0, frames_by_key)

    def lru_wrapper(self) -> Any:
        """The ``functools.lru_cache`` wrapper whose cache this is: its path less the last
        step (None when it is no lru_cache's cache, or that no longer leads anywhere)."""
        steps = self.path if self.path is not None else (self.anchor or (None, []))[1]
        if not steps or steps[-1][0] != "lrucache":
            return None
        return self._reach(1)

    def _reach(self, up: int, frames_by_key: Optional[Dict[Any, Any]] = None) -> Any:
        """What lies ``up`` steps above the container's end on its anchor, else its path."""
        if self.anchor is not None:
            ref, steps = self.anchor
            owner = ref()
            found = None
            if owner is not None and len(steps) >= up:
                found = holders.follow(owner, steps[: len(steps) - up])
            if found is not None or self.path is None:
                return found
        if self.path is not None and len(self.path) > up:
            return holders.resolve(self.path[: len(self.path) - up], frames_by_key)
        return None

    def frame_rooted(self) -> bool:
        return self.path is not None and self.path[0][0] == "frame"

    def measure(self, obj: Any) -> None:
        """Bytes its items hold now (bounded: see sizes.py), and a deque's or an
        lru_cache's bound."""
        base = container_base(type(obj))
        if base is collections.deque:
            self.maxlen = obj.maxlen  # a C getter
        elif not self.lru_read and base is dict:
            self.lru_read = True
            wrapper = self.lru_wrapper()  # the cache itself, not one of its results
            if wrapper is not None and lrucache.lru_cache_dict(wrapper) is obj:
                self.maxlen = lrucache.lru_maxsize(wrapper)
        if self.scalar:
            return
        try:
            if referents.is_keeper_type(type(obj)):
                obj = gc.get_referents(obj)  # what it keeps, not its own few fields
            self.bytes, self.bytes_exact = sizes.deep_size(obj, MEASURE_VISITS)
        except Exception:  # noqa: BLE001 - changed under us
            self.bytes = None

    @property
    def scalar(self) -> bool:
        """Holds plain numbers (``losses.append(loss.item())``, a dict from step to number):
        a few bytes a step, by design no signal of its own. A dict with numbers for values
        but text or tuples for keys is not (see ``containertypes.elem_types``)."""
        return bool(self.elem_types) and all(t in SCALARS for t in self.elem_types + self.key_types)

    def entry(self) -> Dict[str, Any]:
        return {
            "maxlen": self.maxlen,
            "holder": self.holder,
            "type": self.type,
            "len": self.len,
            "scalar": self.scalar,
            "grew": self.len - self.prev_len,
            "first_len": self.first_len,
            "first_step": self.first_step,
            "elem_types": self.elem_types,
            "key_types": self.key_types,
            "chain": self.chain,
            "complete": self.complete,
            "bytes": self.bytes,
            "bytes_exact": self.bytes_exact,
            "rooted": self.path[0][0] if self.path else ("anchor" if self.anchor else None),
            "owners": self.owners,
        }


class ContainerTracker:
    def __init__(self) -> None:
        self.prev: Dict[int, int] = {}
        self.watched: Dict[int, Watch] = {}
        # id -> length when it was set aside (nameless, the agent's, a registry). An id is
        # an address: once that container is freed, the next list made may get it (CPython
        # reuses list objects at once), so an entry lasts only while a container of that id
        # is in every census, no shorter than it was and not yet twice as long: an eval
        # loop's ``all_logits`` got the id of a start-up list set aside and was never seen
        self.ignored: Dict[int, int] = {}

        self.arrays = arrays.GrownArrays()  # arrays a loop grows, by holder
        # holder -> length of the new containers named at the last census and not watched:
        # a variable bound to a longer copy at every step (``self.samples =
        # self.samples[-k:]`` with k = 0, ``hist = hist + [x]``) is a new object at every
        # census, yet the same list to the code that grows it
        self.rebound: Dict[str, int] = {}

    def own_ids(self) -> Set[int]:
        return {
            ident(self.prev),
            ident(self.watched),
            ident(self.ignored),
            ident(self.arrays.sizes),
            ident(self.rebound),
        }

    def update(
        self,
        containers: Dict[int, Any],
        lengths: Dict[int, int],
        step: Optional[int],
        deadline: float,
        exclude: Set[int],
        before: Optional[Dict[int, int]] = None,
        importing: bool = True,
    ) -> Tuple[Dict[str, float], List[Dict[str, Any]]]:
        """Fold one census' containers in. Empties ``containers`` (drops every reference to the
        target's objects) before it looks for holders. ``before``: lengths at the last census
        of candidates the tracker did not see then (an array rebuilt longer every step).
        ``importing``: the program imported modules lately (threadsafe.ImportWatch)."""
        exclude = exclude | self.own_ids() | {ident(containers)}
        # a module's globals grow while the target imports: not leaks; sys.modules neither,
        # unless it grows while no import goes on (a module made per trial and registered)
        namespaces = set(holders.module_dicts())
        if importing:
            namespaces.add(ident(sys.modules))
        for cid, w in list(self.watched.items()):
            obj = containers.get(cid)
            if obj is None:
                obj = w.find()
            if obj is None or qualified(obj) != w.type:
                w.misses += 1
                if w.misses >= 2:
                    del self.watched[cid]
                continue
            w.misses = 0
            w.prev_len, w.len = w.len, arrays.length(obj)
            w.elem_types = arrays.item_types(obj) or w.elem_types
            w.key_types = elem_types(obj, keys=True)
            w.count_graphs(obj)
            w.measure(obj)
            w.stale = 0 if w.len > w.prev_len else w.stale + 1
            if w.stale >= STALE_CENSUSES and len(self.watched) >= MAX_WATCH:
                del self.watched[cid]
        obj = None
        self.ignored = {
            cid: n for cid, n in self.ignored.items() if n <= lengths.get(cid, -1) < 2 * n + MIN_NEW
        }
        prev = self.prev
        # grown since the last census; or new since then with a few items already (a dict
        # that held one model at the last census is not in ``prev``: under min_len)
        first = not prev
        # one that was there at the last census and got longer before any new one: a new
        # framework object brings dozens of fresh dicts (a model's, an optimizer's, a state
        # dict's), and a list that gains one of them per fold must not be cut off behind them
        grown = sorted(
            (
                (cid in prev, n - prev.get(cid, 0), cid)
                for cid, n in lengths.items()
                if (n > prev[cid] if cid in prev else (not first and n >= MIN_NEW))
                and cid not in self.watched
                and cid not in self.ignored
                and cid not in exclude
                and cid not in namespaces
            ),
            reverse=True,
        )
        room = max(0, min(NEW_PER_CENSUS, MAX_WATCH - len(self.watched)))
        # more candidates than slots: a library's registry filling up on first use must not
        # take the slot of the user's list (see slots.rank)
        order = [cid for _, _, cid in grown[:MAX_CANDIDATES]] if room else []
        picks = {cid: containers[cid] for cid in order}
        earlier = before or {}
        sizes = {cid: (lengths[cid], prev.get(cid, earlier.get(cid, 0))) for cid in order}
        is_new = {cid for cid in order if cid not in prev}
        self.prev = lengths
        containers.clear()
        objs = [picks.pop(cid) for cid in order]  # only this list holds them while we search
        # one walk down from the user's roots names any number of them; the referrer
        # search (a heap scan a level) only for the largest few it did not reach
        found = roots.search({ident(o) for o in objs}, deadline)
        rest = [i for i, o in enumerate(objs) if ident(o) not in found][
            : room * CANDIDATES_PER_SLOT
        ]
        mine = any(slots.rank(found.get(ident(o)), o, (1, 0), False)[0] == slots.USER for o in objs)
        if rest and not mine and time.perf_counter() < deadline:
            # nothing the user's roots lead to grew: ask the heap who holds the largest few
            # (a heap scan a level, so briefly)
            short = min(deadline, time.perf_counter() + REFERRER_S)
            more = holders.find_holders([objs[i] for i in rest], short, exclude | {ident(objs)})
            for i, r in zip(rest, more):
                found[ident(objs[i])] = r
        self.rebound = slots.rebound(self.rebound, order, objs, found, sizes, is_new)
        ranked = sorted(
            (slots.rank(found.get(ident(obj)), obj, sizes[cid], cid in is_new), k, cid, obj)
            for k, (cid, obj) in enumerate(zip(order, objs))
        )
        # a new object under a path already watched (``optimizer = Adam(...)`` again, a
        # ``best_state`` replaced): the watch follows the path; the slot goes to another
        followed = {w.holder for w in self.watched.values()}
        for rank, _, cid, obj in ranked:
            r = found.get(ident(obj)) or holders.result("?", None, [], False)
            if r["holder"].startswith("memprobe_agent") or rank[0] >= slots.NEVER:
                self.ignored[cid] = sizes[cid][0]
                continue
            if room <= 0 or r["holder"] in followed:
                continue
            followed.add(r["holder"])
            room -= 1
            n, was = sizes[cid]
            w = Watch(r, qualified(obj), n, was, step)
            w.keeper = referents.is_keeper_type(type(obj))
            w.elem_types = arrays.item_types(obj)
            w.key_types = elem_types(obj, keys=True)
            w.count_graphs(obj)
            w.measure(obj)
            self.watched[cid] = w
        objs.clear()
        obj = None
        return self.values(), [w.entry() for w in self.watched.values() if w.misses == 0]

    def values(self) -> Dict[str, float]:
        out: Dict[str, float] = {}
        for w in self.watched.values():
            if w.misses == 0 and not w.scalar and w.maxlen is None:
                out[f"container:{w.holder}:len"] = w.len
                if w.graphs is not None:
                    out[f"graph:held_by:{w.holder}"] = w.graphs
        return out

    def poll(self) -> Dict[str, float]:
        """Lengths of the watched containers between censuses, found again by their path
        wherever it starts (module global, object attribute, function local, closure)."""
        out: Dict[str, float] = {}
        by_key: Optional[Dict[Any, Any]] = None
        for w in self.watched.values():
            if not w.followable() or w.misses or w.scalar or w.maxlen is not None:
                continue  # a bounded deque fills, then stops: no series of its own
            if w.keeper and time.perf_counter() < w.next_poll:
                continue  # counted by a list of all it refers to: spaced by what that costs
            if by_key is None and w.frame_rooted():
                by_key = frames.running_by_key()
            obj = w.find(by_key)
            if obj is not None and qualified(obj) == w.type:
                t0 = time.perf_counter()
                out[f"container:{w.holder}:len"] = arrays.length(obj)
                if w.keeper:
                    w.next_poll = t0 + KEEPER_POLL_SHARE * (time.perf_counter() - t0)
                w.count_graphs(obj)
                if w.graphs is not None:
                    # a heavy-object count of its own: the items hold autograd graphs
                    out[f"graph:held_by:{w.holder}"] = w.graphs
        return out

    def pollable(self) -> bool:
        return any(w.followable() and not w.misses and not w.scalar for w in self.watched.values())
