# expect: no_leak
# holder:
# pattern: card-transaction fraud-scoring worker (MLP under torch.inference_mode, no optimizer, ~2 ms per request of 64 transactions x 256 features, code in main() as the client + a ScoringWorker threading.Thread whose run() owns the worker state); looks suspicious because run() keeps every sent response with its request tensor in a local dict unacked[request_id] for re-delivery, but the client acknowledges in batches on a text control line ("ACK 17 18 19 ...") that the worker parses with int(), so entries are dropped within ~24 requests and the dict never holds more than a few dozen requests; memory is flat after start-up
# step_ms: 2
"""Fraud-scoring worker with batched acknowledgements.

The gateway pushes micro-batches of card transactions to a scoring thread.
Responses are kept by the worker until the gateway acknowledges them; the
gateway sends one control line per flush listing all request ids it has
durably logged, or "NACK <id>" to get a response delivered again.
"""
import argparse
import queue
import threading
import time

import numpy as np
import torch
import torch.nn as nn

N_FEAT = 256


class FraudMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(N_FEAT, 512), nn.ReLU(),
            nn.Linear(512, 256), nn.ReLU(),
            nn.Linear(256, 1),
        )

    def forward(self, x):
        return torch.sigmoid(self.net(x)).squeeze(1)


class ScoringWorker(threading.Thread):
    def __init__(self, model, inbox, outbox, control):
        super().__init__(name="fraud-scorer", daemon=True)
        self.model, self.inbox, self.outbox, self.control = model, inbox, outbox, control
        self.report = {}

    def _apply_control(self, unacked, stats):
        while True:
            try:
                line = self.control.get_nowait()
            except queue.Empty:
                return
            verb, *ids = line.split()
            for tok in ids:
                rid = int(tok)
                if verb == "ACK":
                    if unacked.pop(rid, None) is not None:
                        stats["acked"] += 1
                elif verb == "NACK" and rid in unacked:
                    self.outbox.put(unacked[rid][1])
                    stats["redelivered"] += 1

    def run(self):
        unacked = {}
        stats = {"scored": 0, "acked": 0, "redelivered": 0, "max_unacked": 0}
        while True:
            self._apply_control(unacked, stats)
            try:
                item = self.inbox.get(timeout=0.05)
            except queue.Empty:
                continue
            if item is None:
                break
            rid, x = item
            with torch.inference_mode():
                scores = self.model(x)
            resp = (rid, scores)
            unacked[rid] = (x, resp)
            stats["max_unacked"] = max(stats["max_unacked"], len(unacked))
            self.outbox.put(resp)
            stats["scored"] += 1
        self._apply_control(unacked, stats)
        stats["left_unacked"] = len(unacked)
        self.report = stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=11000, help="number of requests")
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--ack-every", type=int, default=16)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(4)

    model = FraudMLP().eval()
    inbox, outbox, control = queue.Queue(maxsize=8), queue.Queue(), queue.Queue()
    worker = ScoringWorker(model, inbox, outbox, control)
    worker.start()

    to_ack = []
    flagged = 0
    t0 = time.time()
    for rid in range(1, args.steps + 1):
        x = torch.from_numpy(rng.normal(size=(args.rows, N_FEAT)).astype(np.float32))
        inbox.put((rid, x))
        last = rid == args.steps
        while True:
            try:
                got_id, scores = outbox.get(timeout=0.5 if last and to_ack != [] else 0.001)
            except queue.Empty:
                break
            if rng.random() < 0.01:
                control.put(f"NACK {got_id}")
                continue
            flagged += int((scores > 0.5).sum())
            to_ack.append(got_id)
            if last and got_id == rid:
                break
        if len(to_ack) >= args.ack_every or last:
            control.put("ACK " + " ".join(str(i) for i in to_ack))
            to_ack = []
        if rid % 2000 == 0:
            print(f"request {rid:5d}  flagged {flagged}  {time.time() - t0:.1f}s", flush=True)
    inbox.put(None)
    worker.join()
    print(f"worker report: {worker.report}")


if __name__ == "__main__":
    main()
