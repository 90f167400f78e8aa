# expect: leak
# holder: __warningregistry__
# pattern: numpy-only Kalman tracker warns (warnings.warn) about every gated-out sensor reading with a message that embeds the timestamp and the reading; each distinct text adds a key to the module's __warningregistry__ (the "default" action's de-duplication table), routed through captureWarnings to a bounded logging.Handler
# step_ms: 1
"""Multi-sensor Kalman tracker (numpy only, no torch) with outlier gating.

A constant-velocity target in 3-D is observed by 8 noisy range/position
sensors.  Each step runs the Kalman predict, then a sequential update per
sensor; readings whose Mahalanobis distance exceeds the chi-square gate are
rejected with ``warnings.warn(..., OutlierWarning)``.  ``logging.captureWarnings``
routes those warnings to a small ``logging.Handler`` subclass that keeps only
per-sensor counters (bounded), so the output stays quiet.

Why it leaks: Python's default warning action ("default": show once per
distinct message and location) remembers every (message, category, lineno)
key it has shown in the calling module's ``__warningregistry__``.  The message
embeds the time stamp, the raw reading and the innovation, so no two messages
are equal and the registry gains a ~1 KB entry for every rejected reading,
for as long as the process lives.

Fix: put the variable parts in the log record (``logger.debug(..., extra=...)``)
instead of the warning text, or warn with a constant message, or use the
"ignore"/"always" action for this category.
"""
import logging
import time
import warnings
from collections import Counter

import numpy as np

N_STEPS = 32_000
N_SENSORS = 8
DT = 0.05
GATE = 16.27  # chi2(3) 99.9%


class OutlierWarning(UserWarning):
    pass


class OutlierCounter(logging.Handler):
    """Keeps per-sensor rejection counts; drops the record text."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.counts = Counter()

    def emit(self, record):
        msg = record.getMessage()
        start = msg.find("sensor ")
        if start >= 0:
            self.counts[msg[start:start + 9]] += 1


def make_model():
    F = np.eye(6)
    F[:3, 3:] = DT * np.eye(3)
    q = 0.5
    G = np.vstack([0.5 * DT ** 2 * np.eye(3), DT * np.eye(3)])
    Q = q * G @ G.T
    H = np.hstack([np.eye(3), np.zeros((3, 3))])
    return F, Q, H


def check_reading(t, sid, z, nu, d2, x, S, P):
    if d2 > GATE:
        warnings.warn(
            f"t={t:.3f}s sensor {sid}: reading rejected (d2={d2:.1f} > {GATE}); "
            f"z={z.round(4).tolist()} innovation={nu.round(4).tolist()} "
            f"state={x.round(4).tolist()} S_diag={np.diag(S).round(4).tolist()} "
            f"P={P.round(6).tolist()}",
            OutlierWarning, stacklevel=2)
        return False
    return True


def main():
    logging.captureWarnings(True)
    counter = OutlierCounter()
    logging.getLogger("py.warnings").addHandler(counter)
    logging.getLogger("py.warnings").propagate = False

    rng = np.random.default_rng(0)
    F, Q, H = make_model()
    sensor_sigma = rng.uniform(0.2, 1.0, size=N_SENSORS)
    outlier_rate = rng.uniform(0.1, 0.45, size=N_SENSORS)

    truth = np.array([0.0, 0.0, 10.0, 1.0, 0.5, 0.0])
    x = truth + rng.normal(0, 1, 6)
    P = np.eye(6) * 4.0
    sq_err = 0.0
    accepted = 0

    t0 = time.time()
    for k in range(N_STEPS):
        t = k * DT
        # simulate the target: constant velocity plus a slow turn
        truth[3:5] = truth[3:5] @ np.array([[np.cos(0.002), -np.sin(0.002)], [np.sin(0.002), np.cos(0.002)]])
        truth[:3] += DT * truth[3:]

        # predict
        x = F @ x
        P = F @ P @ F.T + Q

        # sequential update, one sensor at a time
        for sid in range(N_SENSORS):
            R = np.eye(3) * sensor_sigma[sid] ** 2
            z = truth[:3] + rng.normal(0, sensor_sigma[sid], 3)
            if rng.random() < outlier_rate[sid]:
                z += rng.normal(0, 15.0, 3)
            nu = z - H @ x
            S = H @ P @ H.T + R
            S_inv = np.linalg.inv(S)
            d2 = float(nu @ S_inv @ nu)
            if not check_reading(t, sid, z, nu, d2, x, S, P):
                continue
            K = P @ H.T @ S_inv
            x = x + K @ nu
            P = (np.eye(6) - K @ H) @ P
            accepted += 1

        sq_err += float(np.sum((x[:3] - truth[:3]) ** 2))
        if (k + 1) % 2000 == 0:
            rejected = sum(counter.counts.values())
            print(f"step {k + 1:6d}  rmse {np.sqrt(sq_err / (k + 1)):.3f}  accepted {accepted}  "
                  f"rejected {rejected}  {(time.time() - t0) * 1000 / (k + 1):.2f} ms/step", flush=True)

    print("rejections per sensor:", dict(sorted(counter.counts.items())))


if __name__ == "__main__":
    main()
