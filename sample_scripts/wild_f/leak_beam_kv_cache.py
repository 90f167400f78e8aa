# expect: leak
# holder: kv_cache
# pattern: beam-search decoding service (inference only, no optimizer) keeps each request's per-layer key/value tensors in a dict closed over by generate(), keyed by request id "for follow-up turns"; finished requests are never evicted
# step_ms: 55
"""Beam-search decoding with an incremental key/value cache.

A small decoder-only transformer LM serves a stream of "requests".  Each
request carries a prompt; ``generate`` runs the prompt through the model
once, then extends ``BEAMS`` hypotheses token by token, reusing per-layer
key/value tensors so each new token costs O(t) instead of O(t^2).
Beams are reordered with ``index_select`` on the cached K/V after each
top-k, just like Hugging Face's ``_reorder_cache``.

Some chat clients send a follow-up turn for the same request id, so
``make_generator`` keeps the final K/V cache of every request in
``kv_cache`` (a dict in the enclosing scope of the ``generate`` closure):
a follow-up only has to run its new tokens through the model.

Why it leaks: entries are added for every request and nothing ever removes
them (no ``pop`` when the conversation ends, no size cap).  Only a few
percent of ids ever come back, yet each finished request pins
LAYERS x 2 x BEAMS x HEADS x T x HEAD_DIM float32 tensors (~0.7 MB).

Fix: evict on completion / after a TTL, or keep an LRU of a few dozen ids.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

VOCAB = 2000
D_MODEL = 128
HEADS = 4
HEAD_DIM = D_MODEL // HEADS
LAYERS = 3
BEAMS = 4
MAX_NEW = 24
N_REQUESTS = 320


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.mlp = nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(),
                                 nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x, past=None):
        # x: (B, T_new, D); past: (k, v) each (B, H, T_past, Dh)
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D_MODEL, dim=-1)
        q = q.view(B, T, HEADS, HEAD_DIM).transpose(1, 2)
        k = k.view(B, T, HEADS, HEAD_DIM).transpose(1, 2)
        v = v.view(B, T, HEADS, HEAD_DIM).transpose(1, 2)
        if past is not None:
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        causal = past is None and T > 1
        att = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        att = att.transpose(1, 2).reshape(B, T, D_MODEL)
        x = x + self.proj(att)
        x = x + self.mlp(self.ln2(x))
        return x, (k, v)


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Embedding(512, D_MODEL)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.lm_head.weight = self.tok.weight
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, ids, past=None, offset=0):
        pos = torch.arange(offset, offset + ids.shape[1])
        x = self.tok(ids) + self.pos(pos)
        new_past = []
        for i, blk in enumerate(self.blocks):
            x, kv = blk(x, None if past is None else past[i])
            new_past.append(kv)
        return self.lm_head(self.ln_f(x)), new_past


def reorder_cache(past, beam_idx):
    return [(k.index_select(0, beam_idx), v.index_select(0, beam_idx)) for k, v in past]


def make_generator(model):
    kv_cache = {}   # request_id -> (past, last_token, length)

    @torch.inference_mode()
    def generate(request_id, prompt_ids, length_penalty=0.8):
        if request_id in kv_cache:
            past, offset = kv_cache[request_id]
            logits, past = model(prompt_ids.expand(BEAMS, -1), past, offset)
        else:
            logits, past = model(prompt_ids.expand(BEAMS, -1))
        offset = past[0][0].shape[2]
        logp = F.log_softmax(logits[:, -1], dim=-1)

        # first step: all beams are identical, take top-BEAMS from beam 0
        scores, tokens = logp[0].topk(BEAMS)
        seqs = tokens.unsqueeze(1)
        for t in range(1, MAX_NEW):
            logits, past = model(seqs[:, -1:], past, offset)
            offset += 1
            logp = F.log_softmax(logits[:, -1], dim=-1)
            cand = (scores.unsqueeze(1) + logp).view(-1)
            scores, flat = cand.topk(BEAMS)
            beam_idx = torch.div(flat, VOCAB, rounding_mode="floor")
            tok = flat % VOCAB
            seqs = torch.cat([seqs.index_select(0, beam_idx), tok.unsqueeze(1)], dim=1)
            past = reorder_cache(past, beam_idx)

        normed = scores / (seqs.shape[1] ** length_penalty)
        best = int(normed.argmax())
        # keep the state around so a follow-up turn can continue cheaply
        kv_cache[request_id] = (past, offset)
        return seqs[best].tolist(), float(normed[best])

    return generate


def request_stream(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    for i in range(n):
        if i > 10 and torch.rand(1, generator=g).item() < 0.04:
            rid = f"req-{int(torch.randint(i - 10, i, (1,), generator=g)):06d}"   # follow-up turn
            plen = int(torch.randint(4, 12, (1,), generator=g))
        else:
            rid = f"req-{i:06d}"
            plen = int(torch.randint(16, 64, (1,), generator=g))
        yield rid, torch.randint(VOCAB, (1, plen), generator=g)


def main():
    model = TinyLM().eval()
    generate = make_generator(model)
    t0 = time.time()
    latencies = []
    for i, (rid, prompt) in enumerate(request_stream(N_REQUESTS)):
        ts = time.perf_counter()
        out, score = generate(rid, prompt)
        latencies.append(time.perf_counter() - ts)
        if i % 20 == 0:
            p50 = sorted(latencies[-20:])[len(latencies[-20:]) // 2] * 1000
            print(f"req {i:4d} {rid}  prompt {prompt.shape[1]:3d}  out {out[:5]}...  "
                  f"score {score:.3f}  p50 {p50:.0f} ms  {time.time() - t0:.1f}s", flush=True)
    print("served", N_REQUESTS, "requests in", f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
