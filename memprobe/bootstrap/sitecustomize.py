"""memprobe bootstrap: starts the agent, then runs the target's own sitecustomize.

This folder is put first on the target's PYTHONPATH by ``memprobe run``. It
holds only this file and the stdlib-only ``memprobe_agent`` package; memprobe's
own site-packages never reach the target's ``sys.path``. Once the agent is
loaded this folder is taken off ``sys.path`` again, so the target sees the
path a plain run would (children still inherit PYTHONPATH and get an agent).
"""


def _memprobe_bootstrap() -> None:
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    if os.environ.get("MEMPROBE_CONFIG"):
        try:
            import memprobe_agent

            memprobe_agent.start()
        except Exception as e:  # noqa: BLE001 - never break the target
            _report_failure(e)

    def _is_here(entry: str) -> bool:
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
        if e.name != "sitecustomize":
            raise
        if ours is not None:
            sys.modules["sitecustomize"] = ours


def _report_failure(error: BaseException) -> None:
    import json
    import os

    try:
        run_dir = json.loads(os.environ["MEMPROBE_CONFIG"])["run_dir"]
        with open(os.path.join(run_dir, f"agent-error-{os.getpid()}.txt"), "a") as f:
            f.write(f"{type(error).__name__}: {error}\n")
    except Exception:  # noqa: BLE001
        pass


_memprobe_bootstrap()
del _memprobe_bootstrap
