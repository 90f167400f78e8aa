# expect: no_leak
# pattern: batched autoregressive sampling from a small GPT-style decoder (no optimizer, inference_mode); each layer's key/value cache is grown with torch.cat on every generated token, so memory climbs steadily for a few seconds per prompt batch, but the cache is a local of generate() and is dropped when the batch finishes (max_new_tokens caps it): a bounded sawtooth
# step_ms: 20
"""Sample continuations from a small decoder-only language model.

Uses a simple per-layer KV cache so every new token only needs one query
position. Prompts arrive in batches; each batch is generated to completion
(EOS for every row or max_new_tokens) before the next one starts.
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB = 4000
D_MODEL = 256
N_HEADS = 8
N_LAYERS = 6
MAX_NEW_TOKENS = 224
PROMPT_LEN = 32
BATCH = 16
N_BATCHES = 4
EOS = 0


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.mlp = nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(), nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x, cache):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D_MODEL, dim=-1)
        q, k, v = (t.view(B, T, N_HEADS, -1).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None)
        x = x + self.proj(att.transpose(1, 2).reshape(B, T, D_MODEL))
        x = x + self.mlp(self.ln2(x))
        return x, (k, v)


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Embedding(PROMPT_LEN + MAX_NEW_TOKENS, D_MODEL)
        self.blocks = nn.ModuleList(Block() for _ in range(N_LAYERS))
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx, start, caches):
        pos = torch.arange(start, start + idx.shape[1])
        x = self.tok(idx) + self.pos(pos)
        new_caches = []
        for block, cache in zip(self.blocks, caches):
            x, kv = block(x, cache)
            new_caches.append(kv)
        return self.head(self.ln_f(x[:, -1])), new_caches


@torch.inference_mode()
def generate(model, prompt, temperature=0.9, top_k=50):
    caches = [None] * N_LAYERS
    logits, caches = model(prompt, 0, caches)
    out = []
    finished = torch.zeros(prompt.shape[0], dtype=torch.bool)
    pos = prompt.shape[1]
    for _ in range(MAX_NEW_TOKENS):
        scaled = logits / temperature
        kth = scaled.topk(top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, -math.inf)
        nxt = torch.multinomial(scaled.softmax(-1), 1)
        nxt = torch.where(finished[:, None], torch.full_like(nxt, EOS), nxt)
        out.append(nxt)
        finished |= nxt[:, 0] == EOS
        if finished.all():
            break
        logits, caches = model(nxt, pos, caches)
        pos += 1
    return torch.cat(out, dim=1)


def main():
    model = TinyGPT().eval()
    t0 = time.time()
    total_tokens = 0
    for b in range(N_BATCHES):
        prompt = torch.randint(1, VOCAB, (BATCH, PROMPT_LEN))
        tb = time.time()
        tokens = generate(model, prompt)
        n = int((tokens != EOS).sum())
        total_tokens += n
        print(f"batch {b}: {tokens.shape[1]} steps, {n} tokens in {time.time() - tb:.1f}s "
              f"({n / (time.time() - tb):.0f} tok/s) t={time.time() - t0:.1f}s", flush=True)
    print(f"generated {total_tokens} tokens")


if __name__ == "__main__":
    main()
