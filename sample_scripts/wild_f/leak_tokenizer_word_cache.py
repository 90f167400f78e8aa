# expect: leak
# holder: cache
# pattern: WordPiece-style tokenizer memoizes word -> interned sub-word pieces in an unbounded self.cache dict (like GPT-2's encoder.cache); the log-line stream contains request ids, hex hashes, IPs and timestamps, so most words are new and the cache grows every step (EmbeddingBag classifier, torch.optim.Adam)
# step_ms: 35
"""Log-line anomaly classifier trained online from a stream of log lines.

Each line is tokenized with a greedy longest-match-first WordPiece
tokenizer (the vocabulary is built from a small seed corpus), sub-word
pieces are mapped to ids with the hashing trick, and an ``EmbeddingBag``
+ MLP classifier is trained with Adam to flag "anomalous" lines.

WordPiece in pure Python is slow, so ``Tokenizer.tokenize_word`` memoizes
its result per word in ``self.cache`` and interns the piece strings with
``sys.intern`` -- the same trick as the ``cache`` dict in OpenAI's GPT-2
``encoder.py``.

Why it leaks: for natural text the cache saturates after a few thousand
words, but log lines are full of unique tokens (request ids, hex digests,
IP addresses, millisecond timestamps, user names), so nearly every line
adds several new keys, each with its own tuple of piece strings.  The
dict has no size cap and lives as long as the tokenizer.

Fix: ``functools.lru_cache(maxsize=...)``, or normalise numbers/hex before
caching, or only cache words that come from the vocabulary.
"""
import random
import sys
import time
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

N_BUCKETS = 1 << 14
EMB = 64
BATCH = 128
STEPS = 520
MAX_PIECE = 8

SEED_WORDS = ("error warning info debug request response user session timeout "
              "connection refused accepted closed failed retry database query "
              "latency cache miss hit worker thread started stopped upstream "
              "server client payload bytes status ok denied auth token expired "
              "memory disk cpu queue full empty slow fast read write get post").split()
SERVICES = ["api-gw", "auth", "billing", "search", "ingest", "scheduler", "cdn-edge"]
USERS = [f"{a}{b}" for a in ("ana", "bob", "chen", "dev", "eli", "fay", "gus", "hana")
         for b in ("", "_ops", "42", ".admin")]


class Tokenizer:
    def __init__(self, vocab):
        self.vocab = set(vocab)
        self.cache = {}

    def tokenize_word(self, word):
        if word in self.cache:
            return self.cache[word]
        pieces, start = [], 0
        while start < len(word):
            end = min(len(word), start + MAX_PIECE)
            cur = None
            while end > start:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                if sub in self.vocab:
                    cur = sub
                    break
                end -= 1
            if cur is None:                       # unknown char: single-char piece
                cur = word[start] if start == 0 else "##" + word[start]
                end = start + 1
            pieces.append(sys.intern(cur))
            start = end
        out = tuple(pieces)
        self.cache[word] = out
        return out

    def __call__(self, line):
        out = []
        for w in line.lower().replace("=", " ").replace(",", " ").split():
            out.extend(self.tokenize_word(w))
        return out


def build_vocab():
    vocab = set()
    for w in SEED_WORDS + SERVICES + USERS:
        for i in range(len(w)):
            for j in range(i + 1, min(len(w), i + MAX_PIECE) + 1):
                vocab.add(w[i:j] if i == 0 else "##" + w[i:j])
    for c in "0123456789abcdef.:-_/":
        vocab.update([c, "##" + c])
    for a in "0123456789abcdef":
        for b in "0123456789abcdef":
            vocab.update([a + b, "##" + a + b])
    return vocab


def log_stream(seed=0):
    rnd = random.Random(seed)
    ts = 1_700_000_000_000
    while True:
        ts += rnd.randint(1, 40)
        svc = rnd.choice(SERVICES)
        anomalous = rnd.random() < 0.15
        level = rnd.choice(["error", "warning"]) if anomalous else rnd.choice(["info", "debug", "info"])
        words = rnd.sample(SEED_WORDS, 6)
        if anomalous:
            words += rnd.sample(["timeout", "refused", "failed", "denied", "expired", "full"], 2)
        line = (f"{ts} {level} {svc} req={rnd.getrandbits(64):016x} "
                f"user={rnd.choice(USERS)} ip=10.{rnd.randint(0, 255)}.{rnd.randint(0, 255)}."
                f"{rnd.randint(1, 254)} trace={rnd.getrandbits(96):024x} "
                f"latency_ms={rnd.random() * (900 if anomalous else 80):.3f} " + " ".join(words))
        yield line, int(anomalous)


def piece_id(piece):
    return zlib.crc32(piece.encode()) % N_BUCKETS


class LogClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(N_BUCKETS, EMB, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(EMB, 128), nn.ReLU(), nn.Linear(128, 2))

    def forward(self, flat_ids, offsets):
        return self.mlp(self.emb(flat_ids, offsets))


def main():
    tok = Tokenizer(build_vocab())
    model = LogClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    stream = log_stream()
    t0 = time.time()
    ema_loss, ema_acc = None, None
    for step in range(STEPS):
        ids, offsets, labels = [], [], []
        for _ in range(BATCH):
            line, y = next(stream)
            offsets.append(len(ids))
            ids.extend(piece_id(p) for p in tok(line))
            labels.append(y)
        ids = torch.tensor(ids)
        offsets = torch.tensor(offsets)
        labels = torch.tensor(labels)

        logits = model(ids, offsets)
        loss = F.cross_entropy(logits, labels, weight=torch.tensor([1.0, 3.0]))
        opt.zero_grad()
        loss.backward()
        opt.step()

        acc = (logits.argmax(1) == labels).float().mean().item()
        ema_loss = loss.item() if ema_loss is None else 0.95 * ema_loss + 0.05 * loss.item()
        ema_acc = acc if ema_acc is None else 0.95 * ema_acc + 0.05 * acc
        if step % 20 == 0:
            print(f"step {step:4d}  loss {ema_loss:.3f}  acc {ema_acc:.3f}  "
                  f"cached words {len(tok.cache)}  {time.time() - t0:.1f}s", flush=True)
    print("done", f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
