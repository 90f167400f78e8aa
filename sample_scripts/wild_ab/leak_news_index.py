# expect: leak
# holder: SearchIndex.docs|docs|SearchIndex.postings|postings
# pattern: pure-Python news search index (inverted index with BM25 ranking, no numpy/torch; one step = one crawler batch of 8 articles indexed plus 25 BM25 queries with results collapsed by canonical URL, ~7 ms per step, code in main() + a SearchIndex class + url/tokenizer helpers); documents live in SearchIndex.docs (doc_id -> Doc with body text and a term Counter) and SearchIndex.postings (term -> {doc_id: tf}), keyed for upserts by canonical URL in self._by_url; when a story is republished (live blogs and corrected articles come back with the same story under a URL carrying different utm_* params, host case or trailing slash) add() detects the duplicate via canonical_url() but then calls self.remove(art.url) with the raw URL instead of the canonical one, so remove() finds nothing and returns False silently; the new version overwrites _by_url[canon], the old version stays in docs and postings as an orphan that no URL reaches any more, the retention sweep (which walks _by_url) never expires it, and search() hides the duplicates by collapsing results per canonical URL, so every republished version is kept forever
# step_ms: 7
"""Incremental news search index.

A crawler feeds freshly crawled articles; republished stories replace the
previous version of the same (canonical) URL. A retention sweep drops stories
not seen for a while. Queries are ranked with BM25 and collapsed per URL.
"""

import heapq
import math
import random
import re
import time
from collections import Counter, deque
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

N_STEPS = 2300
BATCH = 8
RETENTION_STEPS = 180

TRACKING = ("utm_", "fbclid", "gclid", "mc_", "ref_src")
STOP = set("the a an of to in and or for on at by with from is are was were be been it this that as".split())
TOKEN_RE = re.compile(r"[a-z0-9]+")

rnd = random.Random(99)


def canonical_url(url):
    parts = urlsplit(url.strip())
    host = parts.netloc.lower()
    if host.startswith("www."):
        host = host[4:]
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=False)
             if not k.lower().startswith(TRACKING)]
    path = parts.path.rstrip("/") or "/"
    return urlunsplit(("https", host, path, urlencode(sorted(query)), ""))


def tokenize(text):
    return [t for t in TOKEN_RE.findall(text.lower()) if t not in STOP and len(t) > 1]


class Doc:
    __slots__ = ("doc_id", "url", "title", "body", "terms", "length", "step")

    def __init__(self, doc_id, url, title, body, terms, step):
        self.doc_id = doc_id
        self.url = url
        self.title = title
        self.body = body
        self.terms = terms
        self.length = sum(terms.values())
        self.step = step


class SearchIndex:
    k1, b = 1.2, 0.75

    def __init__(self):
        self.docs = {}        # doc_id -> Doc
        self.postings = {}    # term -> {doc_id: tf}
        self._by_url = {}     # canonical url -> doc_id
        self._next_id = 0
        self._total_len = 0
        self.replaced = 0

    def add(self, art, step):
        canon = canonical_url(art["url"])
        if canon in self._by_url:
            self.remove(art["url"])
            self.replaced += 1
        doc_id = self._next_id
        self._next_id += 1
        terms = Counter(tokenize(art["title"] + " " + art["title"] + " " + art["body"]))
        doc = Doc(doc_id, canon, art["title"], art["body"], terms, step)
        self.docs[doc_id] = doc
        self._total_len += doc.length
        for term, tf in terms.items():
            plist = self.postings.get(term)
            if plist is None:
                plist = self.postings[term] = {}
            plist[doc_id] = tf
        self._by_url[canon] = doc_id
        return doc_id

    def remove(self, url):
        doc_id = self._by_url.pop(url, None)
        if doc_id is None:
            return False
        doc = self.docs.pop(doc_id)
        self._total_len -= doc.length
        for term in doc.terms:
            plist = self.postings[term]
            del plist[doc_id]
            if not plist:
                del self.postings[term]
        return True

    def sweep(self, step, retention):
        stale = [u for u, d in self._by_url.items() if step - self.docs[d].step > retention]
        for u in stale:
            self.remove(u)
        return len(stale)

    def search(self, query, k=10):
        n = len(self.docs)
        if not n:
            return []
        avgdl = self._total_len / n
        scores = {}
        for term in set(tokenize(query)):
            plist = self.postings.get(term)
            if not plist:
                continue
            idf = math.log(1 + (n - len(plist) + 0.5) / (len(plist) + 0.5))
            for doc_id, tf in plist.items():
                dl = self.docs[doc_id].length
                s = idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * dl / avgdl))
                scores[doc_id] = scores.get(doc_id, 0.0) + s
        best = heapq.nlargest(4 * k, scores.items(), key=lambda kv: kv[1])
        seen, out = set(), []
        for doc_id, s in best:  # collapse versions of the same story
            url = self.docs[doc_id].url
            if url in seen:
                continue
            seen.add(url)
            out.append((url, s))
            if len(out) == k:
                break
        return out


