# expect: leak
# holder: observed_inputs|FakeQuantSTE
# pattern: quantization-aware training with a custom torch.autograd.Function (straight-through fake-quant) whose forward() appends its input activation to a class-level list "for percentile calibration later"; the list is only read at export time
# step_ms: 60
"""Quantization-aware training (QAT) of a small CNN with a hand-written fake-quant op.

``FakeQuantSTE`` is a ``torch.autograd.Function``: forward rounds the
activation to an int8 grid given a scale, backward passes the gradient
straight through (clipped to the representable range).  The scale for each
quantized layer is a running max of |x| kept by ``ActQuant``.

For the final int8 export the author wanted percentile-based scales instead of
max-based ones, so forward also does ``FakeQuantSTE.observed_inputs.append(x)``
and ``export_scales()`` computes the 99.9th percentile at the end.

Why it leaks: ``observed_inputs`` is a class attribute of the Function that
receives the activation of every quantized layer at every training step (and
every validation batch).  The tensors are the real activations (with their
``grad_fn``), so the list grows by roughly 1 MB per step for the whole run.

Fix: keep a fixed-size reservoir sample or a histogram per layer, detached
and on a subsample; or only observe during a short calibration phase.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

IMG = 32
BATCH = 32
EPOCHS = 8
STEPS_PER_EPOCH = 30
N_CLASSES = 10


class FakeQuantSTE(torch.autograd.Function):
    observed_inputs = []

    @staticmethod
    def forward(ctx, x, scale, qmin, qmax):
        FakeQuantSTE.observed_inputs.append(x)
        q = torch.clamp(torch.round(x / scale), qmin, qmax)
        ctx.save_for_backward(x, scale)
        ctx.qmin, ctx.qmax = qmin, qmax
        return q * scale

    @staticmethod
    def backward(ctx, grad_out):
        x, scale = ctx.saved_tensors
        inside = (x >= ctx.qmin * scale) & (x <= ctx.qmax * scale)
        return grad_out * inside, None, None, None


class ActQuant(nn.Module):
    def __init__(self, momentum=0.05, signed=False):
        super().__init__()
        self.momentum = momentum
        self.qmin, self.qmax = (-128, 127) if signed else (0, 255)
        self.register_buffer("running_max", torch.tensor(1.0))

    def forward(self, x):
        if self.training:
            with torch.no_grad():
                self.running_max.mul_(1 - self.momentum).add_(self.momentum * x.abs().max())
        scale = (self.running_max / self.qmax).clamp_min(1e-8)
        return FakeQuantSTE.apply(x, scale, self.qmin, self.qmax)


class QConvBlock(nn.Module):
    def __init__(self, cin, cout, quantize=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        # first layers stay in float (common practice: they are cheap and sensitive)
        self.quant = ActQuant() if quantize else nn.Identity()

    def forward(self, x):
        return self.quant(F.relu(self.bn(self.conv(x))))


class QNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(
            QConvBlock(3, 32, quantize=False), nn.MaxPool2d(2),
            QConvBlock(32, 64, quantize=False), nn.MaxPool2d(2),
            QConvBlock(64, 64), nn.MaxPool2d(2),
            QConvBlock(64, 128), nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(128, N_CLASSES)

    def forward(self, x):
        return self.fc(self.blocks(x).flatten(1))


def synthetic_batch(g, n):
    """Colour blobs whose position/colour encode the class."""
    y = torch.randint(0, N_CLASSES, (n,), generator=g)
    yy, xx = torch.meshgrid(torch.arange(IMG), torch.arange(IMG), indexing="ij")
    cx = (y % 5).float() * 6 + 4
    cy = (y // 5).float() * 14 + 9
    blob = torch.exp(-((xx - cx[:, None, None]) ** 2 + (yy - cy[:, None, None]) ** 2) / 18.0)
    colour = torch.stack([(y % 3 == c).float() for c in range(3)], 1)[:, :, None, None]
    x = 0.6 * blob[:, None] * (0.5 + colour) + 0.8 * torch.randn(n, 3, IMG, IMG, generator=g)
    return x, y


def export_scales(model, pct=0.999):
    scales = []
    for obs in FakeQuantSTE.observed_inputs[-2:]:
        flat = obs.detach().flatten()
        k = max(1, int(pct * flat.numel()))
        scales.append(flat.kthvalue(k).values.item() / 255)
    return scales


def main():
    model = QNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4, nesterov=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=EPOCHS * STEPS_PER_EPOCH)
    g = torch.Generator().manual_seed(1)
    x_val, y_val = synthetic_batch(torch.Generator().manual_seed(2), 128)

    t0 = time.time()
    for epoch in range(EPOCHS):
        model.train()
        running, correct, seen = 0.0, 0, 0
        for _ in range(STEPS_PER_EPOCH):
            x, y = synthetic_batch(g, BATCH)
            logits = model(x)
            loss = F.cross_entropy(logits, y, label_smoothing=0.05)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            running += loss.item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)

        model.eval()
        with torch.no_grad():
            val_acc = (model(x_val).argmax(1) == y_val).float().mean().item()
        print(f"epoch {epoch}  loss {running / seen:.3f}  train acc {correct / seen:.3f}  "
              f"val acc {val_acc:.3f}  {time.time() - t0:.1f}s", flush=True)

    print("int8 activation scales:", [round(s, 4) for s in export_scales(model)])


if __name__ == "__main__":
    main()
