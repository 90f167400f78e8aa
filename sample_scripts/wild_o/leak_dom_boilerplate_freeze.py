# expect: leak
# holder: gc.freeze|gc.get_freeze_count|node.parent|self.parent|self.children
# pattern: main-content extraction service (small transformer over DOM nodes served under torch.inference_mode after a brief hand-written momentum-SGD warm start, no torch.optim) builds a DOM tree per page whose nodes point to their parent and children (reference cycles); to keep long-lived objects out of the young generations it calls gc.freeze() after every request batch, which moves the previous pages' not-yet-collected DOM trees (with their text and numpy feature rows) into the permanent generation, where the cyclic collector never frees them
# step_ms: 12
"""Boilerplate removal / main-content extraction service.

Pages are parsed into a DOM tree; every element gets layout-free features
(tag, depth, text length, link density, punctuation, class-name hints) and a
small transformer encoder labels each element as main content or boilerplate
(navigation, ads, footers).  The service takes pages in micro-batches and
returns the extracted article text.  The page generator below stands in for
the crawler's fetch queue.
"""
import argparse
import gc
import random
import time

import numpy as np
import torch
from torch import nn

TAGS = ["html", "body", "div", "nav", "ul", "li", "a", "p", "span", "h1", "h2",
        "header", "footer", "aside", "article", "section", "img", "script"]
TAG_ID = {t: i for i, t in enumerate(TAGS)}
HINTS = ["content", "article", "post", "body", "main", "nav", "menu", "footer", "ad",
         "sponsor", "share", "comment", "sidebar", "related", "promo", "cookie"]
WORDS = ("the of and to in is for on that with as by at from this be are was it an or which "
         "river model council budget season vaccine market station league report data city "
         "policy energy school storm court museum research").split()
N_FEAT = 8 + len(HINTS)
MAX_NODES = 96


class DomNode:
    def __init__(self, tag, parent=None, classes=(), text=""):
        self.tag = tag
        self.parent = parent
        self.children = []
        self.classes = list(classes)
        self.text = text
        self.features = None
        if parent is not None:
            parent.children.append(self)

    def depth(self):
        d, node = 0, self.parent
        while node is not None:
            d, node = d + 1, node.parent
        return d

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n)) + rng.choice([".", ".", "?", ","])


def fetch_page(rng):
    root = DomNode("html")
    body = DomNode("body", root)
    header = DomNode("header", body, ["site-header"])
    nav = DomNode("nav", header, [rng.choice(["nav", "menu"])])
    ul = DomNode("ul", nav)
    for _ in range(rng.randint(4, 9)):
        DomNode("a", DomNode("li", ul), text=rng.choice(WORDS).title())
    main = DomNode(rng.choice(["article", "div", "section"]), body,
                   [rng.choice(["content", "post", "article", "main", "body"])])
    DomNode("h1", main, text=sentence(rng, rng.randint(5, 10)))
    for _ in range(rng.randint(3, 10)):
        para = DomNode("p", main, text=" ".join(sentence(rng, rng.randint(8, 25)) for _ in range(2)))
        if rng.random() < 0.3:
            DomNode("a", para, text=rng.choice(WORDS))
    aside = DomNode("aside", body, [rng.choice(["sidebar", "related", "promo"])])
    for _ in range(rng.randint(2, 6)):
        box = DomNode("div", aside, [rng.choice(["ad", "sponsor", "related"])])
        DomNode("a", box, text=sentence(rng, rng.randint(3, 7)))
        DomNode("img", box)
    footer = DomNode("footer", body, ["footer"])
    for _ in range(rng.randint(3, 8)):
        DomNode("a", footer, text=rng.choice(WORDS).title())
    DomNode("script", body)
    return root


def featurize(root):
    nodes = list(root.walk())[:MAX_NODES]
    feats = np.zeros((len(nodes), N_FEAT), np.float32)
    for i, node in enumerate(nodes):
        text = node.text
        sub_text = sum(len(n.text) for n in node.walk())
        link_text = sum(len(n.text) for n in node.walk() if n.tag == "a")
        f = feats[i]
        f[0] = TAG_ID[node.tag] / len(TAGS)
        f[1] = node.depth() / 10
        f[2] = np.log1p(len(text)) / 8
        f[3] = np.log1p(sub_text) / 10
        f[4] = link_text / max(sub_text, 1)
        f[5] = sum(text.count(c) for c in ".,?") / max(len(text.split()), 1)
        f[6] = len(node.children) / 10
        f[7] = node.parent is not None and node.parent.tag in ("article", "section")
        for c in node.classes:
            for j, h in enumerate(HINTS):
                if h in c:
                    f[8 + j] = 1
        node.features = f
    return nodes, feats