class Crawler:
    """Synthetic news feed: new stories plus republished ones (live blogs,
    corrections) whose URL differs in host case, tracking params or slash."""

    SECTIONS = ["world", "politics", "business", "tech", "science", "sport", "culture", "health"]

    def __init__(self):
        syl = ["ka", "lo", "mi", "ne", "su", "ra", "to", "vi", "de", "gan", "bor", "tel", "que", "zin", "pra"]
        self.vocab = list({"".join(rnd.choices(syl, k=rnd.randint(2, 4))) for _ in range(30000)})
        self.zipf = [1.0 / (i + 1) ** 1.05 for i in range(len(self.vocab))]
        self.cum = list(_accumulate(self.zipf))
        self.stories = []     # (base_url, title, body)
        self.story_id = 0

    def words(self, k):
        return rnd.choices(self.vocab, cum_weights=self.cum, k=k)

    def decorate(self, base):
        host, path = base
        if rnd.random() < 0.5:
            host = host.upper() if rnd.random() < 0.3 else "www." + host
        url = f"https://{host}{path}"
        if rnd.random() < 0.5:
            url += "/"
        if rnd.random() < 0.7:
            url += f"?utm_source={rnd.choice(['rss', 'twitter', 'newsletter'])}&utm_campaign=c{rnd.randint(1, 999)}"
        return url

    def batch(self, n):
        out = []
        for _ in range(n):
            if self.stories and rnd.random() < 0.3:
                i = rnd.randrange(max(0, len(self.stories) - 300), len(self.stories))
                base, title, body = self.stories[i]
                body = body + "\n\nUpdate: " + " ".join(self.words(rnd.randint(40, 120)))
                self.stories[i] = (base, title, body)
            else:
                self.story_id += 1
                sec = rnd.choice(self.SECTIONS)
                title = " ".join(self.words(8))
                slug = "-".join(title.split()[:5])
                base = ("news.example.com", f"/{sec}/{slug}-{self.story_id}")
                body = " ".join(self.words(rnd.randint(250, 600)))
                self.stories.append((base, title, body))
                if len(self.stories) > 5000:
                    self.stories = self.stories[-3000:]
            out.append({"url": self.decorate(base), "title": title, "body": body})
        return out


def _accumulate(xs):
    s = 0.0
    for x in xs:
        s += x
        yield s


def main():
    index = SearchIndex()
    crawler = Crawler()
    t0 = last = time.perf_counter()
    swept = 0
    hits = 0
    for step in range(N_STEPS):
        for art in crawler.batch(BATCH):
            index.add(art, step)
        if step % 20 == 0:
            swept += index.sweep(step, RETENTION_STEPS)
        for _ in range(25):
            q = " ".join(rnd.choices(crawler.vocab[200:3000], k=rnd.randint(1, 3)))
            hits += len(index.search(q))
        now = time.perf_counter()
        if now - last >= 1.0:
            last = now
            print(f"step {step:4d} urls={len(index._by_url)} terms={len(index.postings)} "
                  f"replaced={index.replaced} swept={swept} hits={hits}", flush=True)
    print(f"done in {time.perf_counter() - t0:.1f}s, {index._next_id} versions indexed")


if __name__ == "__main__":
    main()
