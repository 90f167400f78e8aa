# expect: no_leak
# holder:
# pattern: mean-teacher semi-supervised training: one EMA teacher made with copy.deepcopy(model) at start and updated in place under no_grad; each epoch the best EMA weights are kept by replacing a single deepcopy (best_teacher), never appended (slow ~250 ms steps)
# step_ms: 250
"""Mean Teacher (Tarvainen & Valpola, 2017) on synthetic images with few labels.

The student sees a labelled and an unlabelled batch each step (two noisy
augmentations); the teacher is an exponential moving average (EMA) of the
student, created once with ``copy.deepcopy(student)`` and updated in place
with ``torch._foreach_mul_/_foreach_add_`` under ``torch.no_grad()``.  The loss
is cross-entropy on the labelled part plus a ramped-up consistency MSE
between student and teacher softmax outputs on the unlabelled part.

After every short epoch the teacher is evaluated; if it improved,
``best_teacher = copy.deepcopy(teacher)`` replaces the previous best copy.

Why it is fine: at any time there are exactly three sets of weights (student,
teacher, best teacher) plus SGD momentum; the previous best copy is freed
when the name is rebound.  Losses are kept as floats.
"""
import copy
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

IMG = 24
N_CLASSES = 10
BATCH_L = 32
BATCH_U = 40
EPOCHS = 5
STEPS_PER_EPOCH = 10
EMA_DECAY = 0.95


def make_prototypes():
    g = torch.Generator().manual_seed(42)
    low = torch.randn(N_CLASSES, 3, 8, 8, generator=g)
    return F.interpolate(low, size=(IMG, IMG), mode="bilinear", align_corners=False)


PROTOS = make_prototypes()


def sample(g, n, labelled=True):
    y = torch.randint(0, N_CLASSES, (n,), generator=g)
    shift = torch.randint(-3, 4, (2,), generator=g).tolist()
    x = torch.roll(PROTOS[y], shifts=shift, dims=(2, 3)) + 2.0 * torch.randn(n, 3, IMG, IMG, generator=g)
    return (x, y) if labelled else x


def augment(x, g):
    noise = 0.15 * torch.randn(x.shape, generator=g)
    flip = torch.rand(x.size(0), 1, 1, 1, generator=g) < 0.5
    return torch.where(flip, x.flip(3), x) + noise


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.1),
                nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.1),
                nn.MaxPool2d(2))

        self.features = nn.Sequential(block(3, 32), block(32, 64), block(64, 128))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.3), nn.Linear(128, N_CLASSES))

    def forward(self, x):
        return self.head(self.features(x))


@torch.no_grad()
def ema_update(teacher, student, decay):
    t_params, s_params = list(teacher.parameters()), list(student.parameters())
    torch._foreach_mul_(t_params, decay)
    torch._foreach_add_(t_params, s_params, alpha=1 - decay)
    for tb, sb in zip(teacher.buffers(), student.buffers()):
        tb.copy_(sb)


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    acc = sum((model(x[i:i + 100]).argmax(1) == y[i:i + 100]).sum().item() for i in range(0, len(y), 100))
    return acc / len(y)


def main():
    student = ConvNet()
    teacher = copy.deepcopy(student)
    for p in teacher.parameters():
        p.requires_grad_(False)
    best_teacher, best_acc, best_epoch = None, -1.0, -1

    opt = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    total = EPOCHS * STEPS_PER_EPOCH
    g = torch.Generator().manual_seed(1)
    x_val, y_val = sample(torch.Generator().manual_seed(2), 200)
    losses = []

    t0 = time.time()
    step = 0
    for epoch in range(EPOCHS):
        student.train()
        teacher.train()
        for _ in range(STEPS_PER_EPOCH):
            lr = 0.05 * 0.5 * (1 + math.cos(math.pi * step / total))
            for group in opt.param_groups:
                group["lr"] = lr
            w_cons = 10.0 * math.exp(-5 * (1 - min(1.0, step / (0.6 * total))) ** 2)

            x_l, y_l = sample(g, BATCH_L)
            x_u = sample(g, BATCH_U, labelled=False)
            logits = student(augment(torch.cat([x_l, x_u]), g))
            with torch.no_grad():
                t_logits = teacher(augment(x_u, g))
            ce = F.cross_entropy(logits[:BATCH_L], y_l)
            cons = F.mse_loss(logits[BATCH_L:].softmax(1), t_logits.softmax(1))
            loss = ce + w_cons * cons

            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            ema_update(teacher, student, min(1 - 1 / (step + 1), EMA_DECAY))
            losses.append(loss.item())
            step += 1

        s_acc, t_acc = evaluate(student, x_val, y_val), evaluate(teacher, x_val, y_val)
        if t_acc > best_acc:
            best_teacher, best_acc, best_epoch = copy.deepcopy(teacher), t_acc, epoch
        print(f"epoch {epoch}  loss {sum(losses[-STEPS_PER_EPOCH:]) / STEPS_PER_EPOCH:.3f}  "
              f"student {s_acc:.3f}  teacher {t_acc:.3f}  best {best_acc:.3f}@{best_epoch}  "
              f"{(time.time() - t0) * 1000 / step:.0f} ms/step", flush=True)

    print(f"best teacher: epoch {best_epoch}, acc {evaluate(best_teacher, x_val, y_val):.3f}")


if __name__ == "__main__":
    main()
