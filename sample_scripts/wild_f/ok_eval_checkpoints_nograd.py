# expect: no_leak
# holder: none
# pattern: evaluation-only sweep over saved checkpoints (load_state_dict from /tmp, no optimizer) under torch.no_grad(); every batch is reduced immediately to Python floats / ints and a preallocated confusion matrix, so nothing per-batch outlives the step (slow steps)
# step_ms: 160
"""Evaluate a handful of saved checkpoints on a fixed validation set.

A typical "pick the best epoch" script: checkpoints written by a training
run are loaded one after the other into the same ResNet-style model, and
each is evaluated on the whole validation set (top-1, top-5, NLL, expected
calibration error and a confusion matrix).

Everything per batch is reduced on the spot: ``.item()`` sums for loss and
accuracy, ``np.add.at`` into a preallocated confusion matrix, calibration
bins accumulated into fixed-size arrays.  Only one small dict of floats is
kept per checkpoint.  The validation set (uint8) and the model are allocated
once; after the first batch memory is flat.
"""
import os
import shutil
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)

N_CLASSES = 20
IMG = 64
N_VAL = 1152
BATCH = 64
N_CKPTS = 4
N_BINS = 15


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = (nn.Sequential() if stride == 1 and cin == cout else
                      nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)))

    def forward(self, x):
        out = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(out)) + self.short(x))


class ResNetSmall(nn.Module):
    def __init__(self, n_classes=N_CLASSES):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
        self.layers = nn.Sequential(BasicBlock(32, 32, 1), BasicBlock(32, 64, 2),
                                    BasicBlock(64, 128, 2), BasicBlock(128, 128, 2))
        self.fc = nn.Linear(128, n_classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def make_val_set(seed=0):
    rng = np.random.default_rng(seed)
    templates = rng.integers(0, 256, size=(N_CLASSES, 3, IMG, IMG)).astype(np.float32)
    y = rng.integers(0, N_CLASSES, size=N_VAL)
    noise = rng.normal(0, 60, size=(N_VAL, 3, IMG, IMG)).astype(np.float32)
    x = np.clip(templates[y] * 0.6 + 50 + noise, 0, 255).astype(np.uint8)
    return x, y


def write_fake_checkpoints(folder):
    """Stand-in for a training run's checkpoint directory."""
    paths = []
    base = ResNetSmall()
    for k in range(N_CKPTS):
        with torch.no_grad():
            for p in base.parameters():
                p.mul_(0.97).add_(0.01 * torch.randn_like(p))
        path = os.path.join(folder, f"epoch_{(k + 1) * 10:03d}.pt")
        torch.save({"epoch": (k + 1) * 10, "model": base.state_dict()}, path)
        paths.append(path)
    return paths


@torch.no_grad()
def evaluate(model, x_val, y_val):
    model.eval()
    mean = torch.tensor([0.5, 0.5, 0.5]).view(1, 3, 1, 1)
    confusion = np.zeros((N_CLASSES, N_CLASSES), dtype=np.int64)
    bin_conf = np.zeros(N_BINS)
    bin_acc = np.zeros(N_BINS)
    bin_cnt = np.zeros(N_BINS)
    nll_sum, top1, top5, seen = 0.0, 0, 0, 0
    for i in range(0, len(x_val), BATCH):
        t = time.perf_counter()
        xb = torch.from_numpy(x_val[i:i + BATCH]).float().div_(255).sub_(mean).div_(0.25)
        yb = torch.from_numpy(y_val[i:i + BATCH])
        logits = model(xb)
        nll_sum += F.cross_entropy(logits, yb, reduction="sum").item()
        prob = logits.softmax(1)
        conf, pred = prob.max(1)
        top1 += (pred == yb).sum().item()
        top5 += (logits.topk(5, dim=1).indices == yb[:, None]).any(1).sum().item()
        seen += len(yb)

        pred_np, conf_np, y_np = pred.numpy(), conf.numpy(), yb.numpy()
        np.add.at(confusion, (y_np, pred_np), 1)
        bins = np.minimum((conf_np * N_BINS).astype(int), N_BINS - 1)
        np.add.at(bin_conf, bins, conf_np)
        np.add.at(bin_acc, bins, (pred_np == y_np).astype(float))
        np.add.at(bin_cnt, bins, 1)
        if (i // BATCH) % 10 == 0:
            print(f"    batch {i // BATCH:3d}  running top1 {top1 / seen:.3f}  "
                  f"{(time.perf_counter() - t) * 1e3:.0f} ms", flush=True)

    nz = bin_cnt > 0
    ece = float(np.sum(np.abs(bin_acc[nz] - bin_conf[nz])) / seen)
    per_class_recall = confusion.diagonal() / np.maximum(confusion.sum(1), 1)
    return {"top1": top1 / seen, "top5": top5 / seen, "nll": nll_sum / seen, "ece": ece,
            "worst_class_recall": float(per_class_recall.min())}


def main():
    x_val, y_val = make_val_set()
    ckpt_dir = tempfile.mkdtemp(prefix="eval_ckpts_", dir="/tmp")
    try:
        paths = write_fake_checkpoints(ckpt_dir)
        model = ResNetSmall()
        results = []
        t0 = time.time()
        for path in paths:
            state = torch.load(path, map_location="cpu")
            model.load_state_dict(state["model"])
            del state
            r = evaluate(model, x_val, y_val)
            r["epoch"] = int(os.path.basename(path)[6:9])
            results.append(r)
            print(f"{os.path.basename(path)}: " + "  ".join(f"{k} {v:.4f}" for k, v in r.items()
                                                           if k != "epoch")
                  + f"  ({time.time() - t0:.1f}s)", flush=True)
        best = max(results, key=lambda r: r["top1"])
        print(f"best checkpoint: epoch {best['epoch']} top1 {best['top1']:.4f}")
    finally:
        shutil.rmtree(ckpt_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
