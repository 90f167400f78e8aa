# expect: leak
# holder: _forward_hooks|model.encoder._forward_hooks|probe
# pattern: a forward hook (callable object capturing the step's input batch) is registered on the encoder every step and its handle is never removed
# step_ms: 15
"""Tabular classifier with an 'activation growth' diagnostic.

To log how strongly the encoder amplifies its input, each step creates an
ActivationProbe holding the current batch and registers it as a forward hook.
The RemovableHandle is dropped on the floor, so the hooks pile up in
`model.encoder._forward_hooks`: every probe keeps its batch alive (~24 KB) and
every forward pass calls all previous probes, so steps also get slower.
Fix: `handle = ...register_forward_hook(probe)` then `handle.remove()` after
the forward, or register one hook once outside the loop.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class ActivationProbe:
    def __init__(self, inputs):
        self.inputs = inputs
        self.ratio = float("nan")

    def __call__(self, module, args, output):
        if output.shape[0] != self.inputs.shape[0]:
            return
        with torch.no_grad():
            self.ratio = (output.norm() / (self.inputs.norm() + 1e-8)).item()


class Net(nn.Module):
    def __init__(self, d_in=64, d_hidden=192, n_classes=6):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(),
                                     nn.Linear(d_hidden, d_hidden), nn.ReLU())
        self.head = nn.Linear(d_hidden, n_classes)

    def forward(self, x):
        return self.head(self.encoder(x))


def make_data(n, d_in=64, n_classes=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    protos = torch.randn(n_classes, d_in, generator=g) * 1.5
    y = torch.randint(0, n_classes, (n,), generator=g)
    x = protos[y] + torch.randn(n, d_in, generator=g)
    return x, y


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x_all, y_all = make_data(50_000)
    model = Net()
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    batch = 96
    steps = 1100
    ratios = []
    t0 = time.time()
    for step in range(steps):
        idx = torch.randint(0, x_all.shape[0], (batch,))
        x, y = x_all[idx], y_all[idx]

        probe = ActivationProbe(x)
        model.encoder.register_forward_hook(probe)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ratios.append(probe.ratio)

        if step % 300 == 0:
            acc = (logits.argmax(1) == y).float().mean().item()
            print(f"step {step:4d} loss {loss.item():.3f} acc {acc:.2f} "
                  f"act/input {probe.ratio:.2f} ({time.time() - t0:.1f}s)", flush=True)
    print(f"mean activation ratio {sum(ratios) / len(ratios):.3f}")


if __name__ == "__main__":
    main()
