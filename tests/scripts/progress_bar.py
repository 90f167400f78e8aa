"""A tqdm-like progress bar: the line is redrawn with "\\r" and finished with "\\n" at the end."""

import sys
import time

N = 40
for i in range(N + 1):
    sys.stderr.write(f"\rtraining: {100 * i // N:3d}%|{'#' * i}{' ' * (N - i)}| {i}/{N}")
    sys.stderr.flush()
    time.sleep(0.08)
sys.stderr.write("\n")
print("done")
