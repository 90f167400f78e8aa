# expect: no_leak
# pattern: multi-market intent classifier (shared hashed-n-gram encoder + one MLP head per market, torch.optim.AdamW): a market's head is created lazily the first time its traffic shows up and registered with opt.add_param_group, so parameters, gradients and AdamW moments grow by ~4.5 MB per market; markets launch one after another over the first ~half of the run (16 in total, a finite list) and after the last launch the set of heads, and memory, stays fixed
# step_ms: 45
"""Intent classification across markets that launch over time.

Utterances are bags of hashed word/char n-gram ids; the encoder is shared and
each market (locale) has its own label set and classification head.  The
traffic mix follows the launch calendar: a market contributes examples only
after its launch step.
"""
import argparse
import functools
import itertools
import logging
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("intents")

N_HASH = 20_000
EMB = 128
N_MARKETS = 16
N_INTENTS = 300
TOKENS = 24


@dataclass(frozen=True)
class Market:
    idx: int
    launch_step: int
    name: str


class SharedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(N_HASH, EMB, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(EMB, 512), nn.GELU(), nn.LayerNorm(512),
                                 nn.Linear(512, 256), nn.GELU())

    def forward(self, ids):
        return self.mlp(self.bag(ids))


def make_head():
    return nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Dropout(0.1), nn.Linear(512, N_INTENTS))


class IntentModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = SharedEncoder()
        self.heads = nn.ModuleDict()


class MarketTraffic:
    """Synthetic utterances: each (market, intent) has a set of characteristic n-grams."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        r = np.random.default_rng(99)
        self.proto = r.integers(0, N_HASH, size=(N_MARKETS, N_INTENTS, 12))
        self.market_vocab = r.integers(0, N_HASH, size=(N_MARKETS, 400))

    def batch(self, markets, n):
        m = self.rng.choice([mk.idx for mk in markets], size=n)
        y = self.rng.integers(0, N_INTENTS, size=n)
        ids = self.rng.integers(0, N_HASH, size=(n, TOKENS))          # background noise tokens
        k = self.rng.integers(5, 10)
        ids[:, :k] = self.proto[m, y][:, self.rng.permutation(12)[:k]]  # intent-specific n-grams
        ids[:, k:k + 6] = self.market_vocab[m[:, None], self.rng.integers(0, 400, (n, 6))]
        return torch.from_numpy(ids), torch.from_numpy(m), torch.from_numpy(y)


def get_head(model, opt, market, lr):
    key = market.name
    if key not in model.heads:
        head = make_head()
        model.heads[key] = head
        opt.add_param_group({"params": list(head.parameters()), "lr": lr, "weight_decay": 0.01})
        n = sum(p.numel() for p in head.parameters())
        log.info("launched head for %s (%.2fM params, %d heads now)", key, n / 1e6, len(model.heads))
    return model.heads[key]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=340)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--launch-frac", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=4e-3)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    torch.manual_seed(0)

    locales = ["en-US", "en-GB", "de-DE", "fr-FR", "es-ES", "it-IT", "pt-BR", "ja-JP",
               "ko-KR", "nl-NL", "sv-SE", "pl-PL", "tr-TR", "hi-IN", "id-ID", "vi-VN"]
    gap = int(args.launch_frac * args.steps / (N_MARKETS - 1))
    calendar = [Market(i, i * gap, name) for i, name in enumerate(locales)]

    model = IntentModel()
    opt = torch.optim.AdamW(model.encoder.parameters(), lr=args.lr, weight_decay=0.01)
    head_for = functools.partial(get_head, model, opt, lr=args.lr)
    traffic = MarketTraffic(seed=1)
    acc_window = []
    t0 = time.perf_counter()

    for step in range(args.steps):
        live = list(itertools.takewhile(lambda mk: mk.launch_step <= step, calendar))
        ids, m, y = traffic.batch(live, args.batch)
        z = model.encoder(ids)
        loss = z.new_zeros(())
        correct = 0
        for mk in live:
            sel = (m == mk.idx).nonzero(as_tuple=True)[0]
            if len(sel) == 0:
                continue
            logits = head_for(mk)(z[sel])
            loss = loss + F.cross_entropy(logits, y[sel], reduction="sum")
            correct += int((logits.argmax(1) == y[sel]).sum())
        loss = loss / args.batch
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc_window.append(correct / args.batch)

        if (step + 1) % 40 == 0:
            log.info("step %4d  markets %2d  loss %.3f  acc %.3f  %.1f ms/step", step + 1, len(live),
                     loss.item(), float(np.mean(acc_window[-40:])),
                     1000 * (time.perf_counter() - t0) / (step + 1))

    log.info("done: %d heads, %d param groups", len(model.heads), len(opt.param_groups))


if __name__ == "__main__":
    main()
