"""Leaks instances of a class whose name carries markup and terminal escapes, into a global
whose name does too, one per step; prints nothing (so every byte on stderr is memprobe's)."""

import sys
import time

import memprobe

EVIL = "[bold red]x[/]\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x08\r\u202eevil"
Evil = type(EVIL, (), {"__module__": EVIL})  # the census names it by module and qualname
globals()[EVIL] = holder = []
steps = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 150
for _ in range(steps):
    holder.append([Evil() for _ in range(20)])
    memprobe.step()
    time.sleep(0.01)
