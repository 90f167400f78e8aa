# expect: no_leak
# pattern: word2vec-style vocabulary scan with max_vocab_size (gensim's min_reduce trick): unigram+bigram counts grow while the noisy stream (ids, typos, hashes) adds new keys, and whenever the dict passes the cap it is rebuilt without the entries whose count < min_reduce and min_reduce is raised; memory climbs until the first prune, then saw-tooths under the cap
# step_ms: 24
"""Build a unigram + bigram vocabulary from a synthetic, noisy text stream.

Pure Python (no numpy / torch).  The stream mimics scraped support tickets:
Zipf-distributed words plus a long tail of one-off tokens (ticket ids,
hashes, typos) that would make the vocabulary grow without bound.
"""
import random
import string
import time


def pseudo_words(n, rnd):
    syll = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "th", "ei", "on", "ar"]
    words = set()
    while len(words) < n:
        words.add("".join(rnd.choice(syll) for _ in range(rnd.randint(1, 4))))
    return sorted(words)


def ticket_pages(n_pages, page_size=500, seed=0):
    """Yields pages of tokenised tickets, like a paginated export."""
    rnd = random.Random(seed)
    base = pseudo_words(30000, rnd)
    weights = [1.0 / (r + 1) ** 1.05 for r in range(len(base))]
    cum, acc = [], 0.0
    for w in weights:
        acc += w
        cum.append(acc)
    for _ in range(n_pages):
        page = []
        for _ in range(page_size):
            n = rnd.randint(8, 30)
            toks = rnd.choices(base, cum_weights=cum, k=n)
            for j in range(n):
                u = rnd.random()
                if u < 0.04:
                    toks[j] = f"#{rnd.getrandbits(40):x}"                  # ticket id / hash
                elif u < 0.08:
                    w = toks[j]
                    k = rnd.randrange(len(w))
                    toks[j] = w[:k] + rnd.choice(string.ascii_lowercase) + w[k + 1:]   # typo
            page.append(toks)
        yield page


def prune_vocab(vocab, min_reduce):
    """Drop every entry whose count is below min_reduce (returns a compact new dict)."""
    return {w: c for w, c in vocab.items() if c >= min_reduce}


def scan_vocab(pages, max_vocab_size=1_000_000, report_every=40):
    vocab = {}
    min_reduce = 1
    total_words = 0
    n_prunes = 0
    t0 = time.time()
    n_sentences = 0
    for pid, page in enumerate(pages, 1):
        for sent in page:
            prev = None
            for w in sent:
                vocab[w] = vocab.get(w, 0) + 1
                if prev is not None:
                    bg = prev + "_" + w
                    vocab[bg] = vocab.get(bg, 0) + 1
                prev = w
            total_words += len(sent)
        n_sentences += len(page)
        if len(vocab) > max_vocab_size:
            vocab = prune_vocab(vocab, min_reduce)
            min_reduce += 1
            n_prunes += 1
        if pid % report_every == 0:
            print(f"{n_sentences:7d} sentences  {total_words:9d} words  vocab {len(vocab):7d}  "
                  f"min_reduce {min_reduce}  prunes {n_prunes}  {time.time() - t0:.1f}s", flush=True)
    return vocab, total_words, min_reduce


def main():
    vocab, total_words, min_reduce = scan_vocab(ticket_pages(820, seed=42))
    keep = {w: c for w, c in vocab.items() if c >= 5}
    unigrams = sum(1 for w in keep if "_" not in w)
    top = sorted(keep.items(), key=lambda kv: -kv[1])[:5]
    print(f"done: {total_words} words scanned, {len(keep)} entries kept "
          f"({unigrams} unigrams), final min_reduce {min_reduce}, top {top}")


if __name__ == "__main__":
    main()
