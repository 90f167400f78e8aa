# expect: no_leak
# pattern: "Growing Neural Cellular Automata" training (Mordvintsev et al.) on a 32x32 RGBA lizard target drawn with Pillow (PyTorch CPU, torch.optim.Adam with per-parameter gradient normalisation + MultiStepLR, one thread; one step = one batch of 4 pool samples rolled out for a random 48-96 CA steps with backprop through the whole rollout, ~230 ms per step, code in main() + an NCA nn.Module + a SamplePool class); the sample pool of 1024 CA states (~67 MB float32) is allocated and filled with seeds once at start-up and batches are written back into it in place (pool.x[idx] = x.detach()), the worst sample of each batch is reseeded and one is damaged; the autograd graph of a step keeps every CA step's perception/hidden activations (~6 MB per CA step, up to ~600 MB for a 96-step rollout) alive until backward(), after which all of it is freed; RSS therefore jumps by ~600 MB within the first couple of steps (start-up pool + the allocator's high-water mark of the longest rollout, which glibc keeps for reuse instead of returning it) and then stays flat; only float losses are kept
# step_ms: 230
"""Growing Neural Cellular Automata with a sample pool.

A tiny per-cell update rule (Sobel perception + 1x1 conv MLP) is trained so
that a single seed cell grows into the target pattern and the pattern
persists; a pool of states and damage make the attractor stable.
"""

import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image, ImageDraw

torch.set_num_threads(1)
torch.manual_seed(0)

SIZE = 32
PAD = 3
CH = 16
POOL = 1024
BATCH = 4
N_STEPS = 64


def make_target():
    img = Image.new("RGBA", (SIZE - 2 * PAD, SIZE - 2 * PAD), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    s = SIZE - 2 * PAD
    d.ellipse((s * 0.2, s * 0.25, s * 0.8, s * 0.85), fill=(60, 170, 70, 255))          # body
    d.ellipse((s * 0.35, s * 0.05, s * 0.65, s * 0.35), fill=(80, 190, 90, 255))         # head
    d.ellipse((s * 0.40, s * 0.14, s * 0.46, s * 0.20), fill=(10, 10, 10, 255))          # eyes
    d.ellipse((s * 0.54, s * 0.14, s * 0.60, s * 0.20), fill=(10, 10, 10, 255))
    for cx in (0.22, 0.78):
        d.ellipse((s * (cx - 0.12), s * 0.55, s * (cx + 0.12), s * 0.7), fill=(50, 140, 60, 255))
    d.line((s * 0.5, s * 0.8, s * 0.5, s * 0.98), fill=(60, 170, 70, 255), width=3)    # tail
    a = np.asarray(img, dtype=np.float32) / 255.0
    a[..., :3] *= a[..., 3:]                                                              # premultiplied
    t = torch.from_numpy(a).permute(2, 0, 1)
    return F.pad(t, (PAD, PAD, PAD, PAD))


class NCA(nn.Module):
    def __init__(self, ch=CH, hidden=96, fire_rate=0.5):
        super().__init__()
        self.ch = ch
        self.fire_rate = fire_rate
        ident = torch.tensor([[0, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=torch.float32)
        sobel = torch.tensor([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=torch.float32) / 8
        k = torch.stack([ident, sobel, sobel.T])                        # (3, 3, 3)
        self.register_buffer("kernel", k.repeat(ch, 1, 1).unsqueeze(1))  # (3*ch, 1, 3, 3)
        self.fc1 = nn.Conv2d(3 * ch, hidden, 1)
        self.fc2 = nn.Conv2d(hidden, ch, 1, bias=False)
        nn.init.zeros_(self.fc2.weight)

    def alive(self, x):
        return F.max_pool2d(x[:, 3:4], 3, stride=1, padding=1) > 0.1

    def forward(self, x):
        pre = self.alive(x)
        y = F.conv2d(x, self.kernel, padding=1, groups=self.ch)
        dx = self.fc2(F.relu(self.fc1(y)))
        mask = (torch.rand(x.shape[0], 1, x.shape[2], x.shape[3]) < self.fire_rate).float()
        x = x + dx * mask
        post = self.alive(x)
        return x * (pre & post).float()


class SamplePool:
    def __init__(self, seed, n):
        self.x = seed.unsqueeze(0).repeat(n, 1, 1, 1).contiguous()
        self.seed = seed

    def sample(self, k):
        idx = torch.randint(0, self.x.shape[0], (k,))
        return idx, self.x[idx].clone()

    def commit(self, idx, x):
        self.x[idx] = x


def damage(x, rng):
    yy, xx = torch.meshgrid(torch.arange(SIZE), torch.arange(SIZE), indexing="ij")
    cy, cx = rng.uniform(0.3, 0.7, size=2) * SIZE
    r = rng.uniform(0.1, 0.3) * SIZE
    keep = ((yy - cy) ** 2 + (xx - cx) ** 2) > r * r
    return x * keep.float()


def main():
    rng = np.random.default_rng(0)
    target = make_target()
    seed = torch.zeros(CH, SIZE, SIZE)
    seed[3:, SIZE // 2, SIZE // 2] = 1.0
    pool = SamplePool(seed, POOL)
    model = NCA()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [N_STEPS // 2], gamma=0.3)
    losses = []
    t0 = last = time.perf_counter()
    for step in range(N_STEPS):
        idx, x = pool.sample(BATCH)
        with torch.no_grad():
            per = ((x[:, :4] - target) ** 2).mean(dim=(1, 2, 3))
            worst = int(per.argmax())
            x[worst] = seed
            if step > 10:
                for j in np.argsort(per.numpy())[:1]:
                    x[j] = damage(x[j], rng)
        n_ca = int(rng.integers(48, 97))
        for _ in range(n_ca):
            x = model(x)
        loss = ((x[:, :4] - target) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.grad /= p.grad.norm() + 1e-8
        opt.step()
        sched.step()
        pool.commit(idx, x.detach())
        losses.append(loss.item())
        now = time.perf_counter()
        if now - last >= 1.0:
            last = now
            print(f"step {step:3d} ca_steps={n_ca} loss={losses[-1]:.5f} "
                  f"avg10={np.mean(losses[-10:]):.5f} lr={sched.get_last_lr()[0]:.1e}", flush=True)
    print(f"done: {N_STEPS} steps in {time.perf_counter() - t0:.1f}s, final loss {np.mean(losses[-10:]):.5f}")


if __name__ == "__main__":
    main()
