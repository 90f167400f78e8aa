# expect: no_leak
# pattern: weather-map animation renderer for a forecast web page (NumPy model + matplotlib object-oriented API with the Agg canvas, no pyplot, no torch; one step = one forecast hour: advance a toy synoptic model (moving lows/highs, advected temperature, geostrophic wind), then build a brand-new matplotlib.figure.Figure + FigureCanvasAgg at 150 dpi with filled temperature contours, labelled isobars, wind barbs/quiver, colour bar and station annotations, render it to PNG bytes and keep only the last 8 frames in a deque for the preview strip, ~190 ms per frame, code in main() + a SynopticModel class + a render_frame() function); the figures are never closed or deleted explicitly, which looks like the classic "figures are never closed" leak, but they were never registered with pyplot's figure manager: a Figure, its canvas, axes and artists only reference each other (reference cycles), so each frame's figure, including its ~6 MB Agg render buffer, becomes cyclic garbage when render_frame() returns and is freed when the cyclic GC runs a generation-2 collection; RSS saw-tooths over a few frames and stays bounded
# step_ms: 190
"""Forecast animation frames for the regional weather page.

Every forecast hour the toy synoptic model is advanced and one map is drawn:
temperature (filled contours), mean-sea-level pressure (isobars), 10 m wind
and a few city stations. The page shows a strip of the most recent frames.
"""

import io
import time
from collections import deque

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

NY, NX = 180, 260
N_HOURS = 90
rng = np.random.default_rng(31)

CITIES = [(f"C{i:02d}", float(rng.uniform(5, NX - 5)), float(rng.uniform(5, NY - 5))) for i in range(28)]


class SynopticModel:
    def __init__(self):
        self.yy, self.xx = np.mgrid[0:NY, 0:NX].astype(np.float64)
        self.systems = [self._new_system() for _ in range(6)]
        lat = self.yy / NY
        self.temp = 28 - 30 * lat + rng.normal(0, 0.5, (NY, NX))
        self.hour = 0

    @staticmethod
    def _new_system():
        return {"x": float(rng.uniform(-40, NX)), "y": float(rng.uniform(0, NY)),
                "amp": float(rng.choice([-1, 1]) * rng.uniform(8, 22)),
                "r": float(rng.uniform(25, 60)), "vx": float(rng.uniform(1.0, 3.5)),
                "vy": float(rng.uniform(-0.6, 0.6))}

    def pressure(self):
        p = np.full((NY, NX), 1013.0)
        for s in self.systems:
            r2 = (self.xx - s["x"]) ** 2 + (self.yy - s["y"]) ** 2
            p += s["amp"] * np.exp(-r2 / (2 * s["r"] ** 2))
        return p

    def step(self):
        for s in self.systems:
            s["x"] += s["vx"]
            s["y"] += s["vy"]
            s["amp"] *= 1.0 + rng.normal(0, 0.02)
        self.systems = [s for s in self.systems if s["x"] < NX + 60] or [self._new_system()]
        while len(self.systems) < 6:
            s = self._new_system()
            s["x"] = -50.0
            self.systems.append(s)
        p = self.pressure()
        dpy, dpx = np.gradient(p)
        u, v = -dpy * 3.0, dpx * 3.0        # geostrophic-ish wind
        # semi-Lagrangian advection of temperature + relaxation to climatology
        src_x = np.clip(self.xx - u * 0.4, 0, NX - 1).astype(np.int64)
        src_y = np.clip(self.yy - v * 0.4, 0, NY - 1).astype(np.int64)
        clim = 28 - 30 * self.yy / NY + 4 * np.sin(2 * np.pi * self.hour / 24)
        self.temp = 0.97 * self.temp[src_y, src_x] + 0.03 * clim
        self.hour += 1
        return p, u, v


def render_frame(model, p, u, v, dpi=150):
    fig = Figure(figsize=(10, 7), dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes([0.05, 0.06, 0.82, 0.86])
    cf = ax.contourf(model.xx, model.yy, model.temp, levels=np.arange(-12, 36, 2), cmap="RdYlBu_r")
    cs = ax.contour(model.xx, model.yy, p, levels=np.arange(960, 1060, 4), colors="k", linewidths=0.7)
    ax.clabel(cs, fmt="%d", fontsize=7)
    s = (slice(4, None, 10), slice(4, None, 10))
    ax.quiver(model.xx[s], model.yy[s], u[s], v[s], scale=400, width=0.0015)
    for name, cx, cy in CITIES:
        t = model.temp[int(cy), int(cx)]
        ax.plot(cx, cy, "o", ms=3, color="k")
        ax.annotate(f"{name} {t:.0f}°", (cx, cy), xytext=(3, 3), textcoords="offset points", fontsize=6)
    ax.set_xlim(0, NX - 1)
    ax.set_ylim(0, NY - 1)
    ax.set_title(f"T+{model.hour:03d}h  MSLP (hPa), 2 m temperature, 10 m wind")
    cax = fig.add_axes([0.89, 0.06, 0.025, 0.86])
    fig.colorbar(cf, cax=cax, label="°C")
    buf = io.BytesIO()
    canvas.print_png(buf)
    return buf.getvalue()


def main():
    model = SynopticModel()
    strip = deque(maxlen=8)
    total_bytes = 0
    t0 = last = time.perf_counter()
    for hour in range(N_HOURS):
        p, u, v = model.step()
        png = render_frame(model, p, u, v)
        strip.append(png)
        total_bytes += len(png)
        now = time.perf_counter()
        if now - last >= 1.0:
            last = now
            print(f"T+{model.hour:03d}h systems={len(model.systems)} png={len(png) >> 10} KB "
                  f"strip={sum(map(len, strip)) >> 10} KB min_p={p.min():.0f}", flush=True)
    print(f"done: {N_HOURS} frames, {total_bytes >> 20} MB of PNG in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
