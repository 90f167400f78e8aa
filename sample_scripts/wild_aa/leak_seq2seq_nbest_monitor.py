# expect: leak
# holder: DevMonitor.history|monitor.history|NBestEntry.hyps|Hypothesis.parent|history
# pattern: attention GRU encoder-decoder for a synthetic transliteration task (teacher forcing, torch.optim.Adam, ~30 ms steps, code in main() + Seq2Seq/BeamSearcher/DevMonitor classes); every 15 steps DevMonitor decodes 10 freshly sampled "live traffic" sentences with beam search (beam 5, n-best 5) under torch.no_grad() and appends NBestEntry(step, src, ref, hyps) to self.history for an end-of-run n-best stability / length-penalty report that only reads tokens, scores and per-token log-probs; but hyps are the search's Hypothesis nodes, whose parent chain is the whole path and whose .hidden / .logprobs fields are row views of each decoding step's (beam, hidden) state and (beam, vocab) log-softmax tensors, kept so that token_logp can be computed lazily; every stored n-best list therefore pins one full (5 x 1200) float32 log-prob matrix plus the decoder states for every decoding step of every monitored sentence, ~0.3 MB per sentence instead of a few hundred bytes
# step_ms: 30
"""Transliteration model (source sub-words -> target sub-words) with a live
n-best monitor.

The dev monitor decodes a few new sentences every 15 steps and remembers
their n-best lists, so that at the end we can report how often the 1-best
changes under different length penalties and how confident the model is.
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

SRC_V = 600
TGT_V = 1200
PAD, BOS, EOS = 0, 1, 2
EMB = 64
HID = 128
BATCH = 32
TRAIN_SECONDS = 16.0  # fixed wall-clock budget, like the nightly job
MONITOR_EVERY = 15
MONITOR_SENTENCES = 10


class TranslitTask:
    """Each source sub-word maps to one or two target sub-words (monotonic)."""

    def __init__(self, rng):
        self.rng = rng
        self.map1 = rng.integers(3, TGT_V, SRC_V)
        self.map2 = np.where(rng.random(SRC_V) < 0.3, rng.integers(3, TGT_V, SRC_V), -1)

    def sample(self):
        n = int(self.rng.integers(4, 11))
        src = self.rng.integers(3, SRC_V, n)
        out = []
        for t in src:
            out.append(int(self.map1[t]))
            if self.map2[t] >= 0:
                out.append(int(self.map2[t]))
        return src.tolist(), out

    def batch(self, b):
        pairs = [self.sample() for _ in range(b)]
        s_len = max(len(s) for s, _ in pairs)
        t_len = max(len(t) for _, t in pairs) + 2
        src = torch.full((b, s_len), PAD, dtype=torch.long)
        tgt = torch.full((b, t_len), PAD, dtype=torch.long)
        for i, (s, t) in enumerate(pairs):
            src[i, :len(s)] = torch.tensor(s)
            tgt[i, :len(t) + 2] = torch.tensor([BOS] + t + [EOS])
        return src, tgt


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb = nn.Embedding(SRC_V, EMB, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(TGT_V, EMB, padding_idx=PAD)
        self.encoder = nn.GRU(EMB, HID // 2, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(HID, HID)
        self.cell = nn.GRUCell(EMB + HID, HID)
        self.att_q = nn.Linear(HID, HID, bias=False)
        self.out = nn.Linear(2 * HID, TGT_V)

    def encode(self, src):
        enc, _ = self.encoder(self.src_emb(src))
        mask = src != PAD
        h0 = torch.tanh(self.bridge((enc * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)))
        return enc, mask, h0

    def step(self, tok, h, ctx, enc, mask):
        h = self.cell(torch.cat([self.tgt_emb(tok), ctx], -1), h)
        scores = torch.bmm(enc, self.att_q(h).unsqueeze(-1)).squeeze(-1).masked_fill(~mask, -1e9)
        attn = scores.softmax(-1)
        ctx = torch.bmm(attn.unsqueeze(1), enc).squeeze(1)
        return h, ctx, attn

    def forward(self, src, tgt_in):
        enc, mask, h = self.encode(src)
        ctx = torch.zeros(src.shape[0], HID)
        states = []
        for t in range(tgt_in.shape[1]):
            h, ctx, _ = self.step(tgt_in[:, t], h, ctx, enc, mask)
            states.append(torch.cat([h, ctx], -1))
        return self.out(torch.stack(states, 1))


class Hypothesis:
    __slots__ = ("token", "score", "parent", "hidden", "ctx", "attn", "logprobs", "length")

    def __init__(self, token, score, parent, hidden, ctx, attn, logprobs):
        self.token = token
        self.score = score
        self.parent = parent
        self.hidden = hidden
        self.ctx = ctx
        self.attn = attn
        self.logprobs = logprobs  # distribution this token was drawn from (lazy confidence)
        self.length = 0 if parent is None else parent.length + 1

    @property
    def token_logp(self):
        return float(self.logprobs[self.token]) if self.logprobs is not None else 0.0

    def tokens(self):
        node, out = self, []
        while node.parent is not None:
            out.append(node.token)
            node = node.parent
        return out[::-1]

    def path(self):
        node, out = self, []
        while node.parent is not None:
            out.append(node)
            node = node.parent
        return out[::-1]


class BeamSearcher:
    def __init__(self, model, beam=5, n_best=5):
        self.model = model
        self.beam = beam
        self.n_best = n_best

    @torch.no_grad()
    def search(self, src_tokens):
        m = self.model
        src = torch.tensor([src_tokens])
        enc, mask, h0 = m.encode(src)
        root = Hypothesis(BOS, 0.0, None, h0[0], torch.zeros(HID), None, None)
        live, finished = [root], []
        max_len = 2 * len(src_tokens) + 4
        for _ in range(max_len):
            k = len(live)
            tok = torch.tensor([hyp.token for hyp in live])
            h = torch.stack([hyp.hidden for hyp in live])
            ctx = torch.stack([hyp.ctx for hyp in live])
            h, ctx, attn = m.step(tok, h, ctx, enc.expand(k, -1, -1), mask.expand(k, -1))
            logp = F.log_softmax(m.out(torch.cat([h, ctx], -1)), -1)
            total = logp + torch.tensor([hyp.score for hyp in live])[:, None]
            top_v, top_i = total.view(-1).topk(2 * self.beam)
            new_live = []
            for v, i in zip(top_v.tolist(), top_i.tolist()):
                b, t = divmod(i, TGT_V)
                hyp = Hypothesis(t, v, live[b], h[b], ctx[b], attn[b], logp[b])
                if t == EOS:
                    finished.append(hyp)
                elif len(new_live) < self.beam:
                    new_live.append(hyp)
            live = new_live
            if len(finished) >= self.n_best or not live:
                break
        finished.extend(live)
        finished.sort(key=lambda hyp: hyp.score / (hyp.length ** 0.6), reverse=True)
        return finished[: self.n_best]


class NBestEntry:
    def __init__(self, step, src, ref, hyps):
        self.step = step
        self.src = src
        self.ref = ref
        self.hyps = hyps


class DevMonitor:
    def __init__(self, searcher, task):
        self.searcher = searcher
        self.task = task
        self.history = []

    def run(self, step, n):
        self.searcher.model.eval()
        exact = 0
        for _ in range(n):
            src, ref = self.task.sample()
            hyps = self.searcher.search(src)
            self.history.append(NBestEntry(step, src, ref, hyps))
            exact += hyps[0].tokens()[:-1] == list(ref)
        self.searcher.model.train()
        return exact / n

    def report(self):
        flips = {0.0: 0, 0.6: 0, 1.0: 0}
        conf = []
        for e in self.history:
            for alpha in flips:
                best = max(e.hyps, key=lambda hyp: hyp.score / max(1, hyp.length) ** alpha)
                flips[alpha] += best is not e.hyps[0]
            conf.append(np.mean([node.token_logp for node in e.hyps[0].path()]))
        n = max(1, len(self.history))
        return {a: f / n for a, f in flips.items()}, float(np.mean(conf)) if conf else float("nan")


def main():
    rng = np.random.default_rng(11)
    torch.manual_seed(11)
    task = TranslitTask(rng)
    model = Seq2Seq()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    monitor = DevMonitor(BeamSearcher(model), task)
    t0 = time.perf_counter()
    last = t0
    acc = 0.0
    step = 0
    while time.perf_counter() - t0 < TRAIN_SECONDS:
        step += 1
        src, tgt = task.batch(BATCH)
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, TGT_V), tgt[:, 1:].reshape(-1), ignore_index=PAD)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % MONITOR_EVERY == 0:
            acc = monitor.run(step, MONITOR_SENTENCES)
        if time.perf_counter() - last > 2.0:
            print(f"step {step:4d}  loss {loss.item():.3f}  ppl {math.exp(min(20, loss.item())):8.1f}  "
                  f"beam exact {acc:.2f}")
            last = time.perf_counter()
    flips, conf = monitor.report()
    print(f"done in {time.perf_counter() - t0:.1f}s; 1-best flip rate by length penalty {flips}, "
          f"mean token logp {conf:.3f}")


if __name__ == "__main__":
    main()
