"""Follow the per-process JSON-lines files of a run folder as they grow."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Tuple

from memprobe.bootstrap.memprobe_agent import wire

READ_CHUNK = 4 * 1024 * 1024


class Tailer:
    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self._offsets: Dict[str, int] = {}
        self._tails: Dict[str, bytes] = {}
        self.garbage_lines = 0

    def poll(self) -> List[Tuple[int, Dict[str, Any]]]:
        """Every complete new message since the last call, as (pid, message)."""
        out: List[Tuple[int, Dict[str, Any]]] = []
        for pid, path in wire.iter_proc_files(self.run_dir):
            offset = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read(READ_CHUNK)
            except OSError:
                continue
            if not data:
                continue
            self._offsets[path] = offset + len(data)
            messages, tail, bad = wire.decode_lines(self._tails.get(path, b"") + data)
            self._tails[path] = tail
            self.garbage_lines += bad
            out.extend((pid, m) for m in messages)
        return out

    def flush_partial(self) -> List[Tuple[int, Dict[str, Any]]]:
        """At the very end: a last line without its newline (killed mid-write) if it parses."""
        out: List[Tuple[int, Dict[str, Any]]] = []
        for path, tail in self._tails.items():
            pid = wire.pid_from_file_name(os.path.basename(path))
            if pid is None or not tail.strip():
                continue
            messages, _, bad = wire.decode_lines(tail + b"\n")
            self.garbage_lines += bad
            out.extend((pid, m) for m in messages)
        self._tails.clear()
        return out
