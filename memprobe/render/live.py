"""The live view during ``memprobe run``: a Rich table on a terminal, plain lines elsewhere.

``build_table(state)`` is pure (state in, renderable out); the displays only
decide when to draw. Target-provided strings are wrapped in ``Text`` objects,
never interpolated into markup.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Protocol, Tuple

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from memprobe.collect.process import ProcState
from memprobe.collect.state import RunState
from memprobe.render.fmt import fmt_bytes, safe_text, sparkline
from memprobe.render.livegroups import Row, process_rows

# (pid, signal) -> (verdict, rate text); filled by the live judge when analysis is available
Verdicts = Dict[Tuple[int, str], Tuple[str, str]]


@dataclass(frozen=True)
class SignalRow:
    """One judged signal other than RSS, for the table's lower half."""

    label: str
    pid: int
    signal: str
    value: Optional[float]
    unit: str
    rate: str
    verdict: str


class Judge(Protocol):
    def verdicts(self, state: RunState) -> Verdicts: ...
    def signal_rows(self, state: RunState) -> List[SignalRow]: ...
    def header(self, state: RunState) -> Optional[Text]: ...


VERDICT_STYLE = {"leak": "bold red", "no_leak": "green", "inconclusive": "yellow"}
# the launcher calls update() at every poll (0.2 s); the table is rebuilt and drawn at most
# this often (it shows whole seconds)
MIN_UPDATE_S = 1.0
# a progress bar redraws its line with "\r" many times a second: its latest state is shown
# in the live region (not scrolled above it), redrawn at most this often
STATUS_REDRAW_S = 0.2
MAX_ROWS = 16
MAX_SIGNAL_ROWS = 8


def _rss(p: ProcState) -> List[float]:
    return p.rss().value


def build_table(
    state: RunState,
    elapsed: float,
    verdicts: Optional[Verdicts] = None,
    header: Optional[Text] = None,
    signal_rows: Optional[List[SignalRow]] = None,
) -> RenderableType:
    table = process_table(process_rows(state, verdicts, MAX_ROWS))
    title = Text(f"memprobe · {elapsed:,.0f} s · ", style="bold")
    title.append(safe_text(" ".join(state.command), limit=60))
    if state.marks:
        last = state.marks[-1]
        at = f" @ step {last.step:,}" if last.step is not None else f" @ {last.t:,.0f} s"
        title.append(" · mark ", style="dim")
        title.append(safe_text(last.label, limit=40))
        title.append(at, style="dim")
    parts: List[RenderableType] = [title]
    if header is not None:
        parts.append(header)
    parts.append(table)
    if signal_rows:
        parts.append(_signals_table(signal_rows))
    return Group(*parts)


_ROW_STYLE = {"group": "bold", "more": "dim", "total": "bold"}


def process_table(rows: List[Row]) -> Table:
    """The process rows (see memprobe.render.livegroups): one line each, grouped by role."""
    table = Table(box=None, pad_edge=False, header_style="bold", expand=False, padding=(0, 1, 0, 0))
    # fixed widths: numbers never get squeezed into "30…" by a long rate; 118 columns in all
    for col, justify, width in (
        ("process", "left", 24),
        ("pid", "right", 7),
        ("step", "right", 11),
        ("RSS", "right", 6),
        ("Δ RSS", "right", 7),
        ("USS", "right", 6),
        ("Δ USS", "right", 7),
        ("RSS trend", "left", 14),
        ("rate", "right", 15),
        ("verdict", "left", 12),
    ):
        table.add_column(
            col,
            justify=justify,  # type: ignore[arg-type]
            no_wrap=True,
            min_width=width,
            max_width=width if col in ("process", "rate", "verdict") else None,
            overflow="ellipsis",
        )
    for r in rows:
        style = "dim" if r.ended else _ROW_STYLE.get(r.kind, "")
        # labels carry process names from the target (argv, multiprocessing names)
        label = safe_text(("  " if r.indent else "") + r.label, style=style)
        label.truncate(24, overflow="ellipsis")
        step = f"{r.steps:,}" if r.steps else ("–" if r.kind == "process" else "")
        if r.steps and r.steps_per_s is not None:
            step += f" @{r.steps_per_s:,.0f}/s"
        table.add_row(
            label,
            str(r.pid) if r.pid is not None else "",
            step,
            Text(compact_bytes(r.rss), style=style),
            compact_bytes(r.rss_delta, signed=True),
            compact_bytes(r.uss),
            compact_bytes(r.uss_delta, signed=True),
            Text(sparkline(r.trend, width=14), style="dim" if r.ended else "cyan"),
            Text(r.rate),
            Text(
                ("ended " if r.ended and not r.verdict else "") + r.verdict.replace("_", " "),
                style=VERDICT_STYLE.get(r.verdict.split(" ")[0], "dim"),
            ),
        )
    return table


