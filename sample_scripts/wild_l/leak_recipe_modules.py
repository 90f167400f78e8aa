# expect: leak
# holder: sys.modules|modules|recipe|load_recipe
# pattern: numpy hyper-parameter sweep for a denoising filter bank; every trial's generated recipe source is exec'd into a fresh types.ModuleType registered in sys.modules under a unique name (so its functions pickle), and each recipe module precomputes its filter basis and Gram pseudo-inverse (0.1-4 MB) at import; the runner drops its reference but sys.modules keeps every trial module alive
# step_ms: 200
"""Random search over filter-bank recipes for 1-D signal denoising.

Recipes are small Python snippets (as they would be written by hand in a
recipes/ folder); here they are generated from a template per trial and
loaded as real modules so the resulting `denoise` functions can be pickled
and shipped to workers later.
"""
import sys
import textwrap
import time
import types

import numpy as np

SIGNAL_LEN = 2048
N_SIGNALS = 64
N_TRIALS = 100

RECIPE_TEMPLATE = textwrap.dedent('''
    """Auto-generated recipe {name}."""
    import numpy as np

    N_TAPS = {n_taps}
    N_BANDS = {n_bands}
    SHRINK = {shrink!r}
    WINDOW = np.{window}(N_TAPS)

    def _make_basis():
        t = np.arange(N_TAPS) - (N_TAPS - 1) / 2
        freqs = np.geomspace({f_lo!r}, 0.49, N_BANDS)
        basis = np.concatenate([np.cos(2 * np.pi * freqs[:, None] * t[None, :]),
                                np.sin(2 * np.pi * freqs[:, None] * t[None, :])])
        basis /= np.linalg.norm(basis, axis=1, keepdims=True)
        return basis

    BASIS = _make_basis()
    GRAM_INV = np.linalg.pinv(BASIS @ BASIS.T + 1e-3 * np.eye(2 * N_BANDS))

    def denoise(x):
        hop = N_TAPS // 2
        n = len(x)
        x = np.pad(x, (N_TAPS, N_TAPS + (-n) % hop), mode="reflect")
        frames = np.lib.stride_tricks.sliding_window_view(x, N_TAPS)[::hop]
        coef = (frames * WINDOW) @ BASIS.T @ GRAM_INV
        noise = np.median(np.abs(coef[:, N_BANDS - N_BANDS // 4:N_BANDS])) / 0.6745
        scale = SHRINK * noise
        coef = np.sign(coef) * np.maximum(np.abs(coef) - scale, 0.0)
        rec = coef @ BASIS
        out = np.zeros_like(x)
        norm = np.zeros_like(x)
        for i, fr in enumerate(rec):
            out[i * hop:i * hop + N_TAPS] += fr * WINDOW
            norm[i * hop:i * hop + N_TAPS] += WINDOW ** 2
        return (out / np.maximum(norm, 1e-8))[N_TAPS:N_TAPS + n]
''')


def load_recipe(name, source):
    module = types.ModuleType(name)
    module.__file__ = f"<recipe {name}>"
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


NOISE_LEVELS = (0.3, 0.6, 0.9, 1.2)


def make_signals(rng):
    t = np.arange(SIGNAL_LEN)
    clean = []
    for _ in range(N_SIGNALS):
        f = rng.uniform(0.002, 0.05, size=3)
        a = rng.uniform(0.5, 1.5, size=3)
        s = (a[:, None] * np.sin(2 * np.pi * f[:, None] * t + rng.uniform(0, 6, size=(3, 1)))).sum(0)
        s += np.where(rng.random(SIGNAL_LEN) < 0.002, rng.normal(0, 3), 0.0).cumsum() * 0.01
        clean.append(s)
    clean = np.stack(clean)
    noisy = {sigma: clean + rng.normal(0, sigma, size=clean.shape) for sigma in NOISE_LEVELS}
    return clean, noisy


def snr_db(clean, est):
    return 10 * np.log10(np.sum(clean ** 2) / np.sum((clean - est) ** 2))


def sample_config(rng):
    n_taps = int(rng.choice([128, 256, 512]))
    return dict(
        n_taps=n_taps,
        n_bands=int(rng.integers(n_taps // 4, n_taps // 2)),
        shrink=float(np.round(rng.uniform(0.2, 1.5), 3)),
        window=str(rng.choice(["hanning", "hamming", "blackman"])),
        f_lo=float(np.round(rng.uniform(0.001, 0.02), 4)),
    )


def run_trial(trial, cfg, clean, noisy):
    name = f"recipes.trial_{trial:04d}"
    recipe = load_recipe(name, RECIPE_TEMPLATE.format(name=name, **cfg))
    scores = [snr_db(c, recipe.denoise(x))
              for sigma in NOISE_LEVELS for c, x in zip(clean, noisy[sigma])]
    return float(np.mean(scores))


def main():
    rng = np.random.default_rng(3)
    clean, noisy = make_signals(rng)
    baseline = np.mean([snr_db(c, x) for sigma in NOISE_LEVELS for c, x in zip(clean, noisy[sigma])])
    best = (-np.inf, None)
    t0 = time.time()
    for trial in range(N_TRIALS):
        cfg = sample_config(rng)
        score = run_trial(trial, cfg, clean, noisy)
        if score > best[0]:
            best = (score, cfg)
        if trial % 10 == 9:
            print(f"trial {trial + 1}/{N_TRIALS} best SNR {best[0]:.2f} dB "
                  f"(noisy {baseline:.2f} dB) t={time.time() - t0:.1f}s", flush=True)
    print("best recipe:", best[1])


if __name__ == "__main__":
    main()
