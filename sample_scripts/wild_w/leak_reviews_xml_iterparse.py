# expect: leak
# holder: main:context|iterparse|pullparser|TreeBuilder
# pattern: review-sentiment classifier trained in one streaming pass over a (synthetic, generated on the fly) XML export of product reviews (hashed uni+bigram nn.EmbeddingBag(sparse=True) + MLP head, torch.optim.Adagrad, ~13 ms per step of 64 reviews, code in main() + a ReviewExportStream file-like class + helpers); the export is parsed with xml.etree.ElementTree.iterparse(events=("end",)) and every used <review> is released with elem.clear() as the usual streaming recipe says, but the non-English and unrated reviews (~30%) are skipped with `continue` before the elem.clear() line, so their complete subtrees (title, ~1 KB body text, author, product, tags, attributes) stay attached to the document root that iterparse's tree builder keeps; together with the cleared-but-never-removed <review> shells the parsed tree in the main()-local `context` iterator grows by ~140 KB per step for the whole run
# step_ms: 13
"""Sentiment model trained directly from the nightly review export.

The export is a single large XML document, so it is streamed with
ElementTree.iterparse and each <review> element is freed as soon as it has
been turned into a training example.  Reviews that are not in English or
have no star rating are skipped.  Text is featurised with hashed unigrams and
bigrams into an EmbeddingBag; the model is a small MLP trained with Adagrad
(sparse gradients for the embedding table) in a single pass.

For this script the export is synthesised on the fly by ReviewExportStream,
a file-like object that produces XML in chunks like a network download.

Usage:  python reviews_xml_iterparse.py [--steps 1300] [--batch 64]
"""
import argparse
import random
import time
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

import torch
import torch.nn as nn
import torch.nn.functional as F

POS = "great excellent love perfect sturdy recommend fantastic happy works smooth reliable bright comfortable".split()
NEG = "broken terrible refund waste cheap disappointed noisy leaking returned flimsy useless awful crashed".split()
NEU = ("the a it this product item box arrived after days week size color battery cable manual screen "
       "price shipping quality fit seller package delivery charger kitchen desk phone lamp bag works "
       "used daily month year first second again also very quite really not but and with for").split()
OTHER = ("das ist sehr gut nicht produkt lieferung schnell preis muy bueno producto envio rapido precio "
         "calidad tres bien livraison rapide qualite prix").split()
COUNTRIES = ["US", "GB", "CA", "AU", "IE", "DE", "ES", "FR", "IN", "NZ"]
CATEGORIES = ["kitchen", "electronics", "garden", "toys", "office", "sports", "beauty", "auto"]


class ReviewExportStream:
    """File-like object producing an endless <reviews> XML export in chunks."""

    def __init__(self, seed=0):
        self.rng = random.Random(seed)
        self.buf = b'<?xml version="1.0" encoding="utf-8"?>\n<reviews generator="export-v3">\n'
        self.next_id = 0

    def _review(self):
        r = self.rng
        rid = self.next_id
        self.next_id += 1
        rating = r.choices([1, 2, 3, 4, 5], weights=[12, 8, 10, 25, 45])[0]
        lang = "en" if r.random() < 0.75 else r.choice(["de", "es", "fr"])
        if lang == "en":
            mood = POS if rating >= 4 else NEG if rating <= 2 else POS + NEG
            words = r.choices(NEU, k=r.randint(60, 180)) + r.choices(mood, k=r.randint(4, 14))
            r.shuffle(words)
        else:
            words = r.choices(OTHER, k=r.randint(60, 180))
        title = " ".join(words[:r.randint(3, 8)])
        body = " ".join(words)
        has_rating = r.random() > 0.07
        tags = "".join(f"<tag>{t}</tag>" for t in r.sample(CATEGORIES, r.randint(1, 4)))
        return (
            f'  <review id="R{rid:09d}" lang="{lang}" verified="{str(r.random() < 0.8).lower()}" '
            f'ts="2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:00:00Z">\n'
            f'    <product sku="SKU-{r.randint(0, 99999):05d}"><category>{r.choice(CATEGORIES)}</category>'
            f'<price currency="USD">{r.uniform(3, 300):.2f}</price></product>\n'
            f'    <author uid="U{r.randint(0, 10**7):08d}"><name>user{r.randint(0, 10**6)}</name>'
            f'<country>{r.choice(COUNTRIES)}</country></author>\n'
            + (f"    <rating>{rating}</rating>\n" if has_rating else "")
            + f"    <title>{escape(title)}</title>\n    <body>{escape(body)}</body>\n"
            f'    <helpful up="{r.randint(0, 40)}" down="{r.randint(0, 10)}"/>\n'
            f"    <tags>{tags}</tags>\n  </review>\n"
        ).encode()

    def read(self, size=-1):
        size = 65536 if size is None or size < 0 else size
        while len(self.buf) < size:
            self.buf += b"".join(self._review() for _ in range(16))
        out, self.buf = self.buf[:size], self.buf[size:]
        return out


