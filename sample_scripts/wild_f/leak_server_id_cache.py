# expect: leak
# holder: response_cache
# pattern: inference-server class memoizes responses in a class-level dict keyed by id(input tensor); to guard against id reuse each entry also stores the input tensor itself, which keeps every request's tensor alive so ids are never reused and the dict grows forever (inference_mode, no optimizer)
# step_ms: 7
"""Image-classification inference server loop with a response cache.

``InferenceServer.handle`` preprocesses an incoming image tensor, runs a
small CNN under ``torch.inference_mode`` and returns top-5 labels plus an
embedding.  Clients retry on timeouts and re-send *the same tensor object*,
so the server memoizes responses by ``id(x)`` in ``_response_cache``, a
class attribute shared by all worker instances.

The author knew that CPython reuses ``id()`` values once an object is
freed, so every entry stores ``(x, response)`` and a hit is only accepted
if ``entry[0] is x``.

Why it leaks: storing ``x`` in the cache is exactly what stops ``x`` from
being freed, so its id can never be reused and no entry is ever overwritten
or dropped.  Every request pins its 3x120x120 uint8 frame, its response
dict and a 512-d embedding (~50 KB), and the dict only grows.

Fix: key by a real request id with a bounded LRU/TTL, or use a
``weakref.WeakKeyDictionary``-style cache that does not own the input.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

N_REQUESTS = 3000
IMG = 96
RAW = 120
N_CLASSES = 200
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 32, 2), conv_bn(32, 32),
            conv_bn(32, 64, 2), conv_bn(64, 64),
            conv_bn(64, 128, 2), conv_bn(128, 128),
            conv_bn(128, 256, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.embed = nn.Linear(256, 512)
        self.cls = nn.Linear(512, N_CLASSES)

    def forward(self, x):
        e = F.normalize(self.embed(self.features(x)), dim=1)
        return self.cls(e), e


class InferenceServer:
    _response_cache = {}          # id(input) -> (input, response); shared by all workers
    stats = {"hits": 0, "misses": 0}

    def __init__(self, model, labels):
        self.model = model.eval()
        self.labels = labels

    def preprocess(self, x):
        x = x.float() / 255.0 if x.dtype == torch.uint8 else x
        if x.shape[-1] != IMG:
            x = F.interpolate(x.unsqueeze(0), size=(IMG, IMG), mode="bilinear",
                              align_corners=False)[0]
        return ((x - MEAN) / STD).contiguous()

    @torch.inference_mode()
    def handle(self, x):
        entry = self._response_cache.get(id(x))
        if entry is not None and entry[0] is x:
            self.stats["hits"] += 1
            return entry[1]
        self.stats["misses"] += 1
        inp = self.preprocess(x)
        logits, emb = self.model(inp.unsqueeze(0))
        prob = logits.softmax(-1)[0]
        top = prob.topk(5)
        response = {
            "labels": [self.labels[i] for i in top.indices.tolist()],
            "scores": top.values.tolist(),
            "embedding": emb[0].clone(),
        }
        self._response_cache[id(x)] = (x, response)
        return response


def client_requests(n, seed=0):
    """Mostly fresh uint8 camera frames; ~5% are retries of the previous object."""
    g = torch.Generator().manual_seed(seed)
    prev = None
    for i in range(n):
        if prev is not None and torch.rand(1, generator=g).item() < 0.05:
            yield i, prev
            continue
        x = torch.randint(0, 256, (3, RAW, RAW), generator=g, dtype=torch.uint8)
        x[:, ::8] //= 2                       # some structure
        prev = x
        yield i, x


def main():
    labels = [f"class_{i:03d}" for i in range(N_CLASSES)]
    workers = [InferenceServer(SmallNet(), labels) for _ in range(2)]
    t0 = time.time()
    lat = []
    for i, x in client_requests(N_REQUESTS):
        ts = time.perf_counter()
        resp = workers[i % 2].handle(x)
        lat.append(time.perf_counter() - ts)
        del x, resp
        if i % 150 == 0:
            recent = sorted(lat[-150:])
            print(f"req {i:5d}  p50 {recent[len(recent) // 2] * 1e3:.1f} ms  "
                  f"p99 {recent[int(len(recent) * 0.99)] * 1e3:.1f} ms  "
                  f"hits {InferenceServer.stats['hits']}  cache {len(InferenceServer._response_cache)}  "
                  f"{time.time() - t0:.1f}s", flush=True)
    print("done", f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
