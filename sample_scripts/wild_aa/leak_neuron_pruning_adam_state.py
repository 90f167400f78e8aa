# expect: leak
# holder: optimizer.state|opt.state|Adam.state|self.opt.state|state
# pattern: structured (whole-neuron) pruning of a wide tabular MLP regressor during training (torch.optim.Adam, ~12 ms steps, code in main() + a NeuronPruner class); every 100 steps NeuronPruner.prune() ranks the hidden units of each layer by weight-norm x mean |activation| (forward hooks fill fixed per-layer vectors), physically shrinks the two Linear layers around every hidden layer by slicing their weights into brand-new nn.Parameter objects, re-points optimizer.param_groups[0]["params"] at the new parameters and carefully migrates the sliced Adam moments (opt.state[new] = {step, exp_avg[keep], exp_avg_sq[keep]}) so training continues smoothly; it never deletes opt.state[old], so the optimizer's state dict (keyed by Parameter) keeps every pre-pruning Parameter (with its .grad) and both full-size moment tensors alive after each round, although the model itself gets smaller
# step_ms: 12
"""Train-and-prune a tabular MLP (house-price-like regression on synthetic data).

The network starts wide (3 x 768 hidden units) and loses 6% of the hidden
units of every layer every 100 steps, so the final model has ~3x fewer parameters
while keeping the validation error within a few percent.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

N_FEATURES = 48
HIDDEN = 768
BATCH = 256
TOTAL_STEPS = 1100
PRUNE_EVERY = 100
PRUNE_FRAC = 0.06


def make_data(n, rng):
    x = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    w1 = np.linspace(-1, 1, N_FEATURES).astype(np.float32)
    y = (np.sin(x[:, :8] @ w1[:8]) + 0.5 * np.tanh(x[:, 8:20] @ w1[8:20])
         + 0.2 * (x[:, 20:30] ** 2).sum(1) / 10 + 0.1 * x[:, 30] * x[:, 31])
    y = y + rng.normal(0, 0.05, n)
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.Linear(N_FEATURES, HIDDEN), nn.Linear(HIDDEN, HIDDEN),
            nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, 1)])

    def forward(self, x):
        for lin in self.layers[:-1]:
            x = F.gelu(lin(x))
        return self.layers[-1](x).squeeze(-1)


class NeuronPruner:
    def __init__(self, model, opt, frac):
        self.model = model
        self.opt = opt
        self.frac = frac
        self.act_sum = {}
        self.act_count = 0
        for i, lin in enumerate(model.layers[:-1]):
            lin.register_forward_hook(self._make_hook(i))

    def _make_hook(self, i):
        def hook(mod, inp, out):
            with torch.no_grad():
                a = F.gelu(out).abs().mean(0)
                if i not in self.act_sum or self.act_sum[i].shape != a.shape:
                    self.act_sum[i] = torch.zeros_like(a)
                self.act_sum[i] += a
                if i == 0:
                    self.act_count += 1
        return hook

    def _replace(self, lin, attr, new_value, index, dim):
        """Swap in a sliced parameter and carry its Adam moments over."""
        old = getattr(lin, attr)
        new = nn.Parameter(new_value.contiguous())
        setattr(lin, attr, new)
        st = self.opt.state.get(old)
        if st:
            self.opt.state[new] = {
                "step": st["step"].clone(),
                "exp_avg": st["exp_avg"].index_select(dim, index).contiguous(),
                "exp_avg_sq": st["exp_avg_sq"].index_select(dim, index).contiguous(),
            }

    @torch.no_grad()
    def prune(self):
        layers = self.model.layers
        kept = []
        for i in range(len(layers) - 1):
            lin, nxt = layers[i], layers[i + 1]
            n = lin.out_features
            score = lin.weight.norm(dim=1) * nxt.weight.norm(dim=0)
            score *= self.act_sum[i] / max(1, self.act_count)
            n_keep = max(32, int(round(n * (1 - self.frac))))
            keep = torch.topk(score, n_keep).indices.sort().values
            self._replace(lin, "weight", lin.weight[keep], keep, 0)
            self._replace(lin, "bias", lin.bias[keep], keep, 0)
            self._replace(nxt, "weight", nxt.weight[:, keep], keep, 1)
            lin.out_features = n_keep
            nxt.in_features = n_keep
            kept.append(n_keep)
        self.opt.param_groups[0]["params"] = list(self.model.parameters())
        self.act_sum.clear()
        self.act_count = 0
        return kept


def main():
    rng = np.random.default_rng(3)
    torch.manual_seed(3)
    x_train, y_train = make_data(60000, rng)
    x_val, y_val = make_data(4000, rng)
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    pruner = NeuronPruner(model, opt, PRUNE_FRAC)
    t0 = time.perf_counter()
    last = t0
    for step in range(1, TOTAL_STEPS + 1):
        idx = torch.from_numpy(rng.integers(0, len(x_train), BATCH))
        pred = model(x_train[idx])
        loss = F.mse_loss(pred, y_train[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % PRUNE_EVERY == 0 and step < TOTAL_STEPS:
            widths = pruner.prune()
            with torch.no_grad():
                val = F.mse_loss(model(x_val), y_val).item()
            n_params = sum(p.numel() for p in model.parameters())
            print(f"step {step:5d}  pruned -> {widths}  params {n_params/1e6:.2f}M  val mse {val:.4f}")
        elif time.perf_counter() - last > 3.0:
            print(f"step {step:5d}  loss {loss.item():.4f}")
            last = time.perf_counter()
    with torch.no_grad():
        val = F.mse_loss(model(x_val), y_val).item()
    print(f"done in {time.perf_counter() - t0:.1f}s  final val mse {val:.4f}")


if __name__ == "__main__":
    main()