class HashedText:
    def __init__(self, buckets):
        self.buckets = buckets

    def __call__(self, text):
        toks = text.lower().split()
        ids = [hash(t) % self.buckets for t in toks]
        ids += [hash((a, b)) % self.buckets for a, b in zip(toks, toks[1:])]
        return ids


class ReviewNet(nn.Module):
    def __init__(self, buckets, dim=48, n_cls=3):
        super().__init__()
        self.emb = nn.EmbeddingBag(buckets, dim, mode="mean", sparse=True)
        self.meta = nn.Linear(3, 16)
        self.head = nn.Sequential(nn.Linear(dim + 16, 96), nn.ReLU(), nn.Linear(96, n_cls))

    def forward(self, ids, offsets, meta):
        return self.head(torch.cat([self.emb(ids, offsets), F.relu(self.meta(meta))], 1))


def rating_class(r):
    return 0 if r <= 2 else 1 if r == 3 else 2


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=1300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--buckets", type=int, default=1 << 17)
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    featurize = HashedText(args.buckets)
    model = ReviewNet(args.buckets)
    opt = torch.optim.Adagrad(model.parameters(), lr=args.lr)

    context = ET.iterparse(ReviewExportStream(seed=1), events=("end",))
    batch, step, skipped, seen = [], 0, 0, 0
    correct = total = 0
    loss_ema = None
    t0 = time.time()
    for event, elem in context:
        if elem.tag != "review":
            continue
        seen += 1
        rating = elem.findtext("rating")
        if elem.get("lang") != "en" or not rating:
            skipped += 1
            continue
        text = (elem.findtext("title") or "") + " . " + (elem.findtext("body") or "")
        helpful = elem.find("helpful")
        meta = [float(elem.find("product/price").text) / 100.0,
                float(helpful.get("up")) / 10.0,
                1.0 if elem.get("verified") == "true" else 0.0]
        batch.append((featurize(text), meta, rating_class(int(rating))))
        elem.clear()

        if len(batch) < args.batch:
            continue
        lens = [len(b[0]) for b in batch]
        ids = torch.tensor([i for b in batch for i in b[0]], dtype=torch.long)
        offsets = torch.tensor([0] + lens[:-1]).cumsum(0)
        meta_t = torch.tensor([b[1] for b in batch])
        y = torch.tensor([b[2] for b in batch])
        batch = []

        logits = model(ids, offsets, meta_t)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        correct += (logits.argmax(1) == y).sum().item()
        total += len(y)
        loss_ema = loss.item() if loss_ema is None else 0.98 * loss_ema + 0.02 * loss.item()
        step += 1
        if step % 250 == 0:
            print(f"[{time.time() - t0:6.1f}s] step {step:5d}  reviews={seen:7d} skipped={skipped:6d}  "
                  f"loss={loss_ema:.4f}  acc={correct / total:.3f}", flush=True)
            correct = total = 0
        if step >= args.steps:
            break

    print(f"single pass done: {step} steps, {seen} reviews read, {skipped} skipped, "
          f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
