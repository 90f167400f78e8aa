# expect: no_leak
# holder:
# pattern: tutorial train()/test() per epoch; test() runs under torch.no_grad() and returns Python floats, val_history only grows by two floats per epoch, best weights kept as one cloned state_dict that is replaced
# step_ms: 3
"""Quickstart-shaped training with a per-epoch validation pass done right.

Same structure as the PyTorch Quickstart: ``train(dataloader, model, loss_fn,
optimizer)`` and ``test(dataloader, model, loss_fn)`` called from
``for t in range(epochs)``.  ``test`` wraps the loop in ``torch.no_grad()``
and accumulates ``loss.item()``; ``val_history`` holds floats.  The best
weights are kept as a single cloned state_dict that is overwritten when the
validation loss improves, and ``last_batch`` (the most recent predictions) is
rebound every step, so nothing accumulates.
"""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(0)


class NoisyPrototypes(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        protos = torch.randn(10, 1, 28, 28, generator=torch.Generator().manual_seed(42))
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.x = protos[self.y] + 2.0 * torch.randn(n, 1, 28, 28, generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 512), nn.ReLU(),
            nn.Linear(512, 512), nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


last_batch = {}


def train(dataloader, model, loss_fn, optimizer):
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        # keep the latest batch around for debugging (rebound each step)
        last_batch["pred"] = pred
        last_batch["loss"] = loss


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    return test_loss, correct


def main():
    train_dataloader = DataLoader(NoisyPrototypes(1536, 1), batch_size=64, shuffle=True, num_workers=0)
    test_dataloader = DataLoader(NoisyPrototypes(512, 2), batch_size=64, num_workers=0)
    model = NeuralNetwork()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)

    val_history, acc_history = [], []
    best_loss, best_state = float("inf"), None
    epochs = 140
    t0 = time.time()
    for t in range(epochs):
        train(train_dataloader, model, loss_fn, optimizer)
        val_loss, acc = test(test_dataloader, model, loss_fn)
        val_history.append(val_loss)
        acc_history.append(acc)
        if val_loss < best_loss:
            best_loss = val_loss
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if t % 10 == 0 or t == epochs - 1:
            print(f"Epoch {t+1:3d}: Accuracy {100*acc:5.1f}%, Avg loss {val_loss:.4f} ({time.time()-t0:.1f}s)")
    model.load_state_dict(best_state)
    print(f"Done! best val loss {best_loss:.4f}")


if __name__ == "__main__":
    main()
