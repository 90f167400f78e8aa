# expect: leak
# holder: student_logits|student_feats
# pattern: evaluation loop (no optimizer) keeping every batch's outputs with their autograd graphs
# step_ms: 170
"""Offline evaluation of a distilled texture classifier: the small "student"
is compared with the big "teacher" over a held-out set (agreement, accuracy,
per-class recall, and the student's embedding matrix for a k-NN check).

The teacher is run under ``torch.no_grad()`` -- somebody remembered it there
because it was slow. The student is not, and ``evaluate()`` appends its
``logits`` and pooled ``feats`` to lists that are only concatenated at the very
end. Those tensors carry ``grad_fn``, so every intermediate activation of the
student stays alive for every batch: about 2 MiB per batch, and the full
validation set (10x this one) runs out of memory.

Fix: put the whole loop under ``torch.no_grad()`` / ``torch.inference_mode()``,
or append ``logits.detach()``.
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()
    )


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a = conv_bn(c, c)
        self.b = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return F.relu(x + self.b(self.a(x)))


class TextureNet(nn.Module):
    def __init__(self, n_classes=16, width=96, patch=4):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, patch, patch, bias=False), nn.BatchNorm2d(width)
        )
        self.stage1 = nn.Sequential(Block(width), Block(width))
        self.down = conv_bn(width, 2 * width, stride=2)
        self.stage2 = Block(2 * width)
        self.fc = nn.Linear(2 * width, n_classes)

    def forward(self, x):
        x = self.stage2(self.down(self.stage1(F.relu(self.stem(x)))))
        feats = x.mean((2, 3))
        return self.fc(feats), feats


def texture_batch(batch, size, n_classes, gen):
    y = torch.randint(0, n_classes, (batch,), generator=gen)
    freq = (1 + y.float())[:, None, None] * 0.15
    coords = torch.arange(size, dtype=torch.float32)
    grid = coords[None, :, None] * freq + coords[None, None, :] * freq.flip(0) * 0.5
    x = torch.sin(grid)[:, None].expand(batch, 3, size, size).clone()
    x += 0.5 * torch.randn(x.shape, generator=gen)
    return x, y


def evaluate(student, teacher, n_batches, batch, size, n_classes, gen):
    student.eval()
    teacher.eval()
    student_logits, student_feats, teacher_pred, labels = [], [], [], []
    t0 = time.perf_counter()
    for b in range(n_batches):
        x, y = texture_batch(batch, size, n_classes, gen)
        with torch.no_grad():
            t_logits, _ = teacher(x)
        s_logits, s_feats = student(x)
        student_logits.append(s_logits)
        student_feats.append(s_feats)
        teacher_pred.append(t_logits.argmax(1))
        labels.append(y)
        if b % 20 == 0:
            print(f"  batch {b:4d}/{n_batches}  {(time.perf_counter() - t0) / (b + 1):.3f}s/batch")
    return (
        torch.cat(student_logits),
        F.normalize(torch.cat(student_feats), dim=1),
        torch.cat(teacher_pred),
        torch.cat(labels),
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=80)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--classes", type=int, default=16)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(8)
    gen = torch.Generator().manual_seed(8)
    teacher = TextureNet(args.classes, width=256, patch=4)
    student = TextureNet(args.classes, width=24, patch=8)
    n_t = sum(p.numel() for p in teacher.parameters())
    n_s = sum(p.numel() for p in student.parameters())
    print(f"teacher {n_t / 1e6:.1f}M params, student {n_s / 1e3:.0f}k params")
    logits, feats, t_pred, labels = evaluate(
        student, teacher, args.batches, args.batch_size, args.size, args.classes, gen
    )
    pred = logits.argmax(1)
    acc = (pred == labels).float().mean().item()
    agree = (pred == t_pred).float().mean().item()
    recall = [
        ((pred == labels) & (labels == c)).sum().item() / max(1, (labels == c).sum().item())
        for c in range(args.classes)
    ]
    knn = (feats @ feats.T).fill_diagonal_(-1).max(1).values.mean().item()
    print(f"acc {acc:.3f} agreement {agree:.3f} min recall {min(recall):.2f} knn cos {knn:.3f}")


if __name__ == "__main__":
    main()
