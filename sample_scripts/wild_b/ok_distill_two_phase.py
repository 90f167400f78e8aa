# expect: no_leak
# holder: none
# pattern: two phases: train a teacher, then midway precompute the teacher's soft targets for the whole training set once and build a student + EMA copy once; memory steps up at the phase change and stays flat afterwards
# step_ms: 3
"""Knowledge distillation, student-project style: teacher phase, then student phase.

Phase 1 trains a wide teacher MLP. At the phase change the script allocates, once,
the teacher's temperature-softened targets for all training rows (a few tens of
MB), a student network, its optimizer and an EMA copy of the student. Phase 2
only reuses these buffers (EMA is updated in place), so memory rises once at
the switch and then stays flat.
"""
import copy
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(31)

N, D, C = 40_000, 64, 100
proto = torch.randn(C, D) * 0.6
y_all = torch.randint(0, C, (N,))
X_all = proto[y_all] + torch.randn(N, D)
X_test = X_all[-4000:]
y_test = y_all[-4000:]
X_tr, y_tr = X_all[:-4000], y_all[:-4000]


def mlp(width, depth):
    layers, d = [], D
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.ReLU()]
        d = width
    return nn.Sequential(*layers, nn.Linear(d, C))


def accuracy(model):
    with torch.no_grad():
        return (model(X_test).argmax(1) == y_test).float().mean().item()


# ---------------- phase 1: teacher ----------------
teacher = mlp(512, 3)
opt = torch.optim.Adam(teacher.parameters(), lr=1e-3)
t0 = time.time()
steps = 0
while time.time() - t0 < 8.0:
    idx = torch.randint(0, len(X_tr), (256,))
    loss = F.cross_entropy(teacher(X_tr[idx]), y_tr[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    steps += 1
print(f"teacher: {steps} steps, test acc {accuracy(teacher):.3f} ({time.time() - t0:.1f}s)")
teacher_steps = steps

# ---------------- phase change: allocate once ----------------
T = 4.0
teacher.eval()
with torch.no_grad():
    soft_targets = torch.cat([F.softmax(teacher(X_tr[i:i + 2048]) / T, dim=1) for i in range(0, len(X_tr), 2048)])
del opt
student = mlp(128, 2)
ema_student = copy.deepcopy(student)
for p in ema_student.parameters():
    p.requires_grad_(False)
s_opt = torch.optim.Adam(student.parameters(), lr=2e-3)
print(f"soft targets: {soft_targets.numel() * 4 / 2**20:.1f} MB")

# ---------------- phase 2: student ----------------
t1 = time.time()
last = t1
steps = 0
while time.time() - t1 < 9.0:
    idx = torch.randint(0, len(X_tr), (256,))
    logits = student(X_tr[idx])
    kd = F.kl_div(F.log_softmax(logits / T, dim=1), soft_targets[idx], reduction="batchmean") * T * T
    ce = F.cross_entropy(logits, y_tr[idx])
    loss = 0.7 * kd + 0.3 * ce
    s_opt.zero_grad()
    loss.backward()
    s_opt.step()
    with torch.no_grad():
        for pe, ps in zip(ema_student.parameters(), student.parameters()):
            pe.mul_(0.995).add_(ps, alpha=0.005)
    steps += 1
    if time.time() - last > 3:
        last = time.time()
        print(f"student step {steps}: loss {loss.item():.3f} acc {accuracy(student):.3f} ema acc {accuracy(ema_student):.3f}")

total = teacher_steps + steps
print(f"{total} steps, {1000 * (time.time() - t0) / total:.1f} ms/step")
