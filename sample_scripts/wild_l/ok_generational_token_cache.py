# expect: no_leak
# pattern: pure-Python byte-level BPE tokenizer for a log-shipping pipeline memoises word -> token ids in a two-generation cache (self._hot / self._cold dicts: when hot reaches capacity it becomes cold and a new hot dict starts, cold hits are promoted); the log stream keeps producing never-seen words (ids, hashes, IPs), so the cache fills and swaps forever, but it never holds more than two generations
# step_ms: 3
"""Tokenize a stream of service log lines for a log-anomaly model.

A tiny byte-level BPE (merges learned on a warm-up sample) turns each
whitespace-separated word into token ids. Tokenizing a word is slow in pure
Python, so results are memoised; the stream has a heavy head of repeated
words and an endless tail of unique ones.
"""
import random
import re
import time
from collections import Counter

RUN_SECONDS = 20.0
LINES_PER_BATCH = 48
N_MERGES = 200
CACHE_CAPACITY = 80_000

WORD_RE = re.compile(r"\S+")


def learn_merges(sample_words, n_merges):
    vocab = Counter(tuple(w.encode()) for w in sample_words)
    merges = {}
    next_id = 256
    for _ in range(n_merges):
        pairs = Counter()
        for word, freq in vocab.items():
            for a, b in zip(word, word[1:]):
                pairs[a, b] += freq
        if not pairs:
            break
        best = pairs.most_common(1)[0][0]
        merges[best] = next_id
        new_vocab = Counter()
        for word, freq in vocab.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(next_id)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            new_vocab[tuple(out)] += freq
        vocab = new_vocab
        next_id += 1
    return merges


class BPETokenizer:
    def __init__(self, merges, capacity=CACHE_CAPACITY):
        self.merges = merges
        self.rank = {pair: r for r, pair in enumerate(merges)}
        self.capacity = capacity
        self._hot = {}
        self._cold = {}
        self.hits = self.misses = self.swaps = 0

    def _bpe(self, word):
        parts = list(word.encode())
        while len(parts) > 1:
            best, best_rank = None, None
            for i in range(len(parts) - 1):
                r = self.rank.get((parts[i], parts[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            parts[best:best + 2] = [self.merges[parts[best], parts[best + 1]]]
        return tuple(parts)

    def _lookup(self, word):
        ids = self._hot.get(word)
        if ids is not None:
            self.hits += 1
            return ids
        ids = self._cold.get(word)
        if ids is not None:
            self.hits += 1
        else:
            self.misses += 1
            ids = self._bpe(word)
        self._hot[word] = ids
        if len(self._hot) >= self.capacity:
            self._cold = self._hot
            self._hot = {}
            self.swaps += 1
        return ids

    def encode(self, line):
        out = []
        for w in WORD_RE.findall(line):
            out.extend(self._lookup(w))
        return out


class LogStream:
    LEVELS = ["INFO", "INFO", "INFO", "WARN", "ERROR", "TRACE"]
    TEMPLATES = [
        "{lvl} request_id={rid} user={user} path=/api/{res}/{num} status={status} took={ms}ms",
        "{lvl} worker-{w} picked job {job} from queue {q} attempt={a}",
        "{lvl} cache miss key={res}:{num} shard={w} ip={ip}",
        "{lvl} upstream {res}-svc responded {status} in {ms}ms trace={trace}",
        "{lvl} user {user} logged in from {ip} session={trace}",
    ]
    RESOURCES = ["orders", "users", "items", "carts", "payments", "search", "feeds", "media"]

    def __init__(self, seed=0):
        self.rng = random.Random(seed)
        self.users = [f"u{self.rng.randrange(10 ** 6)}" for _ in range(3000)]

    def line(self):
        rng = self.rng
        return rng.choice(self.TEMPLATES).format(
            lvl=rng.choice(self.LEVELS), rid="%016x" % rng.getrandbits(64),
            user=rng.choice(self.users), res=rng.choice(self.RESOURCES),
            num=int(rng.paretovariate(0.8)), status=rng.choice([200, 200, 200, 201, 404, 500]),
            ms=rng.randrange(1, 900), w=rng.randrange(16), job="%08x" % rng.getrandbits(32),
            q=rng.choice(["default", "high", "bulk"]), a=rng.randrange(1, 4),
            ip=f"10.{rng.randrange(4)}.{rng.randrange(256)}.{rng.randrange(256)}",
            trace="%024x" % rng.getrandbits(96))


def main():
    stream = LogStream()
    warmup = [w for _ in range(400) for w in WORD_RE.findall(stream.line())]
    tok = BPETokenizer(learn_merges(warmup, N_MERGES))
    n_lines = n_tokens = 0
    t0 = time.time()
    last = t0
    while time.time() - t0 < RUN_SECONDS:
        batch = [tok.encode(stream.line()) for _ in range(LINES_PER_BATCH)]
        width = max(map(len, batch))
        padded = [ids + [0] * (width - len(ids)) for ids in batch]
        n_tokens += sum(map(len, batch))
        n_lines += len(padded)
        if time.time() - last > 4.0:
            rate = tok.hits / max(tok.hits + tok.misses, 1)
            print(f"t={time.time() - t0:5.1f}s lines={n_lines} tokens/line={n_tokens / n_lines:.1f} "
                  f"hit_rate={rate:.2f} swaps={tok.swaps}", flush=True)
            last = time.time()


if __name__ == "__main__":
    main()
