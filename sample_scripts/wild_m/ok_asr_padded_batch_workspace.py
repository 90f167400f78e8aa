# expect: no_leak
# pattern: BatchAssembler keeps one persistent padding workspace tensor and grows it with resize_() whenever a batch needs more frames than ever before (rounded up to 64 frames); utterance lengths are heavy-tailed but clipped at --max-frames, so the workspace (and the allocator's high-water mark for the activations) grows in record-breaking jumps that get rarer and stop once a batch at the clip length has been seen (first ~third of the run); nothing else is kept per batch (inference only, no optimizer)
# step_ms: 75
"""Offline batch transcription scoring for a streaming ASR encoder (simulated audio).

Utterances are bucketed into batches of 32, padded into a reusable workspace
(so that we do not allocate a fresh padded tensor for every batch), run
through the convolutional encoder under inference_mode, and reduced to
per-utterance frame posteriors -> greedy token counts.  Only running totals
are kept.
"""
import argparse
import math
import time

import numpy as np
import torch
from torch import nn

N_MELS = 80
VOCAB = 64


class ConvEncoder(nn.Module):
    def __init__(self, n_mels=N_MELS, width=64, vocab=VOCAB):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(n_mels, width, 3, stride=2, padding=1), nn.GELU(),
            nn.Conv1d(width, width, 3, stride=2, padding=1), nn.GELU(),
            nn.Conv1d(width, width, 5, padding=2, groups=width), nn.Conv1d(width, width, 1), nn.GELU(),
            nn.Conv1d(width, vocab, 1),
        )

    def forward(self, feats):  # (B, T, n_mels)
        return self.net(feats.transpose(1, 2)).transpose(1, 2)  # (B, T/4, vocab)


class BatchAssembler:
    """Pads variable-length feature matrices into one reusable workspace tensor."""

    def __init__(self, n_mels, round_to=64):
        self.n_mels = n_mels
        self.round_to = round_to
        self._workspace = torch.empty(0)
        self.grow_events = 0

    def assemble(self, utterances):
        b = len(utterances)
        t_max = max(u.shape[0] for u in utterances)
        t_pad = int(math.ceil(t_max / self.round_to) * self.round_to)
        needed = b * t_pad * self.n_mels
        if self._workspace.numel() < needed:
            self._workspace.resize_(needed)
            self.grow_events += 1
        batch = self._workspace[:needed].view(b, t_pad, self.n_mels)
        batch.zero_()
        lengths = torch.empty(b, dtype=torch.long)
        for i, u in enumerate(utterances):
            batch[i, :u.shape[0]] = torch.from_numpy(u)
            lengths[i] = u.shape[0]
        return batch, lengths

    @property
    def workspace_mb(self):
        return self._workspace.numel() * 4 / 2 ** 20


def utterance_stream(seed, max_frames):
    """Log-normal durations (median 3 s at 100 frames/s), clipped at max_frames."""
    rng = np.random.default_rng(seed)
    formants = rng.uniform(0, N_MELS, (16, 3))
    mel = np.arange(N_MELS)
    phone_spec = np.exp(-((mel[None, None, :] - formants[:, :, None]) ** 2) / 18.0).sum(1)
    phone_spec = phone_spec.astype(np.float32)  # (16 phones, n_mels)
    while True:
        n = int(min(max_frames, max(40, rng.lognormal(mean=math.log(300), sigma=0.5))))
        phones = rng.integers(0, 16, n // 8 + 1).repeat(8)[:n]
        spec = phone_spec[phones] + 0.1 * rng.standard_normal((n, N_MELS), dtype=np.float32)
        yield np.log1p(np.abs(spec))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=230)
    parser.add_argument("--batch-size", type=int, default=48)
    parser.add_argument("--max-frames", type=int, default=1700)
    parser.add_argument("--log-every-s", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=9)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    encoder = ConvEncoder().eval()
    assembler = BatchAssembler(N_MELS)
    stream = utterance_stream(args.seed, args.max_frames)

    token_hist = np.zeros(VOCAB, dtype=np.int64)
    total_frames = total_utts = 0
    longest = 0
    t0 = last = time.time()
    for step in range(1, args.batches + 1):
        utterances = [next(stream) for _ in range(args.batch_size)]
        batch, lengths = assembler.assemble(utterances)
        with torch.inference_mode():
            logits = encoder(batch)
            out_len = (lengths + 3) // 4
            valid = torch.arange(logits.shape[1])[None, :] < out_len[:, None]
            tokens = logits.argmax(-1)[valid]
        token_hist += np.bincount(tokens.numpy(), minlength=VOCAB)
        total_frames += int(lengths.sum())
        total_utts += len(utterances)
        longest = max(longest, int(lengths.max()))

        now = time.time()
        if now - last >= args.log_every_s:
            print(f"batch {step:4d}  {total_utts} utts  {total_frames / 100 / 3600:.2f} h audio  "
                  f"longest {longest} frames  workspace {assembler.workspace_mb:.1f} MiB "
                  f"({assembler.grow_events} grows)  {(now - t0) / step * 1000:.0f} ms/batch", flush=True)
            last = now

    top = int(token_hist.argmax())
    share = token_hist[top] / max(token_hist.sum(), 1)
    print(f"done: {args.batches} batches in {time.time() - t0:.1f}s, "
          f"{int((token_hist > 0).sum())} distinct tokens, most frequent {top} ({share:.1%})")


if __name__ == "__main__":
    main()
