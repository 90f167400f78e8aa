"""A toy environment whose ``step`` is the run's step (``stepon_envs.cartpole:CartPole.step``).

``leak=True`` keeps every observation in ``self.trajectory`` (~8 KiB a step).
"""

import time


class CartPole:
    def __init__(self, leak: bool) -> None:
        self.leak = leak
        self.trajectory: list[list[float]] = []

    def step(self, action: int) -> list[float]:
        obs = [float(action)] * 1000
        if self.leak:
            self.trajectory.append(obs)
        time.sleep(0.01)
        return obs
