# expect: leak
# holder: hidden|scorer
# pattern: GRU hidden state carried across chunks, never detached, no no_grad (no optimizer)
# step_ms: 1.6
"""Online anomaly scoring of 4 telemetry streams with a (pretrained-ish) GRU.

Each tick we get a short chunk of every stream, run the GRU from the state
left by the previous chunk, and score how surprising the next value is. There
is no training here (no optimizer, no backward), but the script never enters
``torch.no_grad()`` and ``StreamScorer.hidden`` is fed back as is: the new
hidden state's ``grad_fn`` points at the previous chunk's graph, which points
at the one before... The whole history of the stream stays in memory.

Fix: wrap scoring in ``torch.inference_mode()`` (or at least
``self.hidden = h.detach()``).
"""

import argparse
import math
import time

import torch
from torch import nn


class Predictor(nn.Module):
    def __init__(self, n_feat, hidden):
        super().__init__()
        self.cell = nn.GRUCell(n_feat, hidden)
        self.head = nn.Linear(hidden, n_feat)

    def forward(self, x, h):
        outs = []
        for i in range(x.shape[1]):
            h = self.cell(x[:, i], h)
            outs.append(h)
        return self.head(torch.stack(outs, 1)), h


class StreamScorer:
    def __init__(self, model, n_streams, hidden):
        self.model = model.eval()
        self.hidden = torch.zeros(n_streams, hidden)
        self.last = None
        self.ticks = 0

    def update(self, chunk):
        pred, self.hidden = self.model(chunk, self.hidden)
        score = None
        if self.last is not None:
            err = (pred[:, :-1] - chunk[:, 1:]).pow(2).mean(dim=(1, 2))
            score = err
        self.last = pred
        self.ticks += 1
        return score


def telemetry(n_streams, n_feat, chunk, seed, poll_s):
    g = torch.Generator().manual_seed(seed)
    base = torch.rand(n_streams, 1, n_feat, generator=g) * 2 * math.pi
    t = 0
    while True:
        ts = torch.arange(t, t + chunk, dtype=torch.float32).view(1, chunk, 1)
        x = torch.sin(0.05 * ts + base) + 0.05 * torch.randn(n_streams, chunk, n_feat, generator=g)
        if torch.rand(1, generator=g).item() < 0.002:  # a glitch now and then
            x[:, -1] += 3.0
        t += chunk
        time.sleep(poll_s)  # the collector delivers a chunk every millisecond or so
        yield x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ticks", type=int, default=8000)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--features", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--poll-ms", type=float, default=1.0)
    ap.add_argument("--chunk", type=int, default=2)
    ap.add_argument("--threshold", type=float, default=1.5)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(3)
    model = Predictor(args.features, args.hidden)
    scorer = StreamScorer(model, args.streams, args.hidden)
    alarms = 0
    t0 = time.time()
    for tick, chunk in enumerate(
        telemetry(args.streams, args.features, args.chunk, 3, args.poll_ms / 1000)
    ):
        if tick >= args.ticks:
            break
        score = scorer.update(chunk)
        if score is not None and (score > args.threshold).any():
            alarms += 1
        if tick % 1500 == 0:
            print(f"tick {tick:6d} alarms {alarms:3d} ({time.time() - t0:.1f}s)", flush=True)
    print(f"{scorer.ticks} ticks scored, {alarms} alarms")


if __name__ == "__main__":
    main()
