"""One table of the corpora, idle beside busy, from two ``bench_corpus.py --out`` files.

    python benchmarks/corpus_table.py IDLE.json BUSY.json > table.md

Per script: the expected verdict, the verdict and the point from which it stayed leak (idle
and busy), whether a correct script was ever called a leak along the way, the holder the
idle run named and what it retains. Then the totals per mode against the targets: every leak
flagged, a recognisable holder for every leak, no correct script called leak, 90 % of
them settled to no_leak.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

Key = Tuple[str, str]


def _load(path: str) -> Dict[Key, Dict[str, Any]]:
    with open(path) as f:
        data = json.load(f)
    return {(r["corpus"], r["script"]): r for r in data["results"]}


def _mib(v: Optional[float]) -> str:
    if v is None:
        return ""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(v) >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.0f} B"


def _verdict(r: Optional[Dict[str, Any]]) -> str:
    if r is None:
        return "-"
    v = str(r.get("verdict") or "-")
    return v if v == r["expect"] else f"{v} ✗"


def _when(r: Optional[Dict[str, Any]]) -> str:
    """When a leak's verdict became leak and stayed; for a correct script, whether any cut
    of the replay said leak."""
    if r is None:
        return "-"
    if r["expect"] == "no_leak":
        return "ever: YES" if r.get("ever_leak") else "ever: no"
    s, step = r.get("detect_s"), r.get("detect_step")
    if s is None:
        return "-"
    return f"step {step:,.0f} / {s:.1f} s" if step is not None else f"{s:.1f} s"


def _holder(r: Optional[Dict[str, Any]]) -> str:
    if r is None or r["expect"] != "leak":
        return ""
    holder = r.get("holder")
    if not holder:
        return "– ✗"
    return f"`{holder}`" + ("" if r.get("holder_ok") else " ✗")


def rows(idle: Dict[Key, Dict[str, Any]], busy: Dict[Key, Dict[str, Any]]) -> List[List[str]]:
    out = []
    for key in sorted(set(idle) | set(busy)):
        i, b = idle.get(key), busy.get(key)
        first = i or b
        assert first is not None
        out.append(
            [
                key[0],
                key[1],
                first["expect"],
                _verdict(i),
                _when(i),
                _verdict(b),
                _when(b),
                _holder(i),
                _mib(i.get("retained_bytes")) if i and i["expect"] == "leak" else "",
            ]
        )
    return out


def totals(results: Dict[Key, Dict[str, Any]]) -> Dict[str, Tuple[int, int]]:
    leaks = [r for r in results.values() if r["expect"] == "leak"]
    oks = [r for r in results.values() if r["expect"] == "no_leak"]
    return {
        "leaks flagged (every one)": (sum(r["verdict"] == "leak" for r in leaks), len(leaks)),
        "holder a person recognises (every one)": (
            sum(bool(r.get("holder_ok")) for r in leaks),
            len(leaks),
        ),
        "correct scripts called leak at the end (none)": (
            sum(r["verdict"] == "leak" for r in oks),
            len(oks),
        ),
        "correct scripts called leak at some cut of the replay": (
            sum(bool(r.get("ever_leak")) for r in oks),
            len(oks),
        ),
        # the live table's header, replayed at its pace through its hold: only rows that
        # carry that replay (results since stop 43) count
        "correct scripts shown as leak in the live table along the way (of those replayed)": (
            sum(bool(r.get("ever_shown")) for r in oks),
            sum("ever_shown" in r for r in oks),
        ),
        "correct scripts settled to no_leak (90 %)": (
            sum(r["verdict"] == "no_leak" for r in oks),
            len(oks),
        ),
    }


def render(idle: Dict[Key, Dict[str, Any]], busy: Dict[Key, Dict[str, Any]]) -> str:
    head = ["corpus", "script", "expect", "idle: verdict", "idle: leak from"]
    head += ["busy: verdict", "busy: leak from", "holder named (idle)", "retained (idle)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows(idle, busy):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    ti, tb = totals(idle), totals(busy)
    lines += ["", "| | idle | busy |", "|---|---|---|"]
    for name in ti:
        a, n = ti[name]
        c, m = tb.get(name, (0, 0))
        share = f" ({100 * a / n:.0f} %)" if "settled" in name and n else ""
        share_b = f" ({100 * c / m:.0f} %)" if "settled" in name and m else ""
        lines.append(f"| {name} | {a}/{n}{share} | {c}/{m}{share_b} |")
    return "\n".join(lines)


def _short(r: Optional[Dict[str, Any]]) -> str:
    """One cell per mode: "leak 5.6 s" (when it became leak and stayed), "no_leak",
    "inconclusive ✗"; a correct script that some cut called leak gets "(ever)", "(shown)" when
    the live table's header showed it too."""
    if r is None:
        return "-"
    cell = _verdict(r).replace("inconclusive", "incon.")
    if r["expect"] == "leak" and r.get("verdict") == "leak" and r.get("detect_s") is not None:
        cell += f" {r['detect_s']:.1f} s"
    if r["expect"] == "no_leak" and r.get("ever_shown"):
        cell += " (shown)"
    elif r["expect"] == "no_leak" and r.get("ever_leak"):
        cell += " (ever)"
    return cell


def render_compact(idle: Dict[Key, Dict[str, Any]], busy: Dict[Key, Dict[str, Any]]) -> str:
    """The same table in half the width: the script's name tells what it expects, holders
    lose their script's file name, and each mode is one cell."""
    lines = [
        "| corpus | script | idle | busy | holder (idle) | retained |",
        "|---|---|---|---|---|---|",
    ]
    for key in sorted(set(idle) | set(busy)):
        i, b = idle.get(key), busy.get(key)
        holder = _holder(i).replace(f"`{key[1]}:", "`")
        kept = _mib(i.get("retained_bytes")) if i and i["expect"] == "leak" else ""
        row = [key[0], key[1].removesuffix(".py"), _short(i), _short(b), holder, kept]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines + [""] + render(idle, busy).split("\n")[-7:])


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("idle", help="bench_corpus.py --out of the idle pass")
    ap.add_argument("busy", help="bench_corpus.py --out of the busy pass")
    ap.add_argument("--compact", action="store_true", help="one cell per mode, for notes")
    args = ap.parse_args(argv)
    try:
        idle, busy = _load(args.idle), _load(args.busy)
    except (OSError, ValueError, KeyError) as e:
        print(f"corpus_table: cannot read the results: {e}", file=sys.stderr)
        return 2
    print(render_compact(idle, busy) if args.compact else render(idle, busy))
    return 0


if __name__ == "__main__":
    sys.exit(main())
