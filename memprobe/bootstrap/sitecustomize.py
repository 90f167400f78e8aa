"""memprobe bootstrap: starts the agent, then runs the target's own sitecustomize.

This folder is put first on the target's PYTHONPATH by ``memprobe run``. It
holds only this file and the stdlib-only ``memprobe_agent`` package; memprobe's
own site-packages never reach the target's ``sys.path``. Once the agent is
loaded this folder is taken off ``sys.path`` again, so the target sees the
path a plain run would (children still inherit PYTHONPATH and get an agent).

This file parses on any Python, 2.7 included (type comments, no f-strings): a
process whose interpreter is older than the agent supports (a torchrun or a
shell script may start one) says so in the run folder instead of failing to
compile, and runs on without an agent.
"""

# The oldest Python the agent runs on: memprobe_agent.wire.MIN_PYTHON (a test keeps the two
# equal; this file cannot import the agent before it knows the interpreter can run it).
_MIN_PYTHON = (3, 7)


def _memprobe_bootstrap():
    # type: () -> None
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    if os.environ.get("MEMPROBE_CONFIG"):
        if sys.version_info < _MIN_PYTHON:
            version = (sys.version.split() or ["?"])[0]
            _report_failure(
                "Python %s is older than memprobe's agent supports (%d.%d or newer): "
                "this process runs without an agent" % ((version,) + _MIN_PYTHON)
            )
        else:
            try:
                import importlib

                importlib.import_module("memprobe_agent").start()
            except Exception as e:  # noqa: BLE001 - never break the target
                _report_failure("%s: %s" % (type(e).__name__, e))

    def _is_here(entry):
        # type: (str) -> bool
        try:
            return os.path.abspath(entry or os.curdir) == here
        except (TypeError, ValueError):
            return False

    sys.path[:] = [p for p in sys.path if not _is_here(p)]
    # chain: import the next sitecustomize on the path, as a plain run would
    ours = sys.modules.pop("sitecustomize", None)
    try:
        import importlib

        importlib.import_module("sitecustomize")
    except ImportError as e:
        if getattr(e, "name", "sitecustomize") != "sitecustomize":  # Python 2: no .name
            raise
        if ours is not None:
            sys.modules["sitecustomize"] = ours


def _report_failure(message):
    # type: (str) -> None
    """One line in ``agent-error-<pid>.txt`` in the run folder; the parent makes it an event."""
    import json
    import os

    try:
        run_dir = json.loads(os.environ["MEMPROBE_CONFIG"])["run_dir"]
        name = "agent-error-%d.txt" % os.getpid()
        with open(os.path.join(run_dir, name), "a") as f:
            f.write(message.replace("\n", " ") + "\n")
    except Exception:  # noqa: BLE001
        pass


_memprobe_bootstrap()
del _memprobe_bootstrap
