"""Memory limits and OOM-kill evidence: cgroup v2 / v1, else the machine."""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

_UNLIMITED = 1 << 60  # cgroup v1 writes ~2^63 for "no limit"


def _cgroup_dirs(pid: Optional[int] = None) -> List[Tuple[str, str]]:
    """(version, directory) candidates for a process' memory cgroup (default: this one's),
    most specific first."""
    out: List[Tuple[str, str]] = []
    try:
        with open(f"/proc/{pid or 'self'}/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            out += [("v2", "/sys/fs/cgroup" + path.rstrip("/")), ("v2", "/sys/fs/cgroup")]
        elif "memory" in controllers.split(","):
            base = "/sys/fs/cgroup/memory"
            out += [("v1", base + path.rstrip("/")), ("v1", base)]
    return [(v, d) for v, d in out if os.path.isdir(d)]


# The kernel's OOM killer ends the process with the most memory, weighed by its
# oom_score_adj. memprobe's parent (numpy, scipy and the run's series: 100-200 MiB) shares
# whatever memory cgroup the user runs it in with its target, and when the target fills a
# small one the parent must not be the one killed: the run's record would be lost with it
# (seen once in a full-suite run of a 400 MiB cgroup). So once the target runs (a child takes
# its parent's setting at fork, so not before), the parent lowers its own by this much, where
# it may: lowering needs CAP_SYS_RESOURCE; without it nothing changes.
PARENT_OOM_ADJ = -250


def shield_from_oom() -> None:
    """Make this process a less likely OOM victim than the target it has started."""
    path = "/proc/self/oom_score_adj"
    now = _read(path)
    try:
        current = int((now or "").strip())
    except ValueError:
        return
    try:
        with open(path, "w") as f:
            f.write(str(max(-1000, current + PARENT_OOM_ADJ)))
    except OSError:
        pass


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def cgroup_limit() -> Optional[int]:
    for version, d in _cgroup_dirs():
        raw = _read(os.path.join(d, "memory.max" if version == "v2" else "memory.limit_in_bytes"))
        if raw is None:
            continue
        raw = raw.strip()
        if raw.isdigit() and int(raw) < _UNLIMITED:
            return int(raw)
    return None


def ram_limit() -> Tuple[Optional[int], str]:
    """The RAM a run can use: the cgroup limit if set, else the machine's total."""
    limit = cgroup_limit()
    if limit is not None:
        return limit, "cgroup"
    try:
        import psutil

        return int(psutil.virtual_memory().total), "machine"
    except Exception:  # noqa: BLE001
        return None, "unknown"


def oom_kill_count() -> Optional[int]:
    """The cgroup's oom_kill counter, or None where it cannot be read."""
    for version, d in _cgroup_dirs():
        raw = _read(os.path.join(d, "memory.events" if version == "v2" else "memory.oom_control"))
        if raw is None:
            continue
        for line in raw.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return None


def _oom_counter(pid: Optional[int] = None) -> Optional[Tuple[str, int]]:
    """(counter file, oom_kill count) of a process' memory cgroup, where readable."""
    for version, d in _cgroup_dirs(pid):
        path = os.path.join(d, "memory.events" if version == "v2" else "memory.oom_control")
        count = _oom_count_in(path)
        if count is not None:
            return path, count
    return None


def _oom_count_in(path: str) -> Optional[int]:
    for line in (_read(path) or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


class OomWatch:
    """Did the OOM killer act during the run? The oom_kill counters of memprobe's own memory
    cgroup and of every one the target was seen in: a target may run in a cgroup of its own
    (``systemd-run --scope``, a job wrapper that moves itself), whose counter memprobe's
    cgroup never shows."""

    def __init__(self) -> None:
        self._base: Dict[str, int] = {}  # counter file -> count when first seen
        self.see(None)

    def see(self, pid: Optional[int]) -> None:
        """Note the cgroup of ``pid`` (None: memprobe itself); cheap, call it every sample."""
        found = _oom_counter(pid)
        if found is not None and found[0] not in self._base:
            self._base[found[0]] = found[1]

    def rose(self) -> Optional[bool]:
        """True if any counter rose, False if none did, None if none was readable."""
        if not self._base:
            return None
        return any((_oom_count_in(path) or 0) > n for path, n in self._base.items())
