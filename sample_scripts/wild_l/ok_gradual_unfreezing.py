# expect: no_leak
# pattern: ULMFiT-style fine-tuning of a transformer encoder (AdamW): blocks are unfrozen one at a time from the top, each new block added with opt.add_param_group at a lower (discriminative) learning rate; every unfreeze adds gradients, lazily created AdamW moments and the saved activations of one more block, so memory climbs in a staircase over the first half of training and is flat once the whole encoder is trainable
# step_ms: 300
"""Fine-tune a (pretend) pretrained transformer encoder on a sequence
classification task with gradual unfreezing and discriminative learning
rates, as in ULMFiT.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB = 6000
D_MODEL = 192
N_LAYERS = 6
SEQ_LEN = 48
BATCH = 16
N_CLASSES = 5
TOTAL_STEPS = 60
UNFREEZE_EVERY = 5
BASE_LR = 3e-4
LR_DECAY = 0.7


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(torch.randn(SEQ_LEN, D_MODEL) * 0.02)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(D_MODEL, 8, 4 * D_MODEL, dropout=0.1, batch_first=True, norm_first=True)
            for _ in range(N_LAYERS))
        self.norm = nn.LayerNorm(D_MODEL)

    def forward(self, idx):
        x = self.tok(idx) + self.pos[: idx.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)


class Classifier(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Sequential(nn.Linear(D_MODEL, D_MODEL), nn.Tanh(), nn.Linear(D_MODEL, N_CLASSES))

    def forward(self, idx):
        h = self.encoder(idx)
        return self.head(h.mean(1))


def make_batch(gen):
    """Synthetic task: the label is decided by which keyword family dominates the sequence."""
    y = torch.randint(0, N_CLASSES, (BATCH,), generator=gen)
    idx = torch.randint(100, VOCAB, (BATCH, SEQ_LEN), generator=gen)
    n_kw = torch.randint(4, 12, (BATCH,), generator=gen)
    for i in range(BATCH):
        pos = torch.randperm(SEQ_LEN, generator=gen)[: n_kw[i]]
        idx[i, pos] = y[i] * 20 + torch.randint(0, 20, (int(n_kw[i]),), generator=gen)
    return idx, y


def main():
    gen = torch.Generator().manual_seed(1)
    model = Classifier(Encoder())
    for p in model.encoder.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(model.head.parameters(), lr=BASE_LR, weight_decay=0.01)
    unfrozen = 0
    t0 = time.time()
    running = None
    for step in range(TOTAL_STEPS):
        if step % UNFREEZE_EVERY == 0 and unfrozen < N_LAYERS:
            block = model.encoder.blocks[N_LAYERS - 1 - unfrozen]
            params = list(block.parameters())
            if unfrozen == 0:
                params += list(model.encoder.norm.parameters())
            for p in params:
                p.requires_grad_(True)
            opt.add_param_group({"params": params, "lr": BASE_LR * LR_DECAY ** (unfrozen + 1)})
            unfrozen += 1
            print(f"step {step}: unfroze block {N_LAYERS - unfrozen} "
                  f"({sum(p.numel() for g in opt.param_groups for p in g['params']) / 1e6:.2f}M trainable)",
                  flush=True)
        model.train()
        idx, y = make_batch(gen)
        loss = F.cross_entropy(model(idx), y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for g in opt.param_groups for p in g["params"]], 1.0)
        opt.step()
        running = loss.item() if running is None else 0.9 * running + 0.1 * loss.item()
        if step % 6 == 5:
            print(f"step {step + 1}/{TOTAL_STEPS} loss {running:.3f} t={time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