def compact_bytes(n: Optional[float], signed: bool = False) -> str:
    """Three significant digits, binary units: 309M, 42.4M, 1.21G, +980K (a table cell)."""
    if n is None:
        return ""
    sign = ("+" if n > 0 else "-" if n < 0 else "±") if signed else ("-" if n < 0 else "")
    v = abs(float(n))
    for unit in ("B", "K", "M", "G", "T"):
        if v < 1000 or unit == "T":
            digits = 0 if v >= 100 or unit == "B" else 1 if v >= 10 else 2
            return f"{sign}{v:.{digits}f}{unit}"
        v /= 1024
    return f"{sign}{v:.0f}T"


def _signals_table(rows: List[SignalRow]) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold", expand=False)
    for col, justify in (
        ("process", "left"),
        ("signal", "left"),
        ("now", "right"),
        ("rate", "right"),
        ("verdict", "left"),
    ):
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for r in rows[:MAX_SIGNAL_ROWS]:
        if r.value is None:
            now = "–"
        elif r.unit == "bytes":
            now = fmt_bytes(r.value)
        else:
            now = f"{r.value:,.0f}"
        table.add_row(
            safe_text(r.label),
            safe_text(r.signal, limit=48),
            now,
            Text(r.rate),
            Text(r.verdict.replace("_", " "), style=VERDICT_STYLE.get(r.verdict, "")),
        )
    if len(rows) > MAX_SIGNAL_ROWS:
        table.add_row(
            Text(f"… {len(rows) - MAX_SIGNAL_ROWS} more signals", style="dim"), "", "", "", ""
        )
    return table


