"""A process' census payloads in bounded memory: the first ones, an evenly thinned
selection, the latest; what grew between two kept censuses is never lost."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from memprobe.collect.coerce import num

MAX_CENSUS = 128  # full census payloads held per process (~2 KB of JSON each)
CENSUS_HEAD = 8  # the first censuses are always kept: growth is measured from them
MAX_WINDOWS = 64  # tracemalloc windows held per process


class CensusBuf:
    """A process' census payloads in bounded memory: the first ``HEAD``, then an evenly
    thinned selection, always the latest; at most ``cap`` (None: all). Thinning folds the
    ``growing_types`` deltas of a dropped census into the next kept one (what grew between
    two kept censuses is still all there), and keeps the tracemalloc window a dropped census
    carried as an entry of its own (windows are kept up to ``MAX_WINDOWS``)."""

    def __init__(self, cap: Optional[int] = MAX_CENSUS) -> None:
        self.cap = cap
        self.full: List[Dict[str, Any]] = []
        self.windows: List[Dict[str, Any]] = []
        self.seen = 0

    def __len__(self) -> int:
        return len(self.full) + len(self.windows)

    def __bool__(self) -> bool:
        return bool(self.full or self.windows)

    def append(self, entry: Dict[str, Any]) -> None:
        self.seen += 1
        if "types" not in entry:
            self._window(entry)
            return
        self.full.append(entry)
        if self.cap is not None and len(self.full) > self.cap:
            self.full, dropped = thin_census(self.full, max(CENSUS_HEAD + 2, self.cap // 2))
            for w in dropped:
                self._window(w)

    def _window(self, entry: Dict[str, Any]) -> None:
        self.windows.append(entry)
        if self.cap is not None and len(self.windows) > MAX_WINDOWS:
            del self.windows[MAX_WINDOWS // 4]  # the first ones and the latest stay

    def entries(self, max_full: Optional[int] = None) -> List[Dict[str, Any]]:
        """Everything kept, in time order; at most ``max_full`` full censuses."""
        full = self.full
        extra: List[Dict[str, Any]] = []
        if max_full is not None and len(full) > max_full:
            full, extra = thin_census(full, max_full)
        out = full + self.windows + extra
        return sorted(out, key=lambda c: num(c.get("t")))


def thin_census(
    entries: List[Dict[str, Any]], n: int
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """At most ``n`` of ``entries`` (time order): the first ``CENSUS_HEAD``, the last, and
    evenly spaced ones between. Returns (kept, windows of the dropped: ``{t, step,
    tracemalloc}`` entries). The growing types of dropped censuses are added to the next
    kept one's (copied, never changed in place)."""
    if len(entries) <= n:
        return list(entries), []
    head = min(CENSUS_HEAD, max(1, n - 1))
    rest = entries[head:]
    slots = max(1, n - head)
    picks = {round(i * (len(rest) - 1) / max(1, slots - 1)) for i in range(slots)}
    picks.add(len(rest) - 1)
    kept: List[Dict[str, Any]] = list(entries[:head])
    windows: List[Dict[str, Any]] = []
    carry: Dict[str, Dict[str, Any]] = {}
    for i, entry in enumerate(rest):
        if i not in picks:
            for g in entry.get("growing_types") or []:
                if isinstance(g, dict) and isinstance(g.get("type"), str):
                    old = carry.get(g["type"])
                    delta = num(g.get("delta")) + (num(old.get("delta")) if old else 0.0)
                    carry[g["type"]] = {**g, "delta": delta}
            if isinstance(entry.get("tracemalloc"), dict):
                windows.append(
                    {
                        "t": entry.get("t"),
                        "step": entry.get("step"),
                        "tracemalloc": entry["tracemalloc"],
                    }
                )
            continue
        if carry:
            entry = dict(entry)
            merged = {
                g["type"]: dict(g)
                for g in entry.get("growing_types") or []
                if isinstance(g, dict) and isinstance(g.get("type"), str)
            }
            for name, g in carry.items():
                if name in merged:
                    merged[name]["delta"] = num(merged[name].get("delta")) + num(g.get("delta"))
                else:
                    merged[name] = g
            entry["growing_types"] = sorted(merged.values(), key=lambda g: -num(g.get("delta")))
            carry = {}
        kept.append(entry)
    return kept, windows
