# expect: no_leak
# pattern: a ~310 MB "pretrained" two-tower recommender (1.2M x 64 EmbeddingBag tables) is built, round-tripped through an in-memory checkpoint (torch.save/torch.load on BytesIO, buffer and loaded state_dict deleted) and then fine-tuned with sparse gradients (Adagrad for the tables, whose dense state is allocated in its constructor; Adam for the small towers); the big allocation happens once at start, per-step sparse grads are freed every step and only a few floats are logged, so RSS is flat after the first steps
# step_ms: 11
"""Fine-tune a pretrained two-tower retrieval model on fresh click logs.

The user tower and the item tower each start from an EmbeddingBag table
restored from last week's checkpoint (here: a randomly initialized model
serialized to an in-memory buffer, so the script is self-contained).  We
fine-tune on synthetic click data with in-batch negatives.  The tables use
sparse gradients and Adagrad, the MLP towers use Adam.
"""
import io
import time

import torch
import torch.nn.functional as F
from torch import nn

torch.set_num_threads(1)
torch.manual_seed(0)

N_USER_FEATS = 800_000
N_ITEMS = 400_000
DIM = 64
BAG = 12
BATCH = 256
N_STEPS = 1200
N_SEGMENTS = 5_000


class Tower(nn.Module):
    def __init__(self, n_rows):
        super().__init__()
        self.table = nn.EmbeddingBag(n_rows, DIM, mode="mean", sparse=True)
        self.mlp = nn.Sequential(nn.Linear(DIM, 128), nn.ReLU(), nn.Linear(128, DIM))

    def forward(self, ids, offsets=None):
        z = self.mlp(self.table(ids, offsets))
        return F.normalize(z, dim=-1)


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = Tower(N_USER_FEATS)
        self.item = Tower(N_ITEMS)
        self.log_temp = nn.Parameter(torch.tensor(2.5))

    def forward(self, user_ids, item_ids):
        u = self.user(user_ids)
        v = self.item(item_ids)
        return u @ v.T * self.log_temp.exp()


def load_pretrained():
    src = TwoTower()
    buf = io.BytesIO()
    torch.save(src.state_dict(), buf)
    del src
    print(f"checkpoint size {buf.tell() / 2**20:.0f} MiB", flush=True)
    buf.seek(0)
    state = torch.load(buf, weights_only=True)
    model = TwoTower()
    model.load_state_dict(state)
    del state, buf
    return model


def click_batch(g):
    # a user is a bag of feature ids: one "segment" id from a hot set plus long-tail
    # features; the clicked item mostly depends on the segment
    segment = torch.randint(0, N_SEGMENTS, (BATCH, 1), generator=g)
    tail = torch.randint(N_SEGMENTS, N_USER_FEATS, (BATCH, BAG - 1), generator=g)
    user_ids = torch.cat([segment, tail], dim=1)
    item_ids = (segment * 7 + torch.randint(0, 4, (BATCH, 1), generator=g)) % N_ITEMS
    return user_ids, item_ids


def main():
    t0 = time.time()
    model = load_pretrained()
    print(f"loaded in {time.time() - t0:.1f}s", flush=True)
    sparse_params = [model.user.table.weight, model.item.table.weight]
    dense_params = [p for n, p in model.named_parameters() if "table" not in n]
    opt_sparse = torch.optim.Adagrad(sparse_params, lr=0.2)
    opt_dense = torch.optim.Adam(dense_params, lr=1e-3)

    g = torch.Generator().manual_seed(1)
    labels = torch.arange(BATCH)
    losses = []
    t1 = time.time()
    last_print = t1
    for step in range(N_STEPS):
        user_ids, item_ids = click_batch(g)
        logits = model(user_ids, item_ids)
        loss = F.cross_entropy(logits, labels)
        opt_sparse.zero_grad(set_to_none=True)
        opt_dense.zero_grad(set_to_none=True)
        loss.backward()
        opt_sparse.step()
        opt_dense.step()
        if step % 100 == 0:
            losses.append(loss.item())
        now = time.time()
        if now - last_print > 1.0:
            last_print = now
            print(f"step {step:4d} loss {loss.item():.4f} ({now - t1:.1f}s)", flush=True)
    print(f"losses every 100 steps: {[round(v, 3) for v in losses]}")
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
