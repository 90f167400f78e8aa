"""A tiny leak that runs on any Python (2.7 too): 300 steps, each keeps a list of strings.

Steps are marked through the agent's module when it is loaded (``memprobe.step()`` is not
importable in a foreign interpreter); without an agent it just runs.
"""

import sys
import time

agent = sys.modules.get("memprobe_agent")
kept = []
for _ in range(300):
    kept.append([str(j) for j in range(50)])
    if agent is not None:
        agent.step()
    time.sleep(0.004)
print("done")
