# expect: leak
# holder: _root|index
# pattern: pure-Python ETL (reader thread -> bounded queue -> indexer) that feeds every normalized search query into a nested-dict prefix trie (self._root) for autocomplete; the normalizer keeps order numbers, ticket ids and coupon codes, so most queries add a fresh chain of ~10 dict nodes that are never pruned and the trie grows without bound
# step_ms: 24
"""Autocomplete index builder for the support-site search box.

A reader thread tails the (here: simulated) search log and pushes batches
of raw query lines into a bounded queue.  The indexer normalizes each
query and inserts it into a character trie with a popularity count at the
terminal node; ``complete(prefix)`` walks the trie and returns the most
popular completions.  Every second we print throughput and a couple of
sample completions so we can eyeball the suggestions.
"""
import heapq
import queue
import random
import re
import string
import threading
import time
from collections import Counter

RUN_SECONDS = 20.0
BATCH_LINES = 400
END = "\0"

# (template, relative frequency) -- roughly what last month's log looked like
TEMPLATES = [
    ("track order {order}", 4),
    ("where is my order {order}", 2),
    ("refund for order {order}", 1),
    ("reset password", 12),
    ("change shipping address", 8),
    ("cancel subscription", 8),
    ("ticket {ticket} status", 2),
    ("coupon {coupon} not working", 2),
    ("{product} size guide", 20),
    ("{product} in stock", 20),
    ("return {product}", 12),
    ("warranty {product}", 10),
]
_TEMPLATE_TEXT = [t for t, _ in TEMPLATES]
_TEMPLATE_WEIGHT = [w for _, w in TEMPLATES]
PRODUCTS = ["trail runner", "rain jacket", "wool socks", "daypack 20l", "headlamp",
            "camp stove", "sleeping pad", "down vest", "water filter", "trekking poles"]
_ws = re.compile(r"\s+")
_punct = re.compile(r"[^\w\s#-]")


def fake_query(rng):
    t = rng.choices(_TEMPLATE_TEXT, weights=_TEMPLATE_WEIGHT)[0]
    q = t.format(
        order=str(rng.randrange(10_000_000, 99_999_999)),
        ticket="#" + str(rng.randrange(100_000, 999_999)),
        coupon="".join(rng.choices(string.ascii_uppercase + string.digits, k=8)),
        product=rng.choice(PRODUCTS),
    )
    if rng.random() < 0.3:
        q = q.upper()
    if rng.random() < 0.2:
        q = "  " + q + "?? "
    return q


def log_reader(out_q, stop, seed=0):
    rng = random.Random(seed)
    while not stop.is_set():
        lines = [fake_query(rng) for _ in range(BATCH_LINES)]
        try:
            out_q.put(lines, timeout=0.5)
        except queue.Full:
            continue


def normalize(q):
    q = q.strip().lower()
    q = _punct.sub("", q)
    return _ws.sub(" ", q)


class PrefixIndex:
    def __init__(self):
        self._root = {}
        self.n_inserts = 0

    def add(self, phrase, weight=1):
        node = self._root
        for ch in phrase:
            node = node.setdefault(ch, {})
        node[END] = node.get(END, 0) + weight
        self.n_inserts += 1

    def complete(self, prefix, k=3, budget=2000):
        node = self._root
        for ch in prefix:
            node = node.get(ch)
            if node is None:
                return []
        best = []
        stack = [(node, prefix)]
        while stack and budget > 0:
            budget -= 1
            cur, text = stack.pop()
            for ch, child in cur.items():
                if ch == END:
                    heapq.heappush(best, (child, text))
                    if len(best) > k:
                        heapq.heappop(best)
                else:
                    stack.append((child, text + ch))
        return [t for _, t in sorted(best, reverse=True)]


def main():
    lines_q = queue.Queue(maxsize=4)
    stop = threading.Event()
    reader = threading.Thread(target=log_reader, args=(lines_q, stop), daemon=True)
    reader.start()

    index = PrefixIndex()
    head_terms = Counter()
    t0 = time.time()
    last_print = t0
    n_lines = 0
    while time.time() - t0 < RUN_SECONDS:
        batch = lines_q.get()
        for raw in batch:
            q = normalize(raw)
            if len(q) < 3:
                continue
            index.add(q)
            head_terms[q.split(" ", 1)[0]] += 1
            n_lines += 1
        time.sleep(0.02)  # be nice to the log tailer
        now = time.time()
        if now - last_print > 1.0:
            last_print = now
            print(f"{now - t0:5.1f}s indexed {n_lines} queries "
                  f"({n_lines / (now - t0):.0f}/s)  'tr' -> {index.complete('tr')}",
                  flush=True)
    stop.set()
    reader.join(timeout=2)
    print("top first words:", head_terms.most_common(5))
    print(f"done, {index.n_inserts} inserts")


if __name__ == "__main__":
    main()
