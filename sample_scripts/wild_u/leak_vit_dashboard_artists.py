# expect: leak
# holder: dashboard.ax_attn|dashboard.fig|ax.images|ax.collections|ax.lines
# pattern: tiny Vision Transformer on synthetic 32x32 shape images (torch.optim.AdamW, ~60 ms per step including the dashboard work, code in main() + TrainingDashboard/ViT classes) with a live training dashboard: one matplotlib figure (Agg) is created at start-up and every 4 steps TrainingDashboard.update() draws the CLS-attention overlay of 4 probe images with ax_attn.imshow(probe) + ax_attn.imshow(attn, alpha=0.55), the probe embeddings with ax_emb.scatter(...) and the loss curve with ax_loss.plot(all steps, all losses), and the figure is saved to a temp dir every 75 steps; the axes are never cleared (no ax.cla(), no set_data()), so every update adds two new AxesImage artists (a 192x192 float64 masked copy each, plus their RGBA caches after each savefig), a PathCollection and an ever longer Line2D to the persistent figure's axes; the figure looks right because the newest artists are drawn on top
# step_ms: 60
"""Tiny ViT on synthetic shapes with a live attention dashboard.

Images are 32x32 grey-scale renders of four shape classes (disc, square,
triangle, cross) with random position, size, contrast and noise. The model
is a 2-layer ViT (4x4 patches, 64-d tokens, CLS token). While it trains, a
dashboard figure shows the loss curve, the CLS attention of the last layer
over four fixed probe images, and a 2-D PCA of the probe-set CLS
embeddings; it is written to disk periodically so it can be watched from
another terminal.

Main options (defaults):
    --steps 300 --plot-every 4
"""
import argparse
import math
import os
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

CFG = dict(img=32, patch=4, dim=64, heads=4, depth=2, n_classes=4, batch=48, lr=1e-3, wd=0.05)


def render_shapes(rng, n, img=32):
    yy, xx = np.mgrid[0:img, 0:img].astype(np.float32)
    out = np.zeros((n, img, img), np.float32)
    y = rng.integers(0, 4, n)
    for i in range(n):
        cx, cy = rng.uniform(9, img - 9, 2)
        r = rng.uniform(4, 8)
        c = y[i]
        if c == 0:
            m = (xx - cx) ** 2 + (yy - cy) ** 2 < r ** 2
        elif c == 1:
            m = (np.abs(xx - cx) < r * 0.8) & (np.abs(yy - cy) < r * 0.8)
        elif c == 2:
            m = (yy - cy < r * 0.7) & (yy - cy > -r) & (np.abs(xx - cx) < (yy - cy + r) * 0.6)
        else:
            m = ((np.abs(xx - cx) < r) & (np.abs(yy - cy) < r * 0.3)) | ((np.abs(yy - cy) < r) & (np.abs(xx - cx) < r * 0.3))
        out[i] = m * rng.uniform(0.5, 1.0)
    out += rng.normal(0, 0.25, out.shape).astype(np.float32)
    return out[:, None], y


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // self.heads)
        att = att.softmax(-1)
        out = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.proj(out), att


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.n1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.n2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))

    def forward(self, x):
        h, att = self.attn(self.n1(x))
        x = x + h
        x = x + self.mlp(self.n2(x))
        return x, att


class ViT(nn.Module):
    def __init__(self, img, patch, dim, heads, depth, n_classes):
        super().__init__()
        self.patch = patch
        n_tok = (img // patch) ** 2
        self.embed = nn.Linear(patch * patch, dim)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, n_tok + 1, dim) * 0.02)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, n_classes)

    def forward(self, x, return_attn=False):
        B = x.shape[0]
        p = self.patch
        x = x.unfold(2, p, p).unfold(3, p, p).reshape(B, -1, p * p)
        x = torch.cat([self.cls.expand(B, -1, -1), self.embed(x)], 1) + self.pos
        att = None
        for blk in self.blocks:
            x, att = blk(x)
        feat = self.norm(x[:, 0])
        logits = self.head(feat)
        if return_attn:
            return logits, feat, att
        return logits


class TrainingDashboard:
    def __init__(self, probe, out_dir):
        self.out_dir = out_dir
        self.fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
        self.ax_loss, self.ax_attn, self.ax_emb = axes
        self.ax_loss.set_xlabel("step")
        self.ax_loss.set_ylabel("train loss")
        self.ax_loss.set_yscale("log")
        self.ax_attn.set_axis_off()
        self.ax_emb.set_title("probe CLS embeddings (PCA)")
        self.steps, self.losses = [], []
        self.probe_montage = self._montage(probe[:4, 0], up=6)

    @staticmethod
    def _montage(maps, up):
        tiles = [np.kron(m, np.ones((up, up))) for m in maps]
        return np.block([[tiles[0], tiles[1]], [tiles[2], tiles[3]]])

    def log(self, step, loss):
        self.steps.append(step)
        self.losses.append(loss)

    def update(self, step, attn_maps, emb, labels):
        self.ax_loss.plot(self.steps, self.losses, color="C0", lw=1)
        self.ax_loss.set_title(f"step {step}  loss {self.losses[-1]:.3f}")

        self.ax_attn.imshow(self.probe_montage, cmap="gray")
        self.ax_attn.imshow(self._montage(attn_maps, up=24), cmap="inferno", alpha=0.55)
        self.ax_attn.set_title(f"CLS attention, last layer (step {step})")

        e = emb - emb.mean(0)
        _, _, vt = np.linalg.svd(e, full_matrices=False)
        pc = e @ vt[:2].T
        self.ax_emb.scatter(pc[:, 0], pc[:, 1], c=labels, cmap="tab10", s=6)

    def save(self, step):
        path = os.path.join(self.out_dir, "dashboard.png")
        self.fig.savefig(path, dpi=80)
        return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--plot-every", type=int, default=4)
    ap.add_argument("--save-every", type=int, default=75)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    model = ViT(CFG["img"], CFG["patch"], CFG["dim"], CFG["heads"], CFG["depth"], CFG["n_classes"])
    opt = torch.optim.AdamW(model.parameters(), lr=CFG["lr"], weight_decay=CFG["wd"])
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=CFG["lr"], total_steps=args.steps)

    probe_x, probe_y = render_shapes(np.random.default_rng(123), 96, CFG["img"])
    probe_t = torch.from_numpy(probe_x)
    tmp = tempfile.TemporaryDirectory(prefix="vit_dash_")
    dash = TrainingDashboard(probe_x, tmp.name)

    t0 = time.time()
    for step in range(1, args.steps + 1):
        x, y = render_shapes(rng, CFG["batch"], CFG["img"])
        logits = model(torch.from_numpy(x))
        loss = F.cross_entropy(logits, torch.from_numpy(y))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        dash.log(step, loss.item())

        if step % args.plot_every == 0:
            model.eval()
            with torch.no_grad():
                plog, feat, att = model(probe_t, return_attn=True)
            model.train()
            side = CFG["img"] // CFG["patch"]
            cls_att = att[:4, :, 0, 1:].mean(1).reshape(4, side, side).numpy()
            dash.update(step, cls_att, feat.numpy(), probe_y)
        if step % args.save_every == 0:
            dash.save(step)
            acc = (plog.argmax(1).numpy() == probe_y).mean()
            print(f"step {step:4d}  loss {np.mean(dash.losses[-20:]):.4f}  probe acc {acc:.3f}  "
                  f"lr {sched.get_last_lr()[0]:.2e}  {(time.time() - t0) / step * 1e3:.0f} ms/step", flush=True)

    path = dash.save(args.steps)
    print(f"done; last dashboard written to {path}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
