# expect: leak
# holder: captured|_forward_hooks
# pattern: forward hooks registered once by attach_activation_penalty() append every layer output to a closure-captured dict of lists; the L2 activation penalty only reads [-1], so every step's activations (and the validation passes') stay alive
# step_ms: 8
"""MLP regressor with an activation-magnitude penalty implemented via forward hooks.

``attach_activation_penalty(model, layers)`` registers one forward hook per
chosen layer (here the two bottleneck layers).  Each hook appends the layer's
output to a list in a dict that lives in the closure, and the returned ``penalty()`` callable adds
``mean(a ** 2)`` of the most recent output of every layer to the loss (a
common trick to keep activations small before int8 export).

Why it leaks: the hooks ``append`` and nobody ever clears the lists -- the
penalty only looks at ``outs[-1]``, so the loss is right and the step time is
flat, but every step's hidden activations (and the ones produced during the
periodic validation passes) are kept by the closure for the whole run.

Fix: store only the latest output (``captured[name] = output``) or clear the
lists after computing the penalty.
"""
import math
import time
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

N_FEATURES = 48
HIDDEN = 512
BOTTLENECK = 32
BATCH = 128
STEPS = 1800
VAL_EVERY = 300

_W_TRUE = torch.randn(N_FEATURES, 16, generator=torch.Generator().manual_seed(123)) / math.sqrt(N_FEATURES)


def make_regression(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, N_FEATURES, generator=g)
    y = torch.tanh(x @ _W_TRUE).pow(2).sum(1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=g)
    return x, y


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(N_FEATURES, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.fc3 = nn.Linear(HIDDEN, BOTTLENECK)
        self.fc4 = nn.Linear(BOTTLENECK, BOTTLENECK)
        self.out = nn.Linear(BOTTLENECK, 1)

    def forward(self, x):
        x = F.gelu(self.fc1(x))
        x = F.gelu(self.fc2(x))
        x = F.gelu(self.fc3(x))
        x = F.gelu(self.fc4(x))
        return self.out(x)


def attach_activation_penalty(model, layer_names):
    captured = defaultdict(list)
    modules = dict(model.named_modules())

    def make_hook(name):
        def hook(module, inputs, output):
            captured[name].append(output)
        return hook

    handles = [modules[n].register_forward_hook(make_hook(n)) for n in layer_names]

    def penalty():
        terms = [outs[-1].pow(2).mean() for outs in captured.values() if outs]
        return torch.stack(terms).sum() if terms else torch.zeros(())

    return penalty, handles


def main():
    x_train, y_train = make_regression(20_000, seed=1)
    x_val, y_val = make_regression(2_000, seed=2)

    model = MLP()
    penalty, _handles = attach_activation_penalty(model, ["fc3", "fc4"])
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)
    lam = 1e-3

    g = torch.Generator().manual_seed(3)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        idx = torch.randint(0, len(x_train), (BATCH,), generator=g)
        xb, yb = x_train[idx], y_train[idx]

        pred = model(xb)
        mse = F.mse_loss(pred, yb)
        loss = mse + lam * penalty()

        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()

        if step % VAL_EVERY == 0:
            model.eval()
            with torch.no_grad():
                val = sum(F.mse_loss(model(x_val[i:i + 500]), y_val[i:i + 500]).item()
                          for i in range(0, len(x_val), 500)) / 4
            model.train()
            print(f"step {step:4d}  train mse {mse.item():.4f}  val mse {val:.4f}  "
                  f"lr {sched.get_last_lr()[0]:.2e}  {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
