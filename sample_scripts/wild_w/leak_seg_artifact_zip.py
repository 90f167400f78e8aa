# expect: leak
# holder: ArtifactBundle._buf|bundle._buf|ArtifactBundle._zip|ArtifactBundle
# pattern: cell-segmentation mini U-Net on synthetic fluorescence crops (torch.optim.AdamW, Dice+BCE loss, ~55 ms steps, code in main() + a module-level ArtifactBundle class); the live dashboard reads one in-memory zip of "latest" artifacts, so every step the trainer does bundle.put_array("latest/pred.npy", ...), "latest/input.npy", "latest/target.npy" and a metrics JSON with zipfile.ZipFile.writestr on a ZipFile(io.BytesIO, mode="a"), and every 50 steps publish() closes the archive, writes the bytes to a temp file and re-opens it in append mode; zipfile cannot replace a member, writestr with an existing name only warns "Duplicate name" once and appends another copy, so the BytesIO buffer (and the ZipFile's filelist of ZipInfo objects) grows by ~290 KB per step (float32 input + prediction, uint8 target) for the whole run while the dashboard keeps showing the newest copy
# step_ms: 55
"""Train a small U-Net to segment nuclei in synthetic fluorescence crops.

The images are procedurally generated (elliptical nuclei with blur, shot
noise, uneven illumination and debris), so no data download is needed.

Artifacts for the live dashboard (latest input/prediction/target and the
running metrics) are kept in one in-memory zip archive that is re-published
to disk every few steps; the dashboard simply re-reads that file.

Usage:  python seg_artifact_zip.py [--steps 360] [--batch 8] [--size 64]
"""
import argparse
import io
import json
import os
import tempfile
import time
import zipfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ArtifactBundle:
    """In-memory zip with the newest artifacts of the run, published to disk for the dashboard."""

    def __init__(self, publish_path):
        self.publish_path = publish_path
        self._buf = io.BytesIO()
        self._zip = zipfile.ZipFile(self._buf, mode="a", compression=zipfile.ZIP_STORED)

    def put_array(self, name, array):
        raw = io.BytesIO()
        np.save(raw, array, allow_pickle=False)
        self._zip.writestr(name, raw.getvalue())      # overwrite the previous "latest" entry

    def put_json(self, name, obj):
        self._zip.writestr(name, json.dumps(obj))

    def publish(self):
        self._zip.close()                                # writes the central directory
        tmp = self.publish_path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(self._buf.getbuffer())
        os.replace(tmp, self.publish_path)
        self._zip = zipfile.ZipFile(self._buf, mode="a", compression=zipfile.ZIP_STORED)

    def close(self):
        self._zip.close()


# ------------------------------------------------------------------ data ----
def synth_batch(rng, n, size):
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    imgs = np.zeros((n, 1, size, size), np.float32)
    masks = np.zeros((n, 1, size, size), np.float32)
    for b in range(n):
        illum = 0.6 + 0.4 * np.sin(xx / size * rng.uniform(1, 3) + rng.uniform(0, 6)) * np.cos(yy / size * 2)
        m = np.zeros((size, size), bool)
        for _ in range(rng.integers(3, 9)):
            cy, cx = rng.uniform(8, size - 8, 2)
            ry, rx = rng.uniform(4, 11, 2)
            th = rng.uniform(0, np.pi)
            dy, dx = yy - cy, xx - cx
            u = (dx * np.cos(th) + dy * np.sin(th)) / rx
            v = (-dx * np.sin(th) + dy * np.cos(th)) / ry
            m |= (u * u + v * v) < 1.0
        debris = rng.random((size, size)) < 0.003
        sig = m * rng.uniform(0.5, 1.0) + debris * 0.8
        sig = sig + np.roll(sig, 1, 0) + np.roll(sig, -1, 0) + np.roll(sig, 1, 1) + np.roll(sig, -1, 1)
        img = rng.poisson(np.clip(sig / 5 * illum, 0, None) * 40 + 3) / 40.0
        imgs[b, 0] = img
        masks[b, 0] = m
    return torch.from_numpy(imgs), torch.from_numpy(masks)


# ----------------------------------------------------------------- model ----
def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class MiniUNet(nn.Module):
    def __init__(self, w=12):
        super().__init__()
        self.e1, self.e2, self.e3 = conv_block(1, w), conv_block(w, 2 * w), conv_block(2 * w, 4 * w)
        self.up2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2)
        self.d2 = conv_block(4 * w, 2 * w)
        self.up1 = nn.ConvTranspose2d(2 * w, w, 2, stride=2)
        self.d1 = conv_block(2 * w, w)
        self.out = nn.Conv2d(w, 1, 1)

    def forward(self, x):
        h1 = self.e1(x)
        h2 = self.e2(F.max_pool2d(h1, 2))
        h3 = self.e3(F.max_pool2d(h2, 2))
        d2 = self.d2(torch.cat([self.up2(h3), h2], 1))
        d1 = self.d1(torch.cat([self.up1(d2), h1], 1))
        return self.out(d1)


def dice_bce(logits, target):
    prob = torch.sigmoid(logits)
    inter = (prob * target).sum(dim=(1, 2, 3))
    dice = 1 - (2 * inter + 1) / (prob.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3)) + 1)
    return F.binary_cross_entropy_with_logits(logits, target) + dice.mean()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=360)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--publish-every", type=int, default=50)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = MiniUNet()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)

    run_dir = tempfile.mkdtemp(prefix="seg_dashboard_")
    bundle = ArtifactBundle(os.path.join(run_dir, "latest.zip"))
    history = []
    t0 = time.time()
    for step in range(args.steps):
        x, y = synth_batch(rng, args.batch, args.size)
        logits = model(x)
        loss = dice_bce(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()

        with torch.no_grad():
            pred = (logits > 0).float()
            iou = ((pred * y).sum() / ((pred + y).clamp(max=1).sum() + 1e-6)).item()
        history.append((loss.item(), iou))

        # dashboard artifacts: newest batch, prediction and the running curve
        bundle.put_array("latest/input.npy", x.numpy())
        bundle.put_array("latest/pred.npy", torch.sigmoid(logits).detach().numpy())
        bundle.put_array("latest/target.npy", y.numpy().astype(np.uint8))
        bundle.put_json("latest/metrics.json", {"step": step, "loss": history[-1][0], "iou": iou,
                                                "lr": sched.get_last_lr()[0]})
        if step % args.publish_every == args.publish_every - 1:
            bundle.publish()
        if step % 60 == 0:
            recent = np.array(history[-60:])
            print(f"[{time.time() - t0:6.1f}s] step {step:4d}  loss={recent[:, 0].mean():.4f}  "
                  f"IoU={recent[:, 1].mean():.3f}", flush=True)

    bundle.publish()
    bundle.close()
    print(f"finished {args.steps} steps in {time.time() - t0:.1f}s, final IoU "
          f"{np.mean([h[1] for h in history[-50:]]):.3f}; dashboard file: "
          f"{os.path.getsize(bundle.publish_path) / 2**20:.1f} MB")
    for f in os.listdir(run_dir):
        os.remove(os.path.join(run_dir, f))
    os.rmdir(run_dir)


if __name__ == "__main__":
    main()
