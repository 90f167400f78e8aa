# expect: no_leak
# pattern: MLP classifier (AdamW) trained on a ~220 MB float32 feature file opened with np.memmap; batches are read in chunk-shuffled order, so during the first epoch every newly touched page of the mapping is faulted in and RSS climbs steadily by the file size, then later epochs hit the same resident pages and RSS stays flat (nothing is retained by the program)
# step_ms: 20
"""Train a classifier on precomputed embeddings stored on disk.

The embedding dump is far larger than what we want to copy into the process,
so it is memory-mapped and read batch by batch. Shuffling is done at the
level of contiguous chunks (shuffle chunk order, then rows inside a chunk)
to keep reads mostly sequential.
"""
import os
import shutil
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_ROWS = 72_000
DIM = 768
N_CLASSES = 10
LATENT = 32
CHUNK_ROWS = 4096
BATCH = 256
EPOCHS = 3


def write_feature_dump(path, rng):
    """Synthesize an embedding dump: low-rank signal + noise, written chunk by chunk."""
    mixing = rng.standard_normal((LATENT, DIM)).astype(np.float32) / np.sqrt(LATENT)
    teacher = rng.standard_normal((LATENT, N_CLASSES)).astype(np.float32)
    labels = np.empty(N_ROWS, dtype=np.int64)
    with open(path, "wb") as fh:
        for start in range(0, N_ROWS, CHUNK_ROWS):
            n = min(CHUNK_ROWS, N_ROWS - start)
            z = rng.standard_normal((n, LATENT)).astype(np.float32)
            x = z @ mixing + 0.5 * rng.standard_normal((n, DIM)).astype(np.float32)
            labels[start:start + n] = np.argmax(z @ teacher + 0.3 * rng.standard_normal((n, N_CLASSES)), 1)
            fh.write(x.astype(np.float32).tobytes())
    return labels


def chunked_batches(n_rows, rng):
    chunk_starts = np.arange(0, n_rows, CHUNK_ROWS)
    rng.shuffle(chunk_starts)
    for start in chunk_starts:
        rows = np.arange(start, min(start + CHUNK_ROWS, n_rows))
        rng.shuffle(rows)
        for i in range(0, len(rows) - BATCH + 1, BATCH):
            yield np.sort(rows[i:i + BATCH])


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(DIM, 512), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(512, 512), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(512, N_CLASSES))

    def forward(self, x):
        return self.net(x)


def main():
    rng = np.random.default_rng(0)
    workdir = tempfile.mkdtemp(prefix="emb_dump_")
    try:
        path = os.path.join(workdir, "features.f32")
        labels = write_feature_dump(path, rng)
        feats = np.memmap(path, dtype=np.float32, mode="r", shape=(N_ROWS, DIM))
        y_all = torch.from_numpy(labels)

        model = Classifier()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
        t0 = time.time()
        step = 0
        for epoch in range(EPOCHS):
            model.train()
            correct = seen = 0
            loss_sum = 0.0
            for idx in chunked_batches(N_ROWS, rng):
                xb = torch.from_numpy(np.ascontiguousarray(feats[idx]))
                yb = y_all[idx]
                logits = model(xb)
                loss = F.cross_entropy(logits, yb)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                loss_sum += loss.item() * len(idx)
                correct += (logits.argmax(1) == yb).sum().item()
                seen += len(idx)
                step += 1
                if step % 100 == 0:
                    print(f"epoch {epoch} step {step} loss {loss_sum / seen:.3f} "
                          f"acc {correct / seen:.3f} t={time.time() - t0:.1f}s", flush=True)
        del feats
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
