"""Rolls out a toy environment from an imported module, no optimizer, no memprobe calls."""

import sys

from stepon_envs.cartpole import CartPole

steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 300
env = CartPole(leak="--leak" in sys.argv)
for i in range(steps):
    env.step(i % 2)
print(f"rolled out {steps} steps", flush=True)
sys.exit(3 if "--exit3" in sys.argv else 0)
