"""The line that keeps a holder growing, read from the user's source (no code runs)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from memprobe.analysis.holderline import grow_line, holder_names

SOURCE = """
class Probe:
    def __init__(self):
        self.outputs = []

    def on_step(self, model, batch, fixed):
        if fixed:
            self.outputs.append(model(batch).mean().item())
        else:
            self.outputs.append(model(batch))


def main():
    total = 0.0
    cache = {}
    ema = None
    for step in range(10):
        loss = step * 2
        total += loss
        cache[step] = loss
        ema = loss if ema is None else 0.9 * ema + 0.1 * loss
"""


def test_holder_names_split_file_function_and_path() -> None:
    assert holder_names("train.py:main:self.history[0].buf") == (
        "train.py",
        "main",
        ["self", "history", "buf"],
    )
    assert holder_names("__main__.losses") == (None, None, ["__main__", "losses"])


def test_grow_lines_found_in_function_then_file(tmp_path: Path) -> None:
    # GIVEN a user's script with an accumulator, a dict cache, an EMA and a callback list
    src = tmp_path / "train.py"
    src.write_text(SOURCE)
    files = [str(src)]
    # THEN each holder's growing statement is named, in main() first
    assert cast(str, grow_line("train.py:main:total", files)).endswith("train.py:19")
    assert cast(str, grow_line("train.py:main:cache", files)).endswith("train.py:20")
    assert cast(str, grow_line("train.py:main:ema", files)).endswith("train.py:21")
    # AND a list reached through a framework object is found in the method that appends,
    # the append of a tensor before the append of a number
    line = grow_line("train.py:main:trainer.callbacks[0].outputs", files)
    assert line is not None and line.endswith("train.py:10")


def test_no_line_for_other_files_missing_files_or_bad_source(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def main(:\n")
    assert grow_line("train.py:main:total", [str(bad)]) is None
    assert grow_line("bad.py:main:total", [str(bad)]) is None
    assert grow_line("gone.py:main:total", [str(tmp_path / "gone.py")]) is None
