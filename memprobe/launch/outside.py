"""The parent's own samples of the target's process tree, at their own pace: RSS, USS and PSS
(psutil) every ``OUTSIDE_EVERY_S``, per-process GPU memory (NVML) every ``GPU_EVERY_S``, and
the cgroup's OOM-kill counter. Each goes into the run state and the journal."""

from __future__ import annotations

from memprobe.collect.journal import K_OUTSIDE, Journal
from memprobe.collect.state import RunState
from memprobe.launch.gpu import NvmlSampler
from memprobe.launch.limits import OomWatch
from memprobe.launch.procs import TreeSampler

OUTSIDE_EVERY_S = 0.5
GPU_EVERY_S = 1.0


class OutsideSampler:
    def __init__(self, root_pid: int, gpu: NvmlSampler, oom_watch: OomWatch) -> None:
        self.root_pid = root_pid
        self.tree = TreeSampler(root_pid)
        self.gpu = gpu
        self.oom_watch = oom_watch
        self._last_tree = 0.0
        self._last_gpu = 0.0

    def poll(self, now: float, t: float, state: RunState, journal: Journal) -> None:
        """Sample what is due at ``now`` (monotonic), stamped ``t`` on the run's clock."""
        # the target's memory cgroup at every round (~0.1 ms): one it moves into and fills
        # within half a second (a job wrapper's limit, then a quick OOM) must be seen before
        # its kill, or the kill's counter is read as where it started
        self.oom_watch.see(self.root_pid)
        if now - self._last_tree < OUTSIDE_EVERY_S:
            return
        self._last_tree = now
        tree = self.tree.sample()
        for pid, ppid, values in tree:
            argv = self.tree.new_argv.get(pid)
            state.ingest_outside(pid, t, values, ppid, argv)
            line = {"k": K_OUTSIDE, "pid": pid, "ppid": ppid, "t": t, "v": values}
            journal.write({**line, "argv": argv} if argv else line)
        if self.gpu.available and now - self._last_gpu >= GPU_EVERY_S:
            self._last_gpu = now
            device_values, per_pid = self.gpu.sample(pid for pid, _, _ in tree)
            per_pid.setdefault(self.root_pid, {}).update(device_values)
            for pid, values in per_pid.items():
                state.ingest_outside(pid, t, values)
                journal.write({"k": K_OUTSIDE, "pid": pid, "t": t, "v": values})
