"""A watched list that gains ~4 KiB a step, and a watched bounded deque (no leak).

No optimizer: the loop calls memprobe.step(). ``--bounded`` watches only the deque.
"""

import collections
import sys
import time

import memprobe

bounded_only = "--bounded" in sys.argv
steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 600

history: collections.deque[bytes] = memprobe.watch("replay_buffer", collections.deque(maxlen=50))
log = [] if bounded_only else memprobe.watch("episode_log", [])
for step in range(steps):
    if step % 100 == 0:
        memprobe.mark(f"epoch {step // 100}")
    history.append(bytes(4096))
    if not bounded_only:
        log.append(bytes(4096))
    time.sleep(0.01)
    memprobe.step()
