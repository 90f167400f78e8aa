# expect: leak
# holder: memo|TTAPredictor
# pattern: clean training phase, then a test-time-augmentation evaluator (a class with __call__) memoizes outputs in a dict keyed by a hash of the augmented batch, which is unique every call, so the dict only grows during evaluation
# step_ms: 2
"""Two-phase pipeline: train a small MLP classifier, then TTA evaluation.

Phase 1 (training) is clean. Phase 2 runs many rounds of test-time augmentation
through ``TTAPredictor.__call__``, which memoizes (features, logits) per input in
``self.memo`` keyed by an md5 of the batch bytes "to avoid recomputing". Random
augmentations make every key new, so the cache never hits and grows for the
whole evaluation phase.
Fix: drop the memo (it can never hit) or key it by (batch index, aug id) with a bound.
"""
import hashlib
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(21)
rng = np.random.default_rng(21)

N_CLASSES, D = 10, 128
centers = rng.standard_normal((N_CLASSES, D)).astype(np.float32) * 0.3


def sample(n):
    y = rng.integers(0, N_CLASSES, size=n)
    x = centers[y] + rng.standard_normal((n, D)).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(D, 256), nn.GELU(), nn.Linear(256, 128), nn.GELU())
        self.head = nn.Linear(128, N_CLASSES)

    def forward(self, x, return_features=False):
        f = self.backbone(x)
        out = self.head(f)
        return (out, f) if return_features else out


class TTAPredictor:
    def __init__(self, model, n_aug=4, noise=0.2):
        self.model = model
        self.n_aug = n_aug
        self.noise = noise
        self.memo = {}
        self.hits = 0

    def _forward(self, x):
        key = hashlib.md5(x.numpy().tobytes()).hexdigest()
        if key in self.memo:
            self.hits += 1
            return self.memo[key]
        logits, feats = self.model(x, return_features=True)
        self.memo[key] = (feats.half(), logits)   # half precision to save memory
        return feats, logits

    @torch.no_grad()
    def __call__(self, x):
        probs = 0
        for _ in range(self.n_aug):
            x_aug = x + self.noise * torch.randn_like(x)
            _, logits = self._forward(x_aug)
            probs = probs + F.softmax(logits, dim=1)
        return probs / self.n_aug


# ---------------- phase 1: training (flat) ----------------
model = Classifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
t0 = time.time()
step = 0
while time.time() - t0 < 8.0:
    xb, yb = sample(128)
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
print(f"phase 1: {step} training steps in {time.time() - t0:.1f}s, last loss {loss.item():.3f}")

# ---------------- phase 2: TTA evaluation ----------------
model.eval()
predictor = TTAPredictor(model)
test_batches = [sample(64) for _ in range(40)]
t1 = time.time()
last = t1
n_eval = 0
accs = []
rnd = 0
while time.time() - t1 < 6.0:
    correct = 0
    for xb, yb in test_batches:
        probs = predictor(xb)
        correct += (probs.argmax(1) == yb).sum().item()
        n_eval += 1
    accs.append(correct / (64 * len(test_batches)))
    rnd += 1
    if time.time() - last > 2:
        last = time.time()
        print(f"TTA round {rnd}: acc {np.mean(accs):.4f} memo size {len(predictor.memo)} hits {predictor.hits}")
print(f"phase 2: {n_eval} eval batches, {1000 * (time.time() - t1) / n_eval:.1f} ms/batch, final acc {np.mean(accs):.4f}")
