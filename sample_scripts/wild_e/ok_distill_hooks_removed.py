# expect: no_leak
# holder:
# pattern: FitNets-style feature distillation: a context manager registers forward hooks on teacher and student layers for one step, yields the captured features and calls handle.remove() in finally; the feature dict dies with the step
# step_ms: 32
"""Feature + logit distillation from a frozen teacher CNN into a thinner student.

Every step, ``capture_features(model, layer_names)`` registers forward hooks
on the chosen layers, yields a fresh dict that the hooks fill, and removes
the hooks (``handle.remove()``) in a ``finally`` block when the ``with`` block
ends.  The teacher runs under ``torch.no_grad()``; the student's features go
through 1x1 "regressor" convs and are matched to the teacher's with MSE, plus
the usual temperature-scaled KL on logits.

Why it is fine: hooks never accumulate on the modules (each step's handles
are removed), and the captured dicts are locals of the step, so the student
features (with their graphs) are freed after ``backward()`` and the teacher
features at the end of the step.  Memory is flat after Adam's first step.
"""
import contextlib
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

IMG = 24
BATCH = 32
STEPS = 400
N_CLASSES = 10
T = 4.0


def conv_net(widths):
    layers, cin = [], 3
    for i, w in enumerate(widths):
        layers += [nn.Conv2d(cin, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(inplace=True)]
        if i < len(widths) - 1:
            layers.append(nn.MaxPool2d(2))
        cin = w
    return nn.Sequential(nn.Sequential(*layers), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, N_CLASSES))


@contextlib.contextmanager
def capture_features(model, layer_names):
    feats = {}
    modules = dict(model.named_modules())
    handles = []

    def make_hook(name):
        def hook(module, inputs, output):
            feats[name] = output
        return hook

    try:
        for name in layer_names:
            handles.append(modules[name].register_forward_hook(make_hook(name)))
        yield feats
    finally:
        for h in handles:
            h.remove()


def synthetic_batch(g, n):
    y = torch.randint(0, N_CLASSES, (n,), generator=g)
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, IMG), torch.linspace(-1, 1, IMG), indexing="ij")
    freq = 2 + y.float()[:, None, None]
    base = torch.sin(freq * xx * 3.14) * torch.cos((N_CLASSES - freq) * yy * 1.5)
    x = base[:, None].expand(-1, 3, -1, -1) + 1.5 * torch.randn(n, 3, IMG, IMG, generator=g)
    return x, y


def main():
    teacher = conv_net([32, 64, 96]).eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    student = conv_net([16, 32, 48])

    # teacher layer -> student layer (after ReLU of each stage), with channel adapters
    pairs = {"0.2": "0.2", "0.6": "0.6"}
    adapters = nn.ModuleDict({
        "0_2": nn.Conv2d(16, 32, 1),
        "0_6": nn.Conv2d(32, 64, 1),
    })
    opt = torch.optim.Adam(list(student.parameters()) + list(adapters.parameters()), lr=2e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=150, gamma=0.5)

    g = torch.Generator().manual_seed(1)
    hist = []
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x, y = synthetic_batch(g, BATCH)
        with capture_features(teacher, pairs.keys()) as t_feats, torch.no_grad():
            t_logits = teacher(x)
        with capture_features(student, pairs.values()) as s_feats:
            s_logits = student(x)

        feat_loss = sum(F.mse_loss(adapters[s.replace(".", "_")](s_feats[s]), t_feats[t])
                        for t, s in pairs.items())
        kd = F.kl_div(F.log_softmax(s_logits / T, 1), F.softmax(t_logits / T, 1),
                      reduction="batchmean") * T * T
        ce = F.cross_entropy(s_logits, y)
        loss = ce + 0.5 * kd + 0.1 * feat_loss

        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        hist.append(loss.item())

        if step % 100 == 0:
            acc = (s_logits.argmax(1) == y).float().mean().item()
            n_hooks = sum(len(m._forward_hooks) for m in student.modules())
            print(f"step {step}  loss {sum(hist[-100:]) / 100:.3f}  acc {acc:.2f}  "
                  f"hooks on student {n_hooks}  {(time.time() - t0) * 1000 / step:.1f} ms/step", flush=True)


if __name__ == "__main__":
    main()
