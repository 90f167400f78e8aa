# expect: no_leak
# pattern: byte-level CNN language identifier on synthetic n-gram "languages" (torch.optim.RMSprop, ~17 ms steps, 16 s budget, code in main() + a module-level custom torch.autograd.Function FastSwish + ByteCNN); FastSwish.forward stores sigmoid(x) and its own output on ctx as plain attributes (ctx.sig, ctx.out) instead of ctx.save_for_backward, so every call makes a reference cycle output tensor -> grad_fn (the ctx node) -> ctx.__dict__ -> output, and the three stacked Swish layers chain these cycles through C++ graph edges, so each collector pass can only free the outermost layer and the rest is promoted to older generations; activations therefore pile up within an epoch (~1-3 MB per step), but the loop calls gc.collect() at the end of every 30-step epoch (with a tiny validation pass), which peels the pending cycles epoch by epoch, so RSS climbs for the first few epochs (~250 MB) and then saws at a fixed level - late freeing by the cyclic GC, not a leak
# step_ms: 17
"""Language identification from raw bytes with a small CNN.

FastSwish is a hand-written activation that caches sigmoid(x) and the
output from the forward pass so the backward pass needs no recomputation.
"""
import gc
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N_LANG = 12
SEQ = 128
BATCH = 16
STEPS_PER_EPOCH = 30
RUN_SECONDS = 16.0


class FastSwish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        sig = torch.sigmoid(x)
        out = x * sig
        ctx.sig = sig
        ctx.out = out
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad * (ctx.sig + ctx.out * (1 - ctx.sig))


class Swish(nn.Module):
    def forward(self, x):
        return FastSwish.apply(x)


class ByteCNN(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.emb = nn.Embedding(256, 48)
        self.convs = nn.ModuleList([
            nn.Conv1d(48, width, 5, padding=2),
            nn.Conv1d(width, width, 5, padding=2),
            nn.Conv1d(width, width, 3, padding=1, stride=2),
        ])
        self.act = Swish()
        self.norms = nn.ModuleList(nn.GroupNorm(8, width) for _ in self.convs)
        self.head = nn.Linear(2 * width, N_LANG)

    def forward(self, x):
        h = self.emb(x).transpose(1, 2)
        for conv, norm in zip(self.convs, self.norms):
            h = self.act(norm(conv(h)))
        return self.head(torch.cat([h.mean(-1), h.amax(-1)], dim=1))


class NgramLanguages:
    """Each language: its own alphabet subset, character bigram table and word-length habits."""

    def __init__(self, rng):
        self.rng = rng
        self.alphabets, self.bigrams, self.word_len = [], [], []
        for _ in range(N_LANG):
            letters = np.sort(rng.choice(np.arange(97, 123), size=rng.integers(18, 25), replace=False))
            extra = rng.choice(np.arange(192, 256), size=rng.integers(0, 5), replace=False)
            alpha = np.concatenate([letters, extra])
            big = rng.dirichlet(np.full(len(alpha), 1.5), size=len(alpha))
            self.alphabets.append(alpha)
            self.bigrams.append(big.cumsum(1))
            self.word_len.append(rng.uniform(3, 8))

    def sentence(self, lang):
        alpha, cum, wl = self.alphabets[lang], self.bigrams[lang], self.word_len[lang]
        out = []
        cur = self.rng.integers(len(alpha))
        while len(out) < SEQ:
            n = max(1, int(self.rng.poisson(wl)))
            u = self.rng.random(n)
            for k in range(n):
                cur = int(np.searchsorted(cum[cur], u[k]))
                cur = min(cur, len(alpha) - 1)
                out.append(int(alpha[cur]))
            out.append(32)
        return out[:SEQ]

    def batch(self, n):
        langs = self.rng.integers(0, N_LANG, n)
        x = torch.tensor([self.sentence(int(l)) for l in langs], dtype=torch.long)
        return x, torch.from_numpy(langs)


def main():
    rng = np.random.default_rng(17)
    torch.manual_seed(17)
    data = NgramLanguages(rng)
    val = data.batch(256)
    model = ByteCNN()
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, alpha=0.95)
    t0 = time.perf_counter()
    last = t0
    step = 0
    hist = []
    while time.perf_counter() - t0 < RUN_SECONDS:
        step += 1
        x, y = data.batch(BATCH)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        hist.append((loss.item(), (logits.argmax(1) == y).float().mean().item()))
        if step % STEPS_PER_EPOCH == 0:
            model.eval()
            with torch.no_grad():
                vx, vy = val
                val_acc = (model(vx).argmax(1) == vy).float().mean().item()
            model.train()
            # memory kept creeping up during long runs; a full collection per epoch keeps it flat
            gc.collect()
            if time.perf_counter() - last > 2.0:
                recent = np.array(hist[-STEPS_PER_EPOCH:])
                print(f"epoch {step // STEPS_PER_EPOCH:3d}  loss {recent[:, 0].mean():.3f}  "
                      f"train acc {recent[:, 1].mean():.3f}  val acc {val_acc:.3f}")
                last = time.perf_counter()
    print(f"done: {step} steps")


if __name__ == "__main__":
    main()
