"""Live verdicts for the table: analysis run on the growing series about once a second."""

from __future__ import annotations

from typing import Any, Optional

from rich.text import Text

from memprobe.collect import RunState
from memprobe.render.live import Verdicts


class LiveJudge:
    def __init__(self, detect: Any) -> None:
        self.detect = detect

    def verdicts(self, state: RunState) -> Verdicts:
        return {}

    def header(self, state: RunState) -> Optional[Text]:
        return None


def make(detect: Any) -> Optional[LiveJudge]:
    if detect is None:
        return None
    return LiveJudge(detect)
