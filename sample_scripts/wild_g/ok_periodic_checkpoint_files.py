# expect: no_leak
# holder: none
# pattern: MLP regression training loop that every 25 steps builds a checkpoint dict (model/optimizer/scheduler state_dicts, RNG state, step) and torch.save()s it to a temp dir under /tmp, keeping only the newest 3 files on disk; the dict is a local that is dropped right after saving, and the directory is removed at the end, so memory saw-tooths but stays flat (torch.optim.AdamW + StepLR)
# step_ms: 15
"""Periodic checkpointing to disk during training.

Standard "save every N steps, keep the last K" logic: the checkpoint dict
is assembled, written with ``torch.save`` to a temporary file and then
atomically renamed; older files beyond ``KEEP_LAST`` are unlinked.  At the
end the newest checkpoint is loaded back into a fresh model to check that
resuming works, and the whole temp directory is deleted.
"""
import os
import shutil
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

IN_DIM = 64
HIDDEN = 512
BATCH = 128
STEPS = 1300
SAVE_EVERY = 25
KEEP_LAST = 3


def make_model():
    return nn.Sequential(
        nn.Linear(IN_DIM, HIDDEN), nn.GELU(), nn.LayerNorm(HIDDEN),
        nn.Linear(HIDDEN, HIDDEN), nn.GELU(), nn.LayerNorm(HIDDEN),
        nn.Linear(HIDDEN, HIDDEN), nn.GELU(),
        nn.Linear(HIDDEN, 1),
    )


def target_fn(x, w_true):
    return torch.sin(x @ w_true).sum(dim=1, keepdim=True) + 0.1 * (x[:, :8] ** 2).sum(dim=1, keepdim=True)


def save_checkpoint(ckpt_dir, step, model, opt, sched, saved):
    ckpt = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "torch_rng": torch.get_rng_state(),
    }
    path = os.path.join(ckpt_dir, f"ckpt_{step:06d}.pt")
    tmp = path + ".tmp"
    torch.save(ckpt, tmp)
    os.replace(tmp, path)
    saved.append(path)
    while len(saved) > KEEP_LAST:
        os.remove(saved.pop(0))
    return path


def main():
    ckpt_dir = tempfile.mkdtemp(prefix="ckpt_run_", dir="/tmp")
    gen = torch.Generator().manual_seed(1)
    w_true = torch.randn(IN_DIM, 4, generator=gen) / IN_DIM ** 0.5
    model = make_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=400, gamma=0.5)
    saved = []
    t0 = time.time()
    running = 0.0
    try:
        for step in range(1, STEPS + 1):
            x = torch.randn(BATCH, IN_DIM, generator=gen)
            y = target_fn(x, w_true)
            loss = F.mse_loss(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            sched.step()
            running = 0.95 * running + 0.05 * loss.item()
            if step % SAVE_EVERY == 0:
                path = save_checkpoint(ckpt_dir, step, model, opt, sched, saved)
                if step % 200 == 0:
                    size_mb = os.path.getsize(path) / 2 ** 20
                    print(f"step {step:4d} loss {running:.4f} lr {sched.get_last_lr()[0]:.1e} "
                          f"saved {os.path.basename(path)} ({size_mb:.1f} MB), on disk {len(saved)} "
                          f"({time.time() - t0:.1f}s)")

        # resume check from the newest checkpoint
        state = torch.load(saved[-1], map_location="cpu", weights_only=True)
        restored = make_model()
        restored.load_state_dict(state["model"])
        x = torch.randn(256, IN_DIM, generator=gen)
        with torch.no_grad():
            diff = (restored(x) - model(x)).abs().max().item()
        print(f"restored step {state['step']} max |diff| vs live model {diff:.2e}")
        del state, restored
    finally:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    print(f"done in {time.time() - t0:.1f}s, removed {ckpt_dir}")


if __name__ == "__main__":
    main()
