"""GPU memory from the driver's side (NVML), sampled by the parent for every process of the run.

This sees what PyTorch's allocator does not own: the CUDA context, NCCL buffers,
other libraries. No NVML or no GPU is not an error: no GPU series, one event saying why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple


@dataclass(frozen=True)
class GpuDevice:
    index: int
    name: str
    total_bytes: int


class NvmlSampler:
    """Per-device used memory and per-process used memory for the run's pids."""

    def __init__(self) -> None:
        self.devices: List[GpuDevice] = []
        self.unavailable: Optional[str] = None
        self._nvml: Any = None
        self._handles: List[Any] = []
        try:
            import pynvml

            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            for i in range(count):
                handle = pynvml.nvmlDeviceGetHandleByIndex(i)
                name = pynvml.nvmlDeviceGetName(handle)
                total = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
                self._handles.append(handle)
                self.devices.append(
                    GpuDevice(i, name if isinstance(name, str) else name.decode(), total)
                )
            self._nvml = pynvml
            if not count:
                self.unavailable = "NVML found no GPU"
        except ImportError:
            self.unavailable = "nvidia-ml-py is not installed"
        except Exception as e:  # noqa: BLE001 - NVMLError_LibraryNotFound, driver mismatch...
            self.unavailable = f"no NVML ({e})"

    @property
    def available(self) -> bool:
        return self._nvml is not None and bool(self.devices)

    def sample(self, pids: Iterable[int]) -> Tuple[Dict[str, float], Dict[int, Dict[str, float]]]:
        """(device-level values, {pid: values}) with names ``nvml:<i>/...``."""
        device_values: Dict[str, float] = {}
        per_pid: Dict[int, Dict[str, float]] = {}
        if not self.available:
            return device_values, per_pid
        wanted = set(pids)
        nvml = self._nvml
        for dev, handle in zip(self.devices, self._handles):
            prefix = f"nvml:{dev.index}/"
            try:
                device_values[prefix + "device_used_bytes"] = float(
                    nvml.nvmlDeviceGetMemoryInfo(handle).used
                )
                procs = list(nvml.nvmlDeviceGetComputeRunningProcesses(handle))
                procs += list(nvml.nvmlDeviceGetGraphicsRunningProcesses(handle))
            except Exception:  # noqa: BLE001 - a transient driver error skips one sample
                continue
            for p in procs:
                used = getattr(p, "usedGpuMemory", None)
                if p.pid in wanted and isinstance(used, int):
                    per_pid.setdefault(p.pid, {})[prefix + "used_bytes"] = float(used)
        return device_values, per_pid

    def close(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001
                pass
