# expect: no_leak
# pattern: FitNets-style distillation of a 1D-CNN activity teacher into a small MLP student; the frozen teacher's hint features and logits are computed lazily and memoised per training-sample index in a class-level dict (TeacherTargets._store) as float32 numpy arrays, so the table fills during the student's first epoch (done ~30% into the run, after a short teacher fit) and every later epoch only hits it (torch.optim.SGD with Nesterov momentum)
# step_ms: 11
"""Compress a human-activity-recognition model for a wrist wearable.

Inputs are 2.56 s windows of 6-axis IMU data (accelerometer + gyroscope at
50 Hz).  A 1D-CNN teacher is fitted first; the student is a two-layer MLP
small enough for the wearable's MCU.  The student is trained with a KD loss
on the teacher's softened logits plus a FitNets hint loss that regresses
the teacher's penultimate features from the student's hidden layer.
The teacher is frozen during distillation, so its outputs for a training
window never change and are computed once per window.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ACTIVITIES = ["walk", "run", "stairs_up", "stairs_down", "sit", "stand", "cycle", "lie"]
CH, L = 6, 128


def make_windows(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, len(ACTIVITIES), n)
    t = np.arange(L) / 50.0
    cadence = np.array([1.8, 2.8, 1.4, 1.6, 0.0, 0.0, 1.2, 0.0])[y] * rng.uniform(0.7, 1.3, n)
    amp = np.array([1.0, 2.5, 1.2, 1.4, 0.05, 0.08, 0.6, 0.03])[y]
    grav = np.array([[0, 0, 1], [0, 0.2, 1], [0.2, 0, 1], [-0.2, 0, 1],
                     [0.7, 0, 0.7], [0, 0, 1], [0.5, 0.5, 0.7], [1, 0, 0]])[y]
    x = np.empty((n, CH, L), dtype=np.float32)
    phase = rng.uniform(0, 2 * np.pi, (n, CH))
    for c in range(CH):
        wave = np.sin(2 * np.pi * cadence[:, None] * t[None, :] * (1 + (c % 3) * 0.5) + phase[:, c:c + 1])
        base = grav[:, c % 3, None] if c < 3 else 0.0
        x[:, c] = base + amp[:, None] * wave * (0.6 if c >= 3 else 1.0) + rng.normal(0, 0.9, (n, L))
    return torch.from_numpy(x), torch.from_numpy(y)


class TeacherCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(CH, 32, 7, padding=3), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(64, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(4),
            nn.Flatten(), nn.Linear(512, 256), nn.ReLU(),
        )
        self.cls = nn.Linear(256, len(ACTIVITIES))

    def forward(self, x):
        h = self.body(x)
        return h, self.cls(h)


class StudentMLP(nn.Module):
    def __init__(self, hidden=(512, 256), hint_dim=256):
        super().__init__()
        self.fc1 = nn.Linear(CH * L, hidden[0])
        self.fc2 = nn.Linear(hidden[0], hidden[1])
        self.cls = nn.Linear(hidden[1], len(ACTIVITIES))
        self.hint = nn.Linear(hidden[1], hint_dim)

    def forward(self, x):
        h = F.relu(self.fc2(F.relu(self.fc1(x.flatten(1)))))
        return h, self.cls(h)


class TeacherTargets:
    _store = {}

    def __init__(self, teacher):
        self.teacher = teacher.eval()
        self.hits = self.misses = 0

    @torch.no_grad()
    def __call__(self, idx, x):
        keys = idx.tolist()
        todo = [i for i, k in enumerate(keys) if k not in self._store]
        if todo:
            feats, logits = self.teacher(x[todo])
            for j, i in enumerate(todo):
                self._store[keys[i]] = (feats[j].numpy().copy(), logits[j].numpy().copy())
        self.misses += len(todo)
        self.hits += len(keys) - len(todo)
        feats = np.stack([self._store[k][0] for k in keys])
        logits = np.stack([self._store[k][1] for k in keys])
        return torch.from_numpy(feats), torch.from_numpy(logits)


class Distiller:
    def __init__(self, teacher, student, args):
        self.teacher, self.student, self.args = teacher, student, args
        self.targets = TeacherTargets(teacher)
        self.opt = torch.optim.SGD(student.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=1e-4)
        self.sched = torch.optim.lr_scheduler.CosineAnnealingLR(self.opt, T_max=args.epochs)
        self.step = 0

    def train_epoch(self, x, y, gen):
        self.student.train()
        perm = torch.randperm(len(x), generator=gen)
        total, n = 0.0, 0
        for b in range(0, len(x) - self.args.batch_size + 1, self.args.batch_size):
            idx = perm[b:b + self.args.batch_size]
            xb, yb = x[idx], y[idx]
            t_feat, t_logits = self.targets(idx, xb)
            h, logits = self.student(xb)
            tau = self.args.tau
            kd = F.kl_div(F.log_softmax(logits / tau, 1), F.softmax(t_logits / tau, 1), reduction="batchmean") * tau ** 2
            hint = F.mse_loss(self.student.hint(h), t_feat)
            loss = 0.5 * F.cross_entropy(logits, yb) + 0.5 * kd + self.args.hint_weight * hint
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            total += loss.item()
            n += 1
            self.step += 1
        self.sched.step()
        return total / n

    @torch.no_grad()
    def accuracy(self, model, x, y):
        model.eval()
        correct = sum((model(x[i:i + 1024])[1].argmax(1) == y[i:i + 1024]).sum().item() for i in range(0, len(x), 1024))
        return correct / len(x)


def fit_teacher(teacher, x, y, steps, batch_size, seed):
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(teacher.parameters(), lr=2e-3)
    teacher.train()
    for _ in range(steps):
        idx = torch.randint(0, len(x), (batch_size,), generator=g)
        loss = F.cross_entropy(teacher(x[idx])[1], y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    for p in teacher.parameters():
        p.requires_grad_(False)
    return loss.item()


def main():
    ap = argparse.ArgumentParser(description="HAR teacher -> student distillation")
    ap.add_argument("--n-train", type=int, default=40000)
    ap.add_argument("--n-val", type=int, default=4000)
    ap.add_argument("--teacher-steps", type=int, default=250)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--teacher-batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--tau", type=float, default=3.0)
    ap.add_argument("--hint-weight", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.manual_seed(args.seed)

    x_tr, y_tr = make_windows(args.n_train, args.seed)
    x_va, y_va = make_windows(args.n_val, args.seed + 100)

    t0 = time.perf_counter()
    teacher = TeacherCNN()
    last = fit_teacher(teacher, x_tr, y_tr, args.teacher_steps, args.teacher_batch_size, args.seed)
    d = Distiller(teacher, StudentMLP(), args)
    print(f"teacher fitted in {time.perf_counter() - t0:.1f}s, last loss {last:.3f}, "
          f"val acc {d.accuracy(teacher, x_va, y_va):.3f}", flush=True)

    gen = torch.Generator().manual_seed(args.seed)
    for epoch in range(1, args.epochs + 1):
        te = time.perf_counter()
        loss = d.train_epoch(x_tr, y_tr, gen)
        steps = args.n_train // args.batch_size
        print(
            f"epoch {epoch}  loss {loss:.4f}  student val acc {d.accuracy(d.student, x_va, y_va):.3f}  "
            f"teacher targets {len(TeacherTargets._store)} (hits {d.targets.hits}, misses {d.targets.misses})  "
            f"{1000 * (time.perf_counter() - te) / steps:.1f} ms/step",
            flush=True,
        )
    n_student = sum(p.numel() for n_, p in d.student.named_parameters() if not n_.startswith("hint"))
    print(f"done in {time.perf_counter() - t0:.1f}s, student {n_student} params "
          f"({n_student / 1024:.0f} KB int8)")


if __name__ == "__main__":
    main()
