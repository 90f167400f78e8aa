"""Outside view of the run's process tree with psutil: every process, Python or not."""

from __future__ import annotations

import time
from typing import Dict, List, Optional, Tuple

import psutil

from memprobe.bootstrap.memprobe_agent import wire

USS_EVERY_S = 1.0  # memory_full_info walks smaps: ms per process, so at most once a second


class TreeSampler:
    """Samples RSS of the launched process and all its descendants; USS/PSS once a second."""

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self._procs: Dict[int, psutil.Process] = {}
        self._last_full: Dict[int, float] = {}
        self.full_info_ok = True
        try:
            self._root: Optional[psutil.Process] = psutil.Process(root_pid)
        except psutil.Error:
            self._root = None

    def sample(self) -> List[Tuple[int, Optional[int], Dict[str, float]]]:
        """[(pid, ppid, values)] for every live process of the tree."""
        if self._root is None:
            return []
        try:
            tree = [self._root] + self._root.children(recursive=True)
        except psutil.Error:
            tree = [self._root]
        out: List[Tuple[int, Optional[int], Dict[str, float]]] = []
        now = time.monotonic()
        for proc in tree:
            cached = self._procs.setdefault(proc.pid, proc)
            try:
                with cached.oneshot():
                    values: Dict[str, float] = {wire.RSS: float(cached.memory_info().rss)}
                    ppid = cached.ppid()
                    if (
                        self.full_info_ok
                        and now - self._last_full.get(proc.pid, 0.0) >= USS_EVERY_S
                    ):
                        self._last_full[proc.pid] = now
                        full = cached.memory_full_info()
                        values["uss_bytes"] = float(full.uss)
                        pss = getattr(full, "pss", None)
                        if pss is not None:
                            values["pss_bytes"] = float(pss)
            except psutil.AccessDenied:
                self.full_info_ok = False
                continue
            except psutil.Error:
                continue
            out.append((proc.pid, ppid, values))
        return out
