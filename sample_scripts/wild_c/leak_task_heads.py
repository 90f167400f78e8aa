# expect: leak
# holder: heads|param_groups
# pattern: multi-head continual learner appends a new nn.Linear head (and an optimizer param group) every time the task id switches, even for tasks it has already seen
# step_ms: 25
"""Task-incremental continual learning with a shared CNN backbone.

The data stream cycles through 5 tasks (each task is a different 10-way
labelling of random 3x32x32 images).  Whenever the stream switches task, the
trainer calls ``model.add_head(...)`` and registers the new head's parameters
with ``optimizer.add_param_group``.  The intent was "one head per task", but
the check only compares against the *previous* task id, so every switch back
to an old task creates yet another head.  ``model.heads`` (an nn.ModuleList)
and ``optimizer.param_groups`` / ``optimizer.state`` grow without bound, each
head carrying its weights plus two Adam moment buffers.

Fix: keep a ``dict`` task_id -> head index (or an nn.ModuleDict keyed by task)
and only add a head the first time a task is seen.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(0)

NUM_TASKS = 5
STEPS_PER_TASK = 10


class TaskStream(Dataset):
    def __init__(self, n_per_task=256):
        g = torch.Generator().manual_seed(7)
        self.x = torch.randn(NUM_TASKS, n_per_task, 3, 32, 32, generator=g)
        # each task: labels from its own random linear teacher
        self.teachers = torch.randn(NUM_TASKS, 3 * 32 * 32, 10, generator=g)
        self.y = torch.stack([
            (self.x[t].flatten(1) @ self.teachers[t]).argmax(1) for t in range(NUM_TASKS)
        ])
        self.n = n_per_task

    def __len__(self):
        return NUM_TASKS * self.n

    def __getitem__(self, i):
        t, j = divmod(i, self.n)
        return self.x[t, j], self.y[t, j], t


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 256)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return F.relu(self.fc(x.flatten(1)))


class MultiHeadNet(nn.Module):
    def __init__(self, feat_dim=256):
        super().__init__()
        self.backbone = Backbone()
        self.heads = nn.ModuleList()
        self.feat_dim = feat_dim

    def add_head(self, num_classes):
        head = nn.Sequential(nn.Linear(self.feat_dim, 384), nn.ReLU(), nn.Linear(384, num_classes))
        self.heads.append(head)
        return head

    def forward(self, x, head_idx=-1):
        return self.heads[head_idx](self.backbone(x))


def task_batches(ds, batch_size):
    """Yield batches task by task, STEPS_PER_TASK batches each, forever-ish."""
    loaders = [
        DataLoader(torch.utils.data.Subset(ds, range(t * ds.n, (t + 1) * ds.n)),
                   batch_size=batch_size, shuffle=True, num_workers=0)
        for t in range(NUM_TASKS)
    ]
    while True:
        for t in range(NUM_TASKS):
            it = iter(loaders[t])
            for _ in range(STEPS_PER_TASK):
                try:
                    yield next(it)
                except StopIteration:
                    it = iter(loaders[t])
                    yield next(it)


def main():
    ds = TaskStream()
    model = MultiHeadNet()
    optimizer = torch.optim.Adam(model.backbone.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    current_task = None
    total_steps = 850
    t0 = time.time()
    running = 0.0
    for step, (x, y, task) in enumerate(task_batches(ds, batch_size=32)):
        if step >= total_steps:
            break
        task_id = int(task[0])
        if task_id != current_task:
            # new task -> new head
            head = model.add_head(num_classes=10)
            optimizer.add_param_group({"params": head.parameters(), "lr": 1e-3})
            current_task = task_id

        model.train()
        optimizer.zero_grad()
        logits = model(x)
        loss = loss_fn(logits, y)
        loss.backward()
        optimizer.step()
        running += loss.item()

        if (step + 1) % 100 == 0:
            print(f"step {step+1:5d}  loss {running/100:.3f}  heads={len(model.heads)}  "
                  f"param_groups={len(optimizer.param_groups)}  {time.time()-t0:.1f}s")
            running = 0.0


if __name__ == "__main__":
    main()
