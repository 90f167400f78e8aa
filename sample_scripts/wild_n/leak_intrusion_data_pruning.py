# expect: leak
# holder: train_set|loader.dataset|train_set.dataset
# pattern: online data pruning drops the easiest 1.5% of the training set every 60 steps with train_set = Subset(train_set, keep_pos.tolist()), wrapping the already-pruned Subset instead of rebuilding one Subset over the base dataset; every round adds another nesting level, and each level keeps its own Python list of ~200k int indices, so the chain of Subsets (reachable from train_set / loader.dataset) grows by several MB per round for the whole run (network-intrusion MLP, DataLoader, torch.optim.AdamW)
# step_ms: 17
"""Network-intrusion detection MLP with loss-based online data pruning.

Flow records (bytes, packets, durations, flag counts, port entropy ...) are
classified as benign / malicious.  Most benign flows are trivially easy, so
every few hundred steps we drop the examples with the lowest EMA training loss
(they no longer teach the model anything, see "Deep Learning on a Data Diet",
Paul et al. 2021) and keep training on the remaining, harder ones.

Flow features are synthesised so the script runs standalone.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset, Subset

N_FEATURES = 40


class FlowDataset(Dataset):
    def __init__(self, x, y):
        self.x = torch.from_numpy(x)
        self.y = torch.from_numpy(y)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i], i


def synth_flows(rng, n):
    y = (rng.random(n) < 0.3).astype(np.int64)
    x = rng.standard_normal((n, N_FEATURES)).astype(np.float32)
    # log-scaled volume features are shifted for attacks; a hard minority overlaps
    w = rng.standard_normal(N_FEATURES).astype(np.float32) * 0.6
    hard = rng.random(n) < 0.15
    shift = np.where(hard, 0.25, 1.0).astype(np.float32)
    x += (y * shift)[:, None] * w[None, :]
    x[:, :4] = np.abs(x[:, :4]) ** 1.5  # heavy-tailed byte/packet counts
    return x, y


def make_mlp(hidden):
    return nn.Sequential(
        nn.Linear(N_FEATURES, hidden), nn.ReLU(),
        nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, 2),
    )


def prune(train_set, active_ids, score, frac):
    """Drop the `frac` easiest examples (lowest EMA loss) of the current training set."""
    order = np.argsort(score[active_ids], kind="stable")
    n_drop = int(len(active_ids) * frac)
    keep_pos = np.sort(order[n_drop:])
    return Subset(train_set, keep_pos.tolist()), active_ids[keep_pos]


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    pred = torch.cat([model(xb).argmax(1) for xb in x.split(4096)])
    model.train()
    tp = ((pred == 1) & (y == 1)).sum().item()
    fp = ((pred == 1) & (y == 0)).sum().item()
    fn = ((pred == 0) & (y == 1)).sum().item()
    return (pred == y).float().mean().item(), tp / max(tp + fp, 1), tp / max(tp + fn, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-train", type=int, default=200_000)
    ap.add_argument("--steps", type=int, default=1260)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--prune-every", type=int, default=60)
    ap.add_argument("--prune-frac", type=float, default=0.015)
    ap.add_argument("--ema", type=float, default=0.7)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    x_np, y_np = synth_flows(rng, args.n_train + 20_000)
    base = FlowDataset(x_np[: args.n_train], y_np[: args.n_train])
    x_val = torch.from_numpy(x_np[args.n_train:])
    y_val = torch.from_numpy(y_np[args.n_train:])

    model = make_mlp(args.hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)

    # EMA of the per-example loss; unseen examples start high so they are never pruned
    score = np.full(args.n_train, 10.0, dtype=np.float32)
    train_set, active_ids = base, np.arange(args.n_train)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True)

    step, rounds = 0, 0
    t0 = time.time()
    while step < args.steps:
        for xb, yb, ib in loader:
            logits = model(xb)
            per_example = F.cross_entropy(logits, yb, reduction="none")
            loss = per_example.mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

            ids = ib.numpy()  # FlowDataset returns the base index
            prev = score[ids]
            fresh = prev >= 10.0
            score[ids] = np.where(fresh, per_example.detach().numpy(),
                                  args.ema * prev + (1 - args.ema) * per_example.detach().numpy())
            step += 1
            if step % args.prune_every == 0 or step >= args.steps:
                break

        if step % args.prune_every == 0 and step < args.steps:
            train_set, active_ids = prune(train_set, active_ids, score, args.prune_frac)
            loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True)
            rounds += 1
            if rounds % 5 == 0:
                acc, prec, rec = evaluate(model, x_val, y_val)
                print(
                    f"step {step}  round {rounds}  train size={len(train_set)}  loss={loss.item():.4f}  "
                    f"val acc={acc:.4f} prec={prec:.3f} rec={rec:.3f}  ({time.time() - t0:.1f}s)"
                )
    acc, prec, rec = evaluate(model, x_val, y_val)
    print(f"final: train size={len(train_set)}  val acc={acc:.4f} prec={prec:.3f} rec={rec:.3f}")
    print("done")


if __name__ == "__main__":
    main()