class NodeTagger(nn.Module):
    def __init__(self, d=128, layers=3):
        super().__init__()
        self.inp = nn.Linear(N_FEAT, d)
        self.pos = nn.Embedding(MAX_NODES, d)
        enc = nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(enc, layers, enable_nested_tensor=False)
        self.out = nn.Linear(d, 1)

    def forward(self, x, pad):
        h = self.inp(x) + self.pos.weight[: x.shape[1]]
        return self.out(self.encoder(h, src_key_padding_mask=pad)).squeeze(-1)


class ExtractionService:
    def __init__(self, model):
        self.model = model.eval()
        self.pages = 0
        self.chars_out = 0

    def handle_batch(self, roots):
        parsed = [featurize(r) for r in roots]
        n = max(len(nodes) for nodes, _ in parsed)
        x = torch.zeros(len(parsed), n, N_FEAT)
        pad = torch.ones(len(parsed), n, dtype=torch.bool)
        for i, (_, feats) in enumerate(parsed):
            x[i, : len(feats)] = torch.from_numpy(feats)
            pad[i, : len(feats)] = False
        with torch.inference_mode():
            keep = (self.model(x, pad) > 0).numpy()
        results = []
        for (nodes, _), mask in zip(parsed, keep):
            text = "\n".join(nd.text for nd, k in zip(nodes, mask) if k and nd.tag in ("p", "h1", "h2"))
            results.append(text)
            self.chars_out += len(text)
        self.pages += len(roots)
        self._after_batch()
        return results

    def _after_batch(self):
        # long-lived objects (model, vocab, interned strings) should not be rescanned by
        # every collection; full collections were showing up as p99 latency spikes
        gc.freeze()


def pretrain(model, rng, steps=60, lr=0.02, momentum=0.9):
    """Quick weak-label fit: paragraphs/headings inside the main container are content."""
    params = [p for p in model.parameters() if p.requires_grad]
    velocity = [torch.zeros_like(p) for p in params]
    for _ in range(steps):
        roots = [fetch_page(rng) for _ in range(16)]
        parsed = [featurize(r) for r in roots]
        n = max(len(nd) for nd, _ in parsed)
        x = torch.zeros(16, n, N_FEAT)
        y = torch.zeros(16, n)
        pad = torch.ones(16, n, dtype=torch.bool)
        for i, (nodes, feats) in enumerate(parsed):
            x[i, : len(feats)] = torch.from_numpy(feats)
            pad[i, : len(feats)] = False
            y[i, : len(nodes)] = torch.tensor(
                [float(nd.tag in ("p", "h1") and nd.parent.tag in ("article", "div", "section")
                       and nd.parent.parent is not None and nd.parent.parent.tag == "body")
                 for nd in nodes])
        logits = model(x, pad)
        loss = nn.functional.binary_cross_entropy_with_logits(logits[~pad], y[~pad])
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g, v in zip(params, grads, velocity):
                v.mul_(momentum).add_(g)
                p.sub_(lr * v)
    return loss.item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=2000)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seed", type=int, default=2)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    model = NodeTagger()
    print(f"weak-label warm start, final loss {pretrain(model, rng):.3f}")
    service = ExtractionService(model)

    t0 = time.time()
    latencies = []
    for b in range(1, args.batches + 1):
        roots = [fetch_page(rng) for _ in range(args.batch_size)]
        t = time.perf_counter()
        service.handle_batch(roots)
        latencies.append(time.perf_counter() - t)
        if b % 400 == 0:
            lat = np.array(latencies[-400:]) * 1000
            print(f"{service.pages} pages  p50 {np.percentile(lat, 50):.1f} ms  p99 {np.percentile(lat, 99):.1f} ms"
                  f"  avg extracted {service.chars_out / service.pages:.0f} chars  ({time.time() - t0:.1f}s)",
                  flush=True)
    print(f"served {service.pages} pages in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
