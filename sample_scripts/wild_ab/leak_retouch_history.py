# expect: leak
# holder: EditHistory._patches|history._patches|_patches
# pattern: replay of a recorded photo-retouching session against the editor core (NumPy + Pillow, no torch; one step = one user action: brush/heal/dodge/blur/sharpen on a region via PIL ImageFilter/ImageEnhance/ImageDraw, or a global levels/curves/white-balance pass, occasionally undo/redo, plus the viewport/navigator/histogram refresh and a JPEG autosave every 10 actions, ~30 ms per step, code in main() + Document/EditHistory classes + op functions); EditHistory keeps the undo order as op ids in self._undo = deque(maxlen=depth) and the pixels to restore in a side table self._patches (op id -> Patch(box, before-pixels)); redo entries are purged correctly when a new edit is recorded, but when the undo deque is full, append() silently discards the oldest op id and nothing drops that op's entry from _patches, so every edit's "before" pixels (a region crop, or the whole 1024x768 RGB canvas for global ops) stay in the dict for the rest of the session although the op can no longer be undone
# step_ms: 30
"""Retouching session replay.

Replays a long scripted editing session on one photo (the kind of macro the QA
team records) through the editor core: every destructive action stores the
pixels it overwrote so it can be undone, and undo/redo swap them back.
"""

import io
import itertools
import random
import time
from collections import deque, namedtuple

import numpy as np
from PIL import Image, ImageDraw, ImageEnhance, ImageFilter

H, W = 768, 1024
N_ACTIONS = 540
UNDO_DEPTH = 30

Patch = namedtuple("Patch", "box pixels")


class EditHistory:
    def __init__(self, depth):
        self._undo = deque(maxlen=depth)   # op ids, newest last
        self._redo = []
        self._patches = {}                  # op id -> Patch
        self._ids = itertools.count(1)

    def record(self, canvas, box):
        """Call *before* modifying `box` of `canvas`."""
        x0, y0, x1, y1 = box
        op = next(self._ids)
        self._patches[op] = Patch(box, canvas[y0:y1, x0:x1].copy())
        self._undo.append(op)
        for r in self._redo:            # a new edit invalidates the redo branch
            self._patches.pop(r, None)
        self._redo.clear()
        return op

    def _swap(self, canvas, op):
        p = self._patches[op]
        x0, y0, x1, y1 = p.box
        current = canvas[y0:y1, x0:x1].copy()
        canvas[y0:y1, x0:x1] = p.pixels
        self._patches[op] = Patch(p.box, current)

    def undo(self, canvas):
        if not self._undo:
            return False
        op = self._undo.pop()
        self._swap(canvas, op)
        self._redo.append(op)
        return True

    def redo(self, canvas):
        if not self._redo:
            return False
        op = self._redo.pop()
        self._swap(canvas, op)
        self._undo.append(op)
        return True

    def __len__(self):
        return len(self._undo)


class Document:
    def __init__(self, pixels):
        self.canvas = pixels
        self.history = EditHistory(UNDO_DEPTH)
        self.dirty = False

    def apply(self, box, fn):
        x0, y0, x1, y1 = box
        self.history.record(self.canvas, box)
        region = Image.fromarray(self.canvas[y0:y1, x0:x1])
        out = fn(region)
        self.canvas[y0:y1, x0:x1] = np.asarray(out.convert("RGB"))
        self.dirty = True


