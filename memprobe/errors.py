"""Exit codes and the one error type the CLI turns into a one-line message.

Exit codes of ``memprobe run``: the target's own exit code (128 + N when it
was killed by signal N), except:

- ``EXIT_LEAK`` (40) with ``--fail-on-leak`` when the target exited 0 and the
  verdict is leak (the target's own failure codes win);
- ``EXIT_BAD_INPUT`` (2) when memprobe cannot start the run or read its input.

``memprobe diff``: 0 no regression, ``EXIT_REGRESSION`` (3) a new or worse leak,
2 unusable input (see ``memprobe.analysis.compare``).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_LEAK = 40
EXIT_REGRESSION = 3


class MemprobeError(Exception):
    """A problem to show as one line on stderr, with the exit code to leave with."""

    def __init__(self, message: str, exit_code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.exit_code = exit_code