class LiveDisplay:
    """Rich live region on stderr; the target's output (through ptys) scrolls above it."""

    captures_output = True

    def __init__(self, console: Console, judge: Optional[Judge] = None) -> None:
        self.console = console
        self._judge = judge
        self._t0 = time.monotonic()
        self._live: Optional[Live] = None
        self._lock = threading.Lock()
        self._partial: Dict[str, bytes] = {}
        self._renderable: RenderableType = Text("")
        self._table: RenderableType = Text("")
        # per stream: the unfinished line's latest "\r" segment (a tqdm bar mid-update)
        self._status: Dict[str, Text] = {}
        self._status_drawn = float("-inf")
        self._judge_failed = False
        self._built = float("-inf")

    def start(self, state: RunState) -> None:
        self._live = Live(
            get_renderable=lambda: self._renderable,
            console=self.console,
            # drawn when the table is rebuilt (update, at most 1/s) and when the target prints,
            # not 4 times a second: rendering the table was a third of the parent's CPU
            auto_refresh=False,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def update(self, state: RunState, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._built < MIN_UPDATE_S:
            return
        self._built = now
        verdicts: Optional[Verdicts] = None
        header: Optional[Text] = None
        rows: Optional[List[SignalRow]] = None
        if self._judge is not None and not self._judge_failed:
            try:
                verdicts = self._judge.verdicts(state)
                rows = self._judge.signal_rows(state)
                header = self._judge.header(state)
            except Exception as e:  # noqa: BLE001 - a live-analysis bug must not end the run
                self._judge_failed = True
                header = safe_text(
                    f"live analysis stopped: {type(e).__name__}: {e}", style="yellow"
                )
        self._table = build_table(state, now - self._t0, verdicts, header, rows)
        with self._lock:
            self._compose()
        if self._live is not None and self._live.is_started:
            self._live.refresh()

    def _compose(self) -> None:
        """The live region: the progress bars' current lines above the table."""
        bars = [t for t in self._status.values() if t.plain.strip()]
        self._renderable = Group(*bars, self._table) if bars else self._table

    def output(self, stream: str, data: bytes) -> None:
        with self._lock:
            buf = self._partial.get(stream, b"") + data
            *lines, rest = buf.split(b"\n")
            self._partial[stream] = rest
            had_bar = stream in self._status
            bar = rest.rstrip(b"\r").rsplit(b"\r", 1)[-1] if b"\r" in rest else b""
            if bar.strip():
                self._status[stream] = Text.from_ansi(bar.decode("utf-8", "replace"))
            else:
                self._status.pop(stream, None)
            if not lines:
                now = time.monotonic()
                if stream in self._status and now - self._status_drawn >= STATUS_REDRAW_S:
                    self._status_drawn = now
                    self._compose()
                    if self._live is not None and self._live.is_started:
                        self._live.refresh()
                return
            if had_bar or stream in self._status:
                self._compose()
            # one print for every line of the chunk: each print redraws the live table below
            # it (~10 ms with 16 processes), so a chatty target must not cost that per line
            texts = [
                Text.from_ansi(raw.rstrip(b"\r").rsplit(b"\r", 1)[-1].decode("utf-8", "replace"))
                for raw in lines
            ]
            self.console.print(Text("\n").join(texts), soft_wrap=True, highlight=False)

    def stop(self, state: RunState) -> None:
        with self._lock:
            for rest in self._partial.values():
                if rest:
                    last = rest.rstrip(b"\r").rsplit(b"\r", 1)[-1]
                    self.console.print(
                        Text.from_ansi(last.decode("utf-8", "replace")), soft_wrap=True
                    )
            self._partial.clear()
            self._status.clear()
            self._compose()
        self.update(state, force=True)
        if self._live is not None:
            self._live.stop()


class PlainDisplay:
    """Not a terminal (CI, ``| tee``): the target keeps its own stdout/stderr; a short progress
    line on stderr every ``every_s`` seconds, no escape codes."""

    captures_output = False

    def __init__(self, every_s: float = 10.0, quiet: bool = False) -> None:
        self.every_s = every_s
        self.quiet = quiet
        self._t0 = time.monotonic()
        self._last = time.monotonic()

    def start(self, state: RunState) -> None:
        pass

    def update(self, state: RunState) -> None:
        now = time.monotonic()
        if self.quiet or now - self._last < self.every_s:
            return
        self._last = now
        lead = "" if _ends_a_line(sys.stderr) else "\n"
        sys.stderr.write(lead + progress_line(state, now - self._t0) + "\n")
        sys.stderr.flush()

    def output(self, stream: str, data: bytes) -> None:  # output is not captured
        pass

    def stop(self, state: RunState) -> None:
        pass


def _ends_a_line(stream: object) -> bool:
    """Does what was written to ``stream`` so far end with a newline? The target writes to
    the same stderr (a tqdm bar ends its updates with "\r", not "\n"): a regular file is
    read back one byte; a pipe or a terminal cannot be, so a line is started anyway."""
    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        if st.st_size == 0:
            return True
        try:
            last = os.pread(fd, 1, st.st_size - 1)
        except OSError:  # opened write-only (``2> log``): read the same file anew
            with open(f"/proc/self/fd/{fd}", "rb") as f:
                f.seek(st.st_size - 1)
                last = f.read(1)
        return last == b"\n"
    except (AttributeError, OSError, ValueError):
        return False


def progress_line(state: RunState, elapsed: float) -> str:
    """One line: main, then each group (ranks, workers, children) summed, or the process
    itself where a group has one."""
    parts = []
    for r in process_rows(state, max_rows=0):
        if r.indent or r.kind in ("more", "total") or r.rss is None:
            continue
        step = f" step {r.steps:,}" if r.steps else ""
        pid = f" {r.pid}" if r.pid is not None else ""
        text = (
            f"{r.label}{pid}{step} RSS {compact_bytes(r.rss)} "
            f"({compact_bytes(r.rss_delta, signed=True)})"
        )
        if r.uss is not None and r.kind == "group":
            text += f" USS {compact_bytes(r.uss)} ({compact_bytes(r.uss_delta, signed=True)})"
        parts.append(text)
    body = "; ".join(parts[:4]) + (f"; +{len(parts) - 4} more" if len(parts) > 4 else "")
    return safe_text(f"memprobe: {elapsed:,.0f}s {body or 'waiting for samples'}").plain
