# expect: leak
# holder: _pending|pending
# pattern: asyncio micro-batching inference server (no optimizer, inference_mode) registers every request as request_id -> (future, input tensor) in self._pending; the batcher resolves the futures with the output logits but never pops the entries, so each request's input image and result stay alive
# step_ms: 25
"""Dynamic batching for model inference with asyncio.

Clients call ``await server.infer(image)``; the server puts the request on
an asyncio.Queue and a single batcher task collects up to ``MAX_BATCH``
requests (or whatever arrived within ``MAX_WAIT``), runs the model once on
the stacked batch and resolves each request's future with its row of the
output.  ``self._pending`` maps request id -> (future, input) so that
``cancel()`` and ``status()`` can look requests up; finished requests are
supposed to be removed, but nothing ever removes them.
"""
import asyncio
import itertools
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

IMG = 32
NUM_CLASSES = 100
MAX_BATCH = 32
MAX_WAIT = 0.002
NUM_CLIENTS = 32
REQUESTS_PER_CLIENT = 330


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 96, 3, padding=1), nn.ReLU(),
        )
        self.head = nn.Linear(96, NUM_CLASSES)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=(2, 3)))


class BatchingServer:
    def __init__(self, model):
        self.model = model.eval()
        self._queue = asyncio.Queue()
        self._pending = {}
        self._ids = itertools.count()
        self.batches_run = 0
        self.items_served = 0
        self._task = None

    def start(self):
        self._task = asyncio.create_task(self._batch_loop())

    async def stop(self):
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass

    async def infer(self, image):
        req_id = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[req_id] = (fut, image)
        await self._queue.put(req_id)
        return await fut

    def status(self, req_id):
        fut, _ = self._pending[req_id]
        return "done" if fut.done() else "pending"

    async def _collect(self):
        first = await self._queue.get()
        ids = [first]
        deadline = time.monotonic() + MAX_WAIT
        while len(ids) < MAX_BATCH:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                break
            try:
                ids.append(await asyncio.wait_for(self._queue.get(), timeout))
            except asyncio.TimeoutError:
                break
        return ids

    async def _batch_loop(self):
        while True:
            ids = await self._collect()
            live = [i for i in ids if not self._pending[i][0].cancelled()]
            if not live:
                continue
            batch = torch.stack([self._pending[i][1] for i in live])
            with torch.inference_mode():
                probs = F.softmax(self.model(batch), dim=1)
            for row, req_id in zip(probs, live):
                fut, _ = self._pending[req_id]
                if not fut.done():
                    fut.set_result(row.clone())
            self.batches_run += 1
            self.items_served += len(live)
            # let the clients run before collecting the next batch
            await asyncio.sleep(0)


async def client(server, client_id, stats):
    rng = np.random.default_rng(client_id)
    for _ in range(REQUESTS_PER_CLIENT):
        img = torch.from_numpy(rng.standard_normal((3, IMG, IMG), dtype=np.float32))
        probs = await server.infer(img)
        top = int(probs.argmax())
        stats[top] = stats.get(top, 0) + 1
        await asyncio.sleep(float(rng.uniform(0.0, 0.004)))


async def main():
    server = BatchingServer(Classifier())
    server.start()
    stats = {}
    t0 = time.time()
    await asyncio.gather(*(client(server, c, stats) for c in range(NUM_CLIENTS)))
    await server.stop()
    dt = time.time() - t0
    print(f"served {server.items_served} requests in {server.batches_run} batches, "
          f"{dt:.1f}s ({1000 * dt / max(server.batches_run, 1):.1f} ms/batch), "
          f"{len(stats)} distinct top-1 classes, pending table {len(server._pending)}")


if __name__ == "__main__":
    asyncio.run(main())
