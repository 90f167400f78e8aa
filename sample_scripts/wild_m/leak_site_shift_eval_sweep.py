# expect: leak
# holder: previous|_dump|signal.getsignal(signal.SIGUSR1)
# pattern: every EvalJob installs a SIGUSR1 progress-dump handler with signal.signal(); the handler is a closure over the job and chains to the previously installed handler (`previous`), and it is never uninstalled, so the signal module's current handler references a chain of closures reaching every finished EvalJob with its per-batch embeddings and thumbnail arrays (evaluation only, no optimizer, torch.no_grad, slow steps)
# step_ms: 140
"""Domain-shift evaluation sweep for a dermoscopy classifier across acquisition sites.

For every (site, scanner) shard the sweep runs the frozen network over the
shard's images, keeps the penultimate-layer embeddings to measure how far the
shard's feature distribution is from the reference site, and keeps small
thumbnails of the least confident images for the review gallery.  Each shard
is one EvalJob.  Long sweeps can be inspected from outside with
`kill -USR1 <pid>`, which prints the progress of the running job.
"""
import argparse
import signal
import sys
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


def conv_bn(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class LesionNet(nn.Module):
    def __init__(self, n_classes=7, emb_dim=1024):
        super().__init__()
        self.body = nn.Sequential(
            conv_bn(3, 32, 2), conv_bn(32, 32, 1),
            conv_bn(32, 64, 2), conv_bn(64, 64, 1),
            conv_bn(64, 128, 2), conv_bn(128, 128, 1),
            conv_bn(128, 256, 2),
        )
        self.embed = nn.Linear(256, emb_dim)
        self.classifier = nn.Linear(emb_dim, n_classes)

    def forward(self, x):
        h = F.adaptive_avg_pool2d(self.body(x), 1).flatten(1)
        emb = F.relu(self.embed(h))
        return emb, self.classifier(emb)


class EvalJob:
    def __init__(self, site, scanner, n_batches):
        self.site = site
        self.scanner = scanner
        self.n_batches = n_batches
        self.done_batches = 0
        self.embeddings = []
        self.thumbnails = []
        self.confidences = []
        self.started = time.time()

    @property
    def name(self):
        return f"{self.site}/{self.scanner}"

    def progress_line(self):
        return (f"[{self.name}] {self.done_batches}/{self.n_batches} batches, "
                f"{time.time() - self.started:.1f}s")

    def add(self, images, emb, probs):
        conf = probs.max(dim=1).values
        self.embeddings.append(emb.numpy())
        thumbs = images.clamp(0, 1).mul(255).to(torch.uint8)
        self.thumbnails.append(thumbs.numpy())
        self.confidences.append(conf.numpy())
        self.done_batches += 1

    def report(self, ref_mean, ref_cov_inv):
        emb = np.concatenate(self.embeddings)
        conf = np.concatenate(self.confidences)
        diff = emb.mean(axis=0) - ref_mean
        shift = float(np.sqrt(diff @ ref_cov_inv @ diff))
        order = np.argsort(conf)[:16]
        gallery = np.concatenate(self.thumbnails)[order]
        return {"shard": self.name, "mean_conf": float(conf.mean()),
                "feature_shift": shift, "gallery": gallery.shape}


def install_progress_dump(job):
    """Make `kill -USR1 <pid>` print the job's progress (other handlers still run)."""
    previous = signal.getsignal(signal.SIGUSR1)

    def _dump(signum, frame):
        print(job.progress_line(), file=sys.stderr, flush=True)
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGUSR1, _dump)


def synth_shard(rng, site_idx, scanner_idx, batch_size, size=64):
    """Synthetic lesion images; every site/scanner has its own colour cast and blur."""
    yy, xx = np.mgrid[-1:1:complex(size), -1:1:complex(size)].astype(np.float32)
    cast = np.array([0.9 + 0.05 * site_idx, 0.7 - 0.03 * scanner_idx, 0.6], dtype=np.float32)
    r = rng.uniform(0.2, 0.6, (batch_size, 1, 1)).astype(np.float32)
    cx, cy = rng.uniform(-0.3, 0.3, (2, batch_size, 1, 1)).astype(np.float32)
    lesion = ((xx - cx) ** 2 + (yy - cy) ** 2 < r ** 2).astype(np.float32)
    img = cast[None, :, None, None] * (1 - 0.6 * lesion[:, None])
    img += rng.normal(0, 0.05 + 0.02 * scanner_idx, img.shape).astype(np.float32)
    return torch.from_numpy(np.clip(img, 0, 1).astype(np.float32))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=5)
    parser.add_argument("--scanners", type=int, default=3)
    parser.add_argument("--batches-per-shard", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = LesionNet()

    # re-estimate BatchNorm statistics on the reference site (site 0, scanner 0),
    # then collect the reference embedding statistics
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = None
    with torch.no_grad():
        for _ in range(4):
            model(synth_shard(rng, 0, 0, args.batch_size))
        model.eval()
        ref = torch.cat([model(synth_shard(rng, 0, 0, args.batch_size))[0] for _ in range(4)]).numpy()
    ref_mean = ref.mean(axis=0)
    ref_cov_inv = np.linalg.pinv(np.cov(ref, rowvar=False) + 1e-3 * np.eye(ref.shape[1]))

    t0 = time.time()
    results = []
    for site in range(args.sites):
        for scanner in range(args.scanners):
            job = EvalJob(f"site{site:02d}", f"scanner{scanner}", args.batches_per_shard)
            install_progress_dump(job)
            for _ in range(job.n_batches):
                images = synth_shard(rng, site, scanner, args.batch_size)
                with torch.no_grad():
                    emb, logits = model(images)
                job.add(images, emb, logits.softmax(dim=1))
            summary = job.report(ref_mean, ref_cov_inv)
            results.append({k: v for k, v in summary.items() if k != "gallery"})
            print(f"{summary['shard']:>18s}  conf {summary['mean_conf']:.3f}  "
                  f"shift {summary['feature_shift']:7.2f}  ({time.time() - t0:.1f}s)", flush=True)

    worst = max(results, key=lambda r: r["feature_shift"])
    print(f"sweep done: {len(results)} shards in {time.time() - t0:.1f}s; "
          f"largest shift at {worst['shard']} ({worst['feature_shift']:.2f})")


if __name__ == "__main__":
    main()
