# expect: leak
# holder: val_history
# pattern: test() forgets torch.no_grad() and returns the summed validation loss tensor (graph attached); the caller appends it to val_history every epoch
# step_ms: 3
"""Quickstart-style classifier (FashionMNIST shape, synthetic data).

Follows the shape of the PyTorch "Quickstart" tutorial: a ``train`` and a
``test`` function called once per epoch.  The bug is in ``test``: it calls
``model.eval()`` but not ``torch.no_grad()``, accumulates ``test_loss +=
loss_fn(pred, y)`` as a tensor and returns it.  The caller keeps it in
``val_history`` for plotting, so each epoch keeps a whole validation pass worth
of autograd graph (every saved activation of every validation batch) alive.

Fix: wrap the loop in ``torch.no_grad()`` and accumulate ``loss.item()``
(return a Python float).
"""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(0)


class FakeFashion(Dataset):
    """28x28 'images' with a learnable label (nearest of 10 prototypes)."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        protos = torch.randn(10, 28, 28, generator=torch.Generator().manual_seed(123))
        self.labels = torch.randint(0, 10, (n,), generator=g)
        self.images = protos[self.labels] + 1.5 * torch.randn(n, 28, 28, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.images[idx].unsqueeze(0), self.labels[idx]


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def train(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        pred = model(X)
        loss = loss_fn(pred, y)

        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

        if batch % 20 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            # print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    for X, y in dataloader:
        pred = model(X)
        test_loss += loss_fn(pred, y)
        correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    return test_loss, correct


def main():
    training_data = FakeFashion(1536, seed=1)
    test_data = FakeFashion(160, seed=2)
    batch_size = 64
    train_dataloader = DataLoader(training_data, batch_size=batch_size, shuffle=True, num_workers=0)
    test_dataloader = DataLoader(test_data, batch_size=batch_size, num_workers=0)

    model = NeuralNetwork()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)

    val_history = []
    acc_history = []
    epochs = 150
    t_start = time.time()
    for t in range(epochs):
        train(train_dataloader, model, loss_fn, optimizer)
        val_loss, acc = test(test_dataloader, model, loss_fn)
        val_history.append(val_loss)
        acc_history.append(acc)
        if t % 10 == 0 or t == epochs - 1:
            print(f"Epoch {t+1:3d}: Accuracy {100*acc:5.1f}%, Avg loss {val_loss:.4f}  ({time.time()-t_start:.1f}s)")
    best = torch.stack(val_history).argmin().item()
    print(f"Done! best epoch {best+1} with val loss {val_history[best]:.4f}")


if __name__ == "__main__":
    main()
