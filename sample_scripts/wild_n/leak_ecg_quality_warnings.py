# expect: leak
# holder: caught
# pattern: the batch ECG preprocessing job wraps its whole record loop in `with warnings.catch_warnings(record=True) as caught:` (simplefilter "always") to tally signal-quality problems at the end; every flagged window raises warnings.warn(SignalQualityWarning(...)) whose instance carries a copy of the raw excerpt (+-2 s context) for later review, so the caught list keeps one excerpt array per flagged window for the whole job (NumPy/SciPy signal processing, no torch)
# step_ms: 120
"""Batch preprocessing and quality screening of 12-lead ECG recordings.

For every 30 s monitor strip:
  * baseline wander is removed with the classic two-stage median filter
    (200 ms then 600 ms, run on a decimated copy),
  * the signal is band-passed (0.5-40 Hz, zero phase) and notch filtered,
  * R peaks are detected on lead II, heart rate and RR variability computed,
  * a median beat template per lead is built for QRS amplitude features,
  * every 1 s window of every lead is screened for amplifier saturation,
    lead-off (flat line) and excessive high-frequency noise.

Quality problems are reported through the warnings module (so that library
users can filter or escalate them); this script collects them and prints a
per-lead summary at the end.  Recordings are synthesised.
"""
import argparse
import time
import warnings
from collections import Counter

import numpy as np
from scipy import ndimage, signal

LEADS = ["I", "II", "III", "aVR", "aVL", "aVF", "V1", "V2", "V3", "V4", "V5", "V6"]
FS = 500


class SignalQualityWarning(UserWarning):
    def __init__(self, record_id, lead, kind, t_start, excerpt):
        super().__init__(f"{record_id}: lead {lead} {kind} at {t_start:.1f}s")
        self.record_id = record_id
        self.lead = lead
        self.kind = kind
        self.t_start = t_start
        self.excerpt = excerpt  # raw samples around the window, for the review UI


def synth_record(rng, seconds):
    n = seconds * FS
    t = np.arange(n) / FS
    hr = rng.uniform(50, 110)
    beats = np.cumsum(rng.normal(60.0 / hr, 0.03, size=int(seconds * hr / 60) + 3))
    ecg = np.zeros(n)
    for b in beats:
        for mu, sd, a in ((-0.2, 0.025, 0.12), (-0.03, 0.008, -0.1), (0.0, 0.01, 1.0),
                          (0.03, 0.008, -0.25), (0.25, 0.04, 0.3)):
            ecg += a * np.exp(-0.5 * ((t - b - mu) / sd) ** 2)
    gains = rng.uniform(-1.2, 1.5, size=len(LEADS))
    x = gains[:, None] * ecg[None, :]
    x += 0.3 * np.sin(2 * np.pi * rng.uniform(0.1, 0.4) * t + rng.uniform(0, 6))[None]  # wander
    x += 0.05 * np.sin(2 * np.pi * 50 * t)[None]                                       # mains
    x += rng.normal(0, 0.02, size=x.shape)
    # typical ward artefacts: saturated amplifier, electrode off, EMG bursts
    for lead in rng.choice(len(LEADS), size=rng.integers(2, 8), replace=False):
        kind = rng.integers(3)
        i0 = rng.integers(0, n - 3 * FS)
        i1 = i0 + rng.integers(2 * FS, min(8 * FS, n - i0))
        if kind == 0:
            x[lead, i0:i1] = np.clip(x[lead, i0:i1] * 4, -1.6, 1.6)
        elif kind == 1:
            x[lead, i0:i1] = rng.normal(0, 0.001, size=i1 - i0)
        else:
            x[lead, i0:i1] += rng.normal(0, 0.4, size=i1 - i0)
    return x


def remove_baseline(x, factor=10):
    # the baseline is slow, so run the median filters at 50 Hz and interpolate back
    xd = x[:, ::factor]
    base = ndimage.median_filter(xd, size=(1, 11), mode="nearest")
    base = ndimage.median_filter(base, size=(1, 31), mode="nearest")
    t = np.arange(x.shape[1])
    return x - np.stack([np.interp(t, t[::factor], b) for b in base])


BANDPASS = signal.butter(3, [0.5, 40], btype="bandpass", fs=FS, output="sos")
NOTCH_B, NOTCH_A = signal.iirnotch(50.0, 30.0, fs=FS)


def screen_windows(record_id, raw, filt, context=2 * FS):
    n = raw.shape[1]
    for li, lead in enumerate(LEADS):
        for i0 in range(0, n, FS):
            w_raw = raw[li, i0:i0 + FS]
            w = filt[li, i0:i0 + FS]
            kind = None
            if np.mean(np.abs(w_raw) >= 1.59) > 0.05:
                kind = "saturation"
            elif np.std(w_raw) < 0.005:
                kind = "lead-off"
            elif np.std(np.diff(w_raw)) > 0.25:
                kind = "emg-noise"
            if kind is not None:
                lo, hi = max(0, i0 - context), min(n, i0 + FS + context)
                warnings.warn(SignalQualityWarning(record_id, lead, kind, i0 / FS, raw[li, lo:hi].copy()))


def beat_features(filt):
    lead2 = filt[1]
    peaks, _ = signal.find_peaks(lead2, distance=int(0.3 * FS), prominence=0.3 * np.max(np.abs(lead2)))
    if len(peaks) < 3:
        return None
    rr = np.diff(peaks) / FS
    half = int(0.25 * FS)
    peaks = peaks[(peaks > half) & (peaks < filt.shape[1] - half)]
    beats = np.stack([filt[:, p - half:p + half] for p in peaks], axis=1)  # (lead, beat, t)
    template = np.median(beats, axis=1)
    return {
        "hr": 60.0 / np.mean(rr),
        "rmssd_ms": 1e3 * np.sqrt(np.mean(np.diff(rr) ** 2)),
        "qrs_amp": np.ptp(template[:, half - 30:half + 30], axis=1),
    }


def process(record_id, raw):
    x = remove_baseline(raw)
    x = signal.sosfiltfilt(BANDPASS, x, axis=1)
    x = signal.filtfilt(NOTCH_B, NOTCH_A, x, axis=1)
    screen_windows(record_id, raw, x)
    return beat_features(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=180)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--log-every", type=int, default=45)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    hrs, rmssd, failed = [], [], 0
    t0 = time.time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SignalQualityWarning)
        for r in range(1, args.records + 1):
            raw = synth_record(rng, args.seconds)
            feats = process(f"rec{r:05d}", raw)
            if feats is None:
                failed += 1
            else:
                hrs.append(float(feats["hr"]))
                rmssd.append(float(feats["rmssd_ms"]))
            if r % args.log_every == 0:
                print(
                    f"{r}/{args.records} records  median HR={np.median(hrs):.1f} bpm  "
                    f"median RMSSD={np.median(rmssd):.1f} ms  no-beat records={failed}  "
                    f"({time.time() - t0:.1f}s)"
                )

    by_kind = Counter(w.message.kind for w in caught if issubclass(w.category, SignalQualityWarning))
    by_lead = Counter(w.message.lead for w in caught if issubclass(w.category, SignalQualityWarning))
    print("quality flags by kind:", dict(by_kind))
    print("quality flags by lead:", dict(sorted(by_lead.items(), key=lambda kv: -kv[1])[:6]))
    print("done")


if __name__ == "__main__":
    main()
