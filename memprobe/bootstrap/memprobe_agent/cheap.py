"""Cheap signals: microseconds to tens of microseconds each, taken every sample."""

from __future__ import annotations

import gc
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from . import wire

FileId = Tuple[int, int]  # (device, inode)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class RssReader:
    """Current RSS from /proc/self/statm (one pread), falling back to psutil-free getrusage."""

    def __init__(self) -> None:
        self._fd: Optional[int] = None
        self._id: Optional[FileId] = None
        self._open()

    def _open(self) -> None:
        try:
            self._fd = os.open(f"/proc/{os.getpid()}/statm", os.O_RDONLY)
            self._id = file_id(self._fd)
        except OSError:
            self._fd = None

    def read(self) -> Optional[int]:
        if self._fd is not None and file_id(self._fd) != self._id:
            self._open()  # the target closed our descriptor (os.closerange): the number is its
        if self._fd is not None:
            raw = os.pread(self._fd, 128, 0)
            return int(raw.split()[1]) * _PAGE
        try:
            import resource

            # peak, not current; better than nothing on platforms without /proc
            scale = 1 if sys.platform == "darwin" else 1024
            return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * scale
        except Exception:
            return None

    def close(self) -> None:
        if self._fd is not None and file_id(self._fd) == self._id:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None


# the devices whose allocator has reserved memory at some sample: a rank of an 8-GPU job
# uses one, and seven series of zeros per figure would only bury it
_CUDA_USED: Set[int] = set()


def cuda_signals(out: Dict[str, Any]) -> None:
    """Per-device allocator figures, only if the target already initialised CUDA itself,
    and only for the devices it has put memory on (from then on at every sample).

    One read of the allocator's nested statistics per device: ``memory_allocated`` and
    its kin each build and flatten the whole statistics dict, five times per sample."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_initialized():
        return
    nested = getattr(cuda, "memory_stats_as_nested_dict", None)
    for i in range(cuda.device_count()):
        prefix = f"cuda:{i}/"
        stats: Dict[str, Any] = nested(i) if nested is not None else {}
        allocated = _stat(stats, "allocated_bytes", "current")
        reserved = _stat(stats, "reserved_bytes", "current")
        if allocated is None or reserved is None:  # an older or other torch: the public calls
            allocated, reserved = cuda.memory_allocated(i), cuda.memory_reserved(i)
            stats = {"allocated_bytes": {"all": {"peak": cuda.max_memory_allocated(i)}}}
        if i not in _CUDA_USED:
            if not reserved:
                continue
            _CUDA_USED.add(i)
        out[prefix + "allocated_bytes"] = allocated
        out[prefix + "reserved_bytes"] = reserved
        # cached by the allocator but not in use: caching and fragmentation, not a leak
        out[prefix + "cached_free_bytes"] = reserved - allocated
        peak = _stat(stats, "allocated_bytes", "peak")
        if peak is not None:
            out[prefix + "max_allocated_bytes"] = peak
        inactive = _stat(stats, "inactive_split_bytes", "current")
        if inactive is not None:
            out[prefix + "inactive_split_bytes"] = inactive


def _stat(stats: Dict[str, Any], name: str, which: str) -> Optional[int]:
    """``stats[name]["all"][which]`` of the allocator's nested statistics, if there."""
    value = stats.get(name, {}).get("all", {}).get(which)
    return int(value) if isinstance(value, int) else None


def python_blocks(out: Dict[str, Any]) -> None:
    out[wire.PY_BLOCKS] = sys.getallocatedblocks()
    frozen = frozen_count()
    if frozen:  # a series only in programs that call gc.freeze()
        out[wire.GC_FROZEN] = frozen


def atexit_count() -> int:
    """Callbacks ``atexit.register`` keeps until the interpreter exits (C code only)."""
    mod = sys.modules.get("atexit")
    count = mod.__dict__.get("_ncallbacks") if mod is not None else None
    try:
        return int(count()) if count is not None else 0
    except Exception:  # noqa: BLE001
        return 0


_FREEZE_COUNT = getattr(gc, "get_freeze_count", None)  # Python 3.7+


def frozen_count() -> int:
    """Objects in the collector's permanent generation (``gc.freeze()``): the collector
    never looks at them again, nor does ``gc.get_objects()``."""
    return int(_FREEZE_COUNT()) if _FREEZE_COUNT is not None else 0


def open_figures(out: Dict[str, Any]) -> None:
    """Figures pyplot's manager holds open (``Gcf.figs``, one dict's length), once pyplot is
    imported. ``figures:count`` counts every live ``Figure``, closed ones too: a figure
    closed with ``plt.close(fig)`` lives in reference cycles until the collector's next
    full pass, so that count climbs for hundreds of steps in a correct loop, while this one
    stays at the figures the program has not closed."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    figs = getattr(getattr(helpers, "Gcf", None), "figs", None)
    if isinstance(figs, dict):
        out[wire.FIGURES_OPEN] = len(figs)


def file_id(fd: int) -> Optional[FileId]:
    """(device, inode) of an open descriptor: tells our file from a reused number."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


class LiveCounts:
    """Live instances of heap types at every cheap sample, from ``sys.getrefcount(cls)``.

    An instance of a heap type (``torch.Tensor``, every ``nn.Module`` subclass,
    matplotlib's ``Figure``, the user's own classes) holds a reference to its type, so
    the type's reference count rises by one per live instance (≈ 0.05 µs a read).
    Each census counts the instances exactly and sets, per type, the offset between
    that count and the reference count (the type's other references: its module, its
    subclasses' MROs); between censuses the same signals (``tensors:count``,
    ``modules:count``, ``figures:count``, ``objects:<type>``) come from the reference
    counts: dense series for the price of a dict lookup. A group whose estimate goes
    negative (a reference that was not an instance went away) is dropped until the
    next census calibrates it again.
    """

    def __init__(self) -> None:
        self.groups: Dict[str, List[Tuple[Callable[[], Any], int]]] = {}

    def calibrate(self, live: Dict[str, List[Tuple[Callable[[], Any], int]]]) -> None:
        groups: Dict[str, List[Tuple[Callable[[], Any], int]]] = {}
        for signal, pairs in live.items():
            entries = []
            for ref, count in pairs:
                cls = ref()
                if cls is not None:
                    entries.append((ref, sys.getrefcount(cls) - count))
                cls = None
            groups[signal] = entries
        self.groups = groups

    def read(self, out: Dict[str, Any]) -> None:
        for signal, entries in list(self.groups.items()):
            total = 0
            for ref, offset in entries:
                cls = ref()
                if cls is not None:
                    total += sys.getrefcount(cls) - offset
                cls = None
            if total < 0:
                del self.groups[signal]
                continue
            out[signal] = total