def synth_photo(rng):
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    sky = np.stack([120 + 60 * yy / H, 160 + 40 * yy / H, 230 - 30 * yy / H], -1)
    ground = np.stack([70 + 30 * np.sin(xx / 37.0), 110 + 25 * np.cos(yy / 23.0), 60 + 0 * xx], -1)
    horizon = H * 0.55 + 30 * np.sin(xx / 150.0)
    img = np.where((yy > horizon)[..., None], ground, sky)
    img += rng.normal(0, 6, size=img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def rand_box(rng, lo, hi):
    w = int(rng.integers(lo, hi))
    h = int(rng.integers(lo, hi) * 0.75)
    x0 = int(rng.integers(0, W - w))
    y0 = int(rng.integers(0, H - h))
    return (x0, y0, x0 + w, y0 + h)


def op_brush(rng):
    pts = [tuple(int(v) for v in rng.integers(0, 400, size=2)) for _ in range(12)]
    colour = tuple(int(c) for c in rng.integers(0, 255, size=3))

    def f(img):
        img = img.copy()
        d = ImageDraw.Draw(img)
        d.line(pts, fill=colour, width=int(rng.integers(3, 14)), joint="curve")
        return img
    return f


def op_heal(rng):
    return lambda img: img.filter(ImageFilter.MedianFilter(5)).filter(ImageFilter.GaussianBlur(2))


def op_sharpen(rng):
    return lambda img: img.filter(ImageFilter.UnsharpMask(radius=2, percent=int(rng.integers(80, 200))))


def op_dodge(rng):
    k = float(rng.uniform(0.7, 1.4))
    return lambda img: ImageEnhance.Brightness(img).enhance(k)


def op_blur(rng):
    return lambda img: img.filter(ImageFilter.GaussianBlur(float(rng.uniform(1, 6))))


def op_levels(rng):
    lo, hi = float(rng.uniform(0, 30)), float(rng.uniform(220, 255))
    gamma = float(rng.uniform(0.8, 1.25))
    lut = np.clip(((np.arange(256) - lo) / (hi - lo)), 0, 1) ** gamma * 255
    lut = lut.astype(np.uint8)
    return lambda img: Image.fromarray(lut[np.asarray(img)])


def op_white_balance(rng):
    gains = rng.uniform(0.9, 1.1, size=3)

    def f(img):
        a = np.asarray(img).astype(np.float32) * gains
        return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))
    return f


LOCAL = [op_brush, op_heal, op_sharpen, op_dodge, op_blur]
GLOBAL = [op_levels, op_white_balance]


def refresh_views(canvas, zoom=1.4):
    """What the UI redraws after every action: the HiDPI viewport, the
    navigator thumbnail and the RGB histogram."""
    img = Image.fromarray(canvas)
    view = img.resize((int(W * zoom), int(H * zoom)), Image.LANCZOS)
    thumb = img.resize((256, 192), Image.BILINEAR)
    hist = np.stack([np.bincount(canvas[..., c].ravel(), minlength=256) for c in range(3)])
    return view, thumb, hist


def autosave(canvas):
    buf = io.BytesIO()
    Image.fromarray(canvas).save(buf, format="JPEG", quality=92)
    return buf.getvalue()


def main():
    rng = np.random.default_rng(17)
    doc = Document(synth_photo(rng))
    t0 = last = time.perf_counter()
    undos = redos = 0
    saved = b""
    for step in range(N_ACTIONS):
        r = rng.random()
        if r < 0.10:
            undos += doc.history.undo(doc.canvas)
        elif r < 0.14:
            redos += doc.history.redo(doc.canvas)
        elif r < 0.22:
            doc.apply((0, 0, W, H), GLOBAL[int(rng.integers(len(GLOBAL)))](rng))
        elif r < 0.42:
            doc.apply(rand_box(rng, 300, 600), LOCAL[int(rng.integers(len(LOCAL)))](rng))
        else:
            doc.apply(rand_box(rng, 80, 300), LOCAL[int(rng.integers(len(LOCAL)))](rng))
        view, thumb, hist = refresh_views(doc.canvas)
        if doc.dirty and step % 10 == 9:
            saved = autosave(doc.canvas)
            doc.dirty = False
        now = time.perf_counter()
        if now - last >= 1.0:
            last = now
            print(f"action {step:3d} undo_depth={len(doc.history)} undos={undos} redos={redos} "
                  f"mean={doc.canvas.mean():.1f} clip={int(hist[:, 255].sum())} autosave={len(saved) >> 10}KB", flush=True)
    print(f"done: {N_ACTIONS} actions in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
