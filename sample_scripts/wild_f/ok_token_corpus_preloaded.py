# expect: no_leak
# holder: none
# pattern: ~250 MB tokenised corpus (uint16 array) synthesised and held in RAM once at start-up, then a steady next-token LM loop sampling random windows from it; only float losses kept (small transformer, torch.optim.AdamW)
# step_ms: 100
"""Small GPT-style language model trained on a pre-tokenised corpus held in RAM.

Like nanoGPT's ``train.bin``, the whole corpus is one flat array of token
ids; each step samples ``BATCH`` random windows of ``CTX + 1`` tokens.
Here the corpus is synthesised at start-up (a Zipfian unigram stream with
some injected bigram structure) instead of being read from disk, so the
process pays ~250 MB once before the first step.

After that the loop only allocates per-step activations that are freed
when the step ends: windows are copied out of the big array with fancy
indexing (no views that pin anything), AdamW state is created at step 1,
and the loss history is a list of Python floats that is averaged every
``LOG_EVERY`` steps and then cleared.
"""
import math
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)

VOCAB = 2048
N_TOKENS = 125_000_000        # uint16 -> ~250 MB
CTX = 64
BATCH = 16
D = 128
LAYERS = 2
HEADS = 4
STEPS = 150
LOG_EVERY = 20


def build_corpus(seed=0):
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, VOCAB + 1)
    p = 1.0 / ranks ** 1.1
    cdf = np.cumsum(p / p.sum())
    # inverse-CDF sampling through a 16-bit lookup table (much faster than rng.choice(p=...))
    lut = np.searchsorted(cdf, (np.arange(1 << 16) + 0.5) / (1 << 16)).clip(0, VOCAB - 1).astype(np.uint16)
    corpus = np.empty(N_TOKENS, dtype=np.uint16)
    chunk = 10_000_000
    for start in range(0, N_TOKENS, chunk):
        n = min(chunk, N_TOKENS - start)
        toks = lut[rng.integers(0, 1 << 16, size=n, dtype=np.uint16)]
        # deterministic bigrams: after token t often comes (7t + 3) % VOCAB
        follow = rng.random(n) < 0.35
        toks[1:][follow[1:]] = ((toks[:-1][follow[1:]].astype(np.int64) * 7 + 3) % VOCAB)
        corpus[start:start + n] = toks
    return corpus


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, HEADS, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.zeros(CTX, D))
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB, bias=False)
        self.register_buffer("mask", torch.triu(torch.full((CTX, CTX), float("-inf")), 1))

    def forward(self, idx):
        x = self.tok(idx) + self.pos[: idx.shape[1]]
        for blk in self.blocks:
            x = blk(x, self.mask)
        return self.head(self.ln_f(x))


def get_batch(corpus, rng):
    starts = rng.integers(0, len(corpus) - CTX - 1, size=BATCH)
    win = corpus[starts[:, None] + np.arange(CTX + 1)].astype(np.int64)
    win = torch.from_numpy(win)
    return win[:, :-1], win[:, 1:]


def lr_at(step, base=1e-3, warmup=30):
    if step < warmup:
        return base * (step + 1) / warmup
    return base * 0.5 * (1 + math.cos(math.pi * (step - warmup) / (STEPS - warmup)))


def main():
    t0 = time.time()
    corpus = build_corpus()
    print(f"corpus: {len(corpus):,} tokens, {corpus.nbytes / 2**20:.0f} MiB, "
          f"built in {time.time() - t0:.1f}s", flush=True)

    rng = np.random.default_rng(1)
    model = GPT()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-3, betas=(0.9, 0.95))
    losses = []
    t0 = time.time()
    for step in range(STEPS):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x, y = get_batch(corpus, rng)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if (step + 1) % LOG_EVERY == 0:
            print(f"step {step + 1:4d}  loss {sum(losses) / len(losses):.3f}  "
                  f"lr {lr_at(step):.2e}  {time.time() - t0:.1f}s", flush=True)
            losses.clear()
    print("done", f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
