# expect: leak
# holder: RunningStandardizer.mean|RunningStandardizer.var|normalizer.mean|Measured.sources|sources
# pattern: wind-turbine power-curve model (1-D CNN over 1 Hz SCADA minutes, torch.optim.Adam, ~17 ms steps, fixed 16 s budget, code in main() + a Measured torch.Tensor subclass + ScadaReader/RunningStandardizer classes); raw channels are wrapped in Measured, a tensor subclass whose __torch_function__ propagates a physical unit and records `out.sources = tuple(parent Measured args)` so the data-quality audit can explain which channels fed a value; RunningStandardizer.update() keeps EMA per-channel mean/var with `self.mean = self.mean + a * (batch_mean - self.mean)` under torch.no_grad(); no autograd is involved, but because batch_mean and the old mean are Measured, the new mean's .sources links to the previous mean and to this batch's mean, whose sources reach the stacked and unit-converted raw channel tensors; the EMA statistics therefore form an ever longer Python-level lineage chain that keeps every batch's SCADA tensors alive
# step_ms: 17
"""Power-curve regression for a wind farm from per-second SCADA snippets.

Channels are wrapped in a small units-aware tensor type so that mixing
m/s with km/h (a real incident last year) raises instead of silently
training on garbage.  Inputs are standardised with running statistics.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

BATCH = 64
SECONDS = 60
RUN_SECONDS = 16.0
RATED_KW = 2300.0


def _flat(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


_SAME_UNIT = {"add", "sub", "__add__", "__sub__", "__radd__", "__rsub__", "add_", "sub_", "mean",
              "stack", "cat", "clamp", "__getitem__", "abs", "neg", "__neg__", "std", "max", "min"}


class Measured(torch.Tensor):
    """A tensor with a physical unit and the lineage of the readings it came from."""

    @staticmethod
    def __new__(cls, data, unit="", channel=None):
        t = torch.Tensor._make_subclass(cls, data)
        t.unit = unit
        t.channel = channel
        t.sources = ()
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = super().__torch_function__(func, types, args, kwargs)
        if isinstance(out, Measured):
            parents = tuple(a for a in _flat(args, kwargs) if isinstance(a, Measured) and a is not out)
            if parents:
                name = getattr(func, "__name__", "")
                units = {p.unit for p in parents if p.unit}
                if name in ("add", "sub", "__add__", "__sub__") and len(units) > 1:
                    raise ValueError(f"unit mismatch in {name}: {units}")
                if name in ("stack", "cat") and len(units) > 1:
                    out.unit = "mixed"
                elif name in _SAME_UNIT:
                    out.unit = parents[0].unit
                else:
                    out.unit = "*".join(sorted(units))
                out.channel = parents[0].channel
                out.sources = parents
        return out

    def to_plain(self):
        return self.as_subclass(torch.Tensor)

    def lineage(self, depth=3):
        names = set()
        frontier = [self]
        for _ in range(depth):
            frontier = [s for t in frontier for s in getattr(t, "sources", ())]
            names.update(t.channel for t in frontier if getattr(t, "channel", None))
        return sorted(names)


class ScadaReader:
    """Synthetic SCADA minutes: wind (km/h from the met mast), rpm, pitch, temperature, power."""

    def __init__(self, rng):
        self.rng = rng
        self.turb_bias = rng.normal(0, 0.03, 40)

    def minute_batch(self, n):
        r = self.rng
        turb = r.integers(0, 40, n)
        v_mean = r.weibull(2.0, n) * 8.0
        gust = r.normal(0, 1, (n, SECONDS)).cumsum(1) * 0.15
        v = np.clip(v_mean[:, None] + gust, 0, 30)
        temp = r.normal(8, 6, n)[:, None] + r.normal(0, 0.1, (n, SECONDS))
        rho = 1.225 * 288.15 / (temp + 273.15)
        cp = 0.45 * (1 + self.turb_bias[turb])[:, None]
        p = np.clip(0.5 * rho * cp * np.pi * 45.0 ** 2 * v ** 3 / 1000.0, 0, RATED_KW)
        p[(v < 3) | (v > 25)] = 0.0
        pitch = np.where(p >= RATED_KW * 0.99, (v - 12).clip(0) * 2.0, 0.5) + r.normal(0, 0.2, v.shape)
        rpm = np.clip(v * 1.4, 0, 16) + r.normal(0, 0.1, v.shape)
        target = p.mean(1) / RATED_KW
        f = lambda a: torch.from_numpy(a.astype(np.float32))
        return {
            "wind": Measured(f(v * 3.6), "km/h", "met_wind"),
            "rpm": Measured(f(rpm), "1/min", "rotor_rpm"),
            "pitch": Measured(f(pitch), "deg", "blade_pitch"),
            "temp": Measured(f(temp), "degC", "nacelle_temp"),
        }, torch.from_numpy(target.astype(np.float32))


def to_model_units(ch):
    wind = ch["wind"] / 3.6
    wind.unit = "m/s"
    omega = ch["rpm"] * (2 * np.pi / 60.0)
    omega.unit = "rad/s"
    pitch = ch["pitch"] * (np.pi / 180.0)
    pitch.unit = "rad"
    temp_k = ch["temp"] + 273.15
    temp_k.unit = "K"
    cube = (wind / 10.0) ** 3
    return torch.stack([wind, omega, pitch, temp_k, cube], dim=1)  # (B, 5, T)


class RunningStandardizer:
    def __init__(self, n_ch, momentum=0.01):
        self.mean = Measured(torch.zeros(n_ch), "mixed", "init")
        self.var = Measured(torch.ones(n_ch), "mixed", "init")
        self.momentum = momentum
        self.count = 0

    @torch.no_grad()
    def update(self, x):
        batch_mean = x.mean(dim=(0, 2))
        batch_var = x.var(dim=(0, 2))
        a = 1.0 if self.count == 0 else self.momentum
        self.mean = self.mean + a * (batch_mean - self.mean)
        self.var = self.var + a * (batch_var - self.var)
        self.count += 1

    def __call__(self, x):
        m = self.mean.to_plain()[None, :, None]
        s = (self.var.to_plain()[None, :, None] + 1e-5).sqrt()
        return (x.to_plain() - m) / s


class PowerCurveNet(nn.Module):
    def __init__(self, ch=5, width=112):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(ch, width, 5, padding=2), nn.GELU(),
            nn.Conv1d(width, width, 5, padding=2, stride=2), nn.GELU(),
            nn.Conv1d(width, width, 3, padding=1), nn.GELU(),
        )
        self.head = nn.Sequential(nn.Linear(2 * width, 64), nn.GELU(), nn.Linear(64, 1))

    def forward(self, x):
        h = self.conv(x)
        h = torch.cat([h.mean(-1), h.amax(-1)], dim=1)
        return torch.sigmoid(self.head(h)).squeeze(-1)


def main():
    rng = np.random.default_rng(21)
    torch.manual_seed(21)
    reader = ScadaReader(rng)
    norm = RunningStandardizer(5)
    model = PowerCurveNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    t0 = time.perf_counter()
    last = t0
    step = 0
    losses = []
    while time.perf_counter() - t0 < RUN_SECONDS:
        step += 1
        channels, target = reader.minute_batch(BATCH)
        x = to_model_units(channels)
        norm.update(x)
        pred = model(norm(x))
        loss = F.smooth_l1_loss(pred, target, beta=0.05)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if time.perf_counter() - last > 2.0:
            print(f"step {step:5d}  loss {np.mean(losses[-100:]):.4f}  "
                  f"norm mean[wind]={float(norm.mean[0]):.2f} {norm.mean.unit}  lineage {norm.mean.lineage()}")
            last = time.perf_counter()
    print(f"done: {step} steps in {time.perf_counter() - t0:.1f}s, final loss {np.mean(losses[-100:]):.4f}")


if __name__ == "__main__":
    main()
