# expect: leak
# holder: TelemetryHub.clients|_transport._buffer|transport._buffer|writer
# pattern: asyncio host for a vectorised multi-agent foraging simulation used for RL evaluation (NumPy env + a fixed NumPy linear-tanh policy, no torch; one step = one simulation tick: physics, food pickup, policy, and a 96x96 RGB top-down render, ~7 ms, code in async main() + a ForagingEnv class + a TelemetryHub that streams frames over a Unix socket in a TemporaryDirectory to a live dashboard task that PIL-upscales and displays them at 30 fps). The hub pushes every tick's frame to every connected viewer with writer.write(frame) and deliberately never awaits writer.drain() ("never block the simulation on a slow viewer"); StreamWriter.write() never blocks or drops anything, it just appends whatever the socket cannot take right now to the transport's write buffer (a bytearray in _SelectorSocketTransport._buffer). The viewer consumes at most 30 frames/s while the simulation produces well over 100, so after the kernel socket buffers fill the un-sent frames accumulate in the transport buffer reachable from hub.clients, ~27 KB per tick (2-3 MB per second) for the whole run, although no Python-level queue exists anywhere in the program.
# step_ms: 7
"""Live dashboard for a multi-agent foraging simulation.

The simulation runs as fast as it can inside an asyncio program; a
TelemetryHub serves length-prefixed RGB frames over a Unix socket, and a
dashboard client (here a task in the same process) shows them at 30 fps.
"""
import asyncio
import os
import struct
import tempfile
import time

import numpy as np
import psutil
from PIL import Image

N_AGENTS = 320
N_FOOD = 640
WORLD = 1.0
RES = 96
N_TICKS = 2900
FRAME_HDR = struct.Struct("<IIIff")  # magic, tick, nbytes, mean reward, food left


def rss_mb():
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


class ForagingEnv:
    def __init__(self, rng):
        self.rng = rng
        self.pos = rng.random((N_AGENTS, 2))
        self.vel = np.zeros((N_AGENTS, 2))
        self.food = rng.random((N_FOOD, 2))
        self.energy = np.ones(N_AGENTS)
        self.W = rng.normal(0, 0.6, size=(10, 2))

    def observe(self):
        d = self.food[None, :, :] - self.pos[:, None, :]
        dist = np.sqrt((d ** 2).sum(-1)) + 1e-6
        nearest = np.argpartition(dist, 3, axis=1)[:, :3]
        rows = np.arange(N_AGENTS)[:, None]
        vec = (d[rows, nearest] / dist[rows, nearest, None]).reshape(N_AGENTS, 6)
        return np.concatenate([vec, self.vel, self.energy[:, None], np.ones((N_AGENTS, 1))], 1), dist

    def step(self):
        obs, dist = self.observe()
        # fixed evaluation policy: linear-tanh head + homing on the nearest food item
        act = np.tanh(obs @ self.W + 2.0 * obs[:, :2])
        self.vel = 0.85 * self.vel + 0.004 * act
        self.pos = (self.pos + self.vel) % WORLD
        eaten = dist.min(axis=0) < 0.012
        reward = np.zeros(N_AGENTS)
        if eaten.any():
            who = dist[:, eaten].argmin(axis=0)
            np.add.at(reward, who, 1.0)
            self.food[eaten] = self.rng.random((int(eaten.sum()), 2))
        self.energy = np.clip(self.energy - 0.002 + 0.2 * reward, 0, 1)
        return reward

    def render(self):
        img = np.zeros((RES, RES, 3), np.uint8)
        fx, fy = (self.food * (RES - 1)).astype(int).T
        img[fy, fx] = (40, 200, 40)
        ax, ay = (self.pos * (RES - 1)).astype(int).T
        shade = (80 + 175 * self.energy).astype(np.uint8)
        for dy in (0, 1):
            for dx in (0, 1):
                img[(ay + dy) % RES, (ax + dx) % RES, 0] = shade
                img[(ay + dy) % RES, (ax + dx) % RES, 2] = 255 - shade
        return img


class TelemetryHub:
    def __init__(self):
        self.clients = {}
        self.frames_sent = 0

    async def handle(self, reader, writer):
        peer = f"viewer-{len(self.clients)}"
        self.clients[peer] = writer
        try:
            await reader.read()  # viewers never send anything; wait for EOF
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.clients.pop(peer, None)
            writer.close()

    def publish(self, tick, frame, mean_reward, food_left):
        payload = frame.tobytes()
        msg = FRAME_HDR.pack(0xF00D, tick, len(payload), mean_reward, food_left) + payload
        for writer in list(self.clients.values()):
            # never block the simulation on a slow viewer: no drain() here
            writer.write(msg)
            self.frames_sent += 1


async def dashboard(path, stats):
    reader, writer = await asyncio.open_unix_connection(path)
    try:
        while True:
            hdr = await reader.readexactly(FRAME_HDR.size)
            magic, tick, n, mean_reward, food_left = FRAME_HDR.unpack(hdr)
            raw = await reader.readexactly(n)
            img = Image.frombuffer("RGB", (RES, RES), raw).resize((384, 384), Image.NEAREST)
            stats["shown"] += 1
            stats["last_tick"] = tick
            stats["brightness"] = float(np.asarray(img.convert("L")).mean())
            await asyncio.sleep(1 / 30)  # display refresh
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main():
    rng = np.random.default_rng(99)
    env = ForagingEnv(rng)
    hub = TelemetryHub()
    stats = {"shown": 0, "last_tick": 0, "brightness": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "telemetry.sock")
        server = await asyncio.start_unix_server(hub.handle, path)
        viewer = asyncio.create_task(dashboard(path, stats))
        while not hub.clients:
            await asyncio.sleep(0.01)
        total_reward = 0.0
        t0 = time.perf_counter()
        print(f"simulating {N_TICKS} ticks with {N_AGENTS} agents; "
              f"rss at loop start {rss_mb():.1f} MB", flush=True)
        for tick in range(N_TICKS):
            reward = env.step()
            total_reward += float(reward.sum())
            hub.publish(tick, env.render(), float(reward.mean()), float(N_FOOD))
            await asyncio.sleep(0)
            if (tick + 1) % 400 == 0:
                el = time.perf_counter() - t0
                print(f"  tick {tick + 1:5d}  food eaten {total_reward:6.0f}  "
                      f"{el / (tick + 1) * 1e3:.2f} ms/tick  dashboard shown {stats['shown']}  "
                      f"rss {rss_mb():.1f} MB", flush=True)
        print(f"loop done; rss at loop end {rss_mb():.1f} MB", flush=True)
        viewer.cancel()
        await asyncio.gather(viewer, return_exceptions=True)
        await asyncio.sleep(0.05)
        for w in list(hub.clients.values()):
            w.transport.abort()
        server.close()
        await server.wait_closed()


if __name__ == "__main__":
    asyncio.run(main())
