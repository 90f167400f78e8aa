"""The fix hints, one table: what a person is told to do about each leak pattern.

DESIGN.md's table of leaks, in words. The signal-level findings (``findings.py``) and the
census culprits (``culprit.py``) both take their hint from here, so a pattern reads the
same whichever of the two named it.
"""

from __future__ import annotations

__all__ = [
    "HINT_CARRIED",
    "HINT_CONTAINER",
    "HINT_CREATE_GRAPH",
    "HINT_DETACH",
    "HINT_FIGURE",
    "HINT_FRAGMENTATION",
    "HINT_GC_FREEZE",
    "HINT_HEAP",
    "HINT_ITEM",
    "HINT_MODULE",
    "HINT_NO_GRAD",
    "HINT_NUMPY",
    "HINT_OBJECTS",
    "HINT_UNHELD",
    "HINT_WORKER",
]

# loss tensors kept (a list of losses, ``total += loss``): each keeps its step's graph
HINT_ITEM = (
    "keep numbers, not tensors: `losses.append(loss.item())` / `total += loss.item()` "
    "(or `loss.detach()`); every kept loss tensor keeps its step's autograd graph alive"
)
# a running tensor computed from every step's tensors
HINT_NO_GRAD = (
    "outputs of a forward pass are kept with their autograd graph (activations included): "
    "run that forward under `torch.no_grad()` / `torch.inference_mode()`, or keep "
    "`out.detach()` or the numbers you need (`.item()`, `.tolist()`)"
)
HINT_CARRIED = (
    "a tensor carried across steps is computed from each step's tensors, so it keeps every "
    "step's graph: accumulate numbers (`total += loss.item()`) or detach what goes in "
    "(`running = 0.99 * running + 0.01 * x.detach()`)"
)
# recurrent state fed back without a detach
HINT_DETACH = (
    "state carried across steps keeps every step's graph alive: detach it at the step "
    "boundary (`h = h.detach()`, `running = running.detach()`)"
)
HINT_CREATE_GRAPH = (
    "`backward(create_graph=True)` leaves in each parameter's `.grad` a graph that refers back "
    "to the parameter, a reference cycle autograd never frees: set `p.grad = None` once the "
    "step is done, or take the gradients with `torch.autograd.grad(..., create_graph=True)`"
)
HINT_CONTAINER = "clear it once used, or bound it: `collections.deque(maxlen=N)`"
HINT_GC_FREEZE = (
    "`gc.freeze()` moves every object the collector tracks, garbage in reference cycles "
    "included, to a permanent generation it never collects: call it once, after start-up "
    "and a `gc.collect()`, not in a loop (or `gc.unfreeze()` to hand them back)"
)
# tensors with no graph that no variable of the user's was seen gaining
HINT_UNHELD = (
    "no variable of yours was seen gaining these tensors: look for what keeps them out of "
    "sight, a handler, hook or callback you register (`signal.signal`, `register_*_hook`, "
    "`atexit`) or a closure over them, and keep numbers (`.item()`) or a bounded window instead"
)
# a function made again every round around the last one (culprit_closures.py)
HINT_CLOSURE_CHAIN = (
    "each new function keeps the one it replaced (`f = wrap(f)` every round; a handler that "
    "calls the previous one): wrap the original once, or put the previous one back when done "
    "(`signal.signal(sig, previous)`), and close over numbers, not the objects themselves"
)
HINT_GENERATOR_CHAIN = (
    "a generator that goes on with `yield from` itself never returns: every earlier one "
    "stays suspended with its locals; loop inside one generator (`while True:`) instead"
)
HINT_FINALIZE = (
    "a `weakref.finalize(obj, func, *args)` stays registered until `obj` dies, and a `func` or "
    "argument that refers to `obj` (a bound method `obj.release`, a closure over it) keeps "
    "`obj` alive for good: pass a plain function and only what it frees "
    "(`weakref.finalize(self, release, self.handle)`)"
)
HINT_ATEXIT = (
    "`atexit.register(obj.method)` keeps `obj` until the program exits, once per call: "
    "register one function once (at start-up) that flushes what is still open, or call "
    "`atexit.unregister(obj.method)` when `obj` is done"
)
HINT_LOGGERS = (
    "`logging.getLogger(name)` keeps every logger it has made for the life of the process, "
    "with its handlers and filters: a name per session, request or run is a logger that "
    "never goes; log through one logger per module and put what varies in `extra=` or a "
    "`logging.LoggerAdapter`"
)
HINT_SYS_MODULES = (
    "a module registered in `sys.modules` lives as long as the process, with everything its "
    "globals hold: run generated code in a plain namespace (`exec(code, ns)` with `ns = {}`) "
    "instead of a registered module, or `del sys.modules[name]` once it is no longer used"
)
HINT_CVAR_DEFAULT = (
    "a `ContextVar`'s default is one object, shared by every context that never set its own: "
    "a mutable default (`default=[]`) gathers every request's items; declare "
    "`default=None` and `set()` a fresh list where each request or task begins"
)
HINT_PICKLER = (
    "a `pickle.Pickler` keeps every object it has written in its memo (to write it once and "
    "refer back to it): call `pickler.clear_memo()` after each record, or `pickle.dumps` "
    "each record on its own"
)
HINT_TEE = (
    "an `itertools.tee` branch read behind the others keeps every item they have taken since: "
    "read the branches in step (`zip`), or keep only what the late reader needs (a list of "
    "summaries) instead of a second branch"
)
HINT_TREE = (
    "a tree of dicts (a trie, a nested index) that gains a branch for every new key: bound "
    "it (prune rare branches, cap its size) or normalise keys that never repeat (ids, codes)"
)
HINT_GROWING_TENSOR = (
    "one tensor is rebuilt longer every step (`bank = torch.cat([bank, x])`): keep only the "
    "last N rows (`bank = bank[-N:]`) or fill a preallocated ring buffer in place"
)
HINT_CYCLE = (
    "`itertools.cycle` keeps every item of its first pass to replay it; over a stream longer "
    "than the run (a loader, a generator) that pass never ends: restart the iterator when it "
    "runs out (`next(it, None)`, then `it = iter(loader)`) instead of cycling it"
)
HINT_CHAIN = (
    "each new object keeps the one before it (`x = Wrapper(x)` every round): build the new "
    "one from the base object, not from the last one, or drop the link once it is used"
)
HINT_TRACEBACK_CHAIN = (
    "one exception object raised again and again keeps the frames of every raise in its "
    "`__traceback__`: raise a new instance each time (`raise Oversize(...)`), or raise it "
    "with `.with_traceback(None)`"
)
HINT_LRU = (
    "an unbounded `functools.lru_cache` keyed by a value that never repeats: bound it "
    "(`lru_cache(maxsize=N)`) or call `.cache_clear()`"
)
HINT_HOOKS = (
    "hooks pile up: keep the handle `register_hook` returns and `.remove()` it, or register "
    "the hook once outside the loop"
)
HINT_MODULE = (
    "old models stay alive: drop the reference (registry, 'best so far' slot, reference "
    "cycle); copy weights with `load_state_dict` instead of `copy.deepcopy`"
)
# modules that hold no parameters pile up (``param_bytes`` flat): one registered again every
# round (wild_m/leak_gradual_magnitude_pruning: a mask per layer per pruning round)
HINT_SUBMODULE = (
    "modules without parameters of their own pile up: one is registered again every round "
    "(`parametrize.register_parametrization` on a weight already parametrized adds to its "
    "list; `add_module`/`register_module` under new names): register it once, or remove the "
    "old one first (`parametrize.remove_parametrizations(layer, 'weight')`)"
)
HINT_FIGURE = "figures are never closed: call `plt.close(fig)` once each one is saved"
HINT_GROWING_ARRAY = (
    "one array is rebuilt longer every step (`a = np.concatenate([a, x])`, `np.append`): "
    "trim it along the axis it grows (`a = a[..., -N:]`; `len(a)` is its first axis only) "
    "or fill a preallocated ring buffer in place"
)
HINT_NUMPY = "per-step NumPy arrays are kept: preallocate and reuse a buffer, or keep summaries"
# one type's objects grow, and the census found no container of the user's holding them
HINT_OBJECTS = "objects of this type accumulate: find who keeps them and drop or bound it"
# the Python heap grows with no census to say what: a signal-level finding only
HINT_HEAP = (
    "Python objects accumulate: look for a list or dict on a long-lived object that only "
    "grows; clear it or use `collections.deque(maxlen=N)`"
)
# memory grows and nothing Python counts grows with it (see grouping._outside_python)
HINT_NATIVE = (
    "find what the loop feeds outside Python's objects: an in-memory database (`sqlite3` "
    "rows never deleted), a C extension's buffers or caches, a `bytearray`/`io.BytesIO` "
    "growing in place; a native profiler (`memray run --native`) names the C calls"
)
HINT_SQLITE = (
    "an in-memory SQLite database keeps every row until it is deleted: check that the "
    "pruning really deletes (the cutoff's units, its `WHERE`), or keep the table in a file"
)
HINT_NATIVE_BUFFER = (
    "a buffer grown in place keeps everything written to it: `del buf[:n]` / a fresh "
    "`io.BytesIO()` once what it holds is used, or write to a file"
)
HINT_STRING = (
    "a string built with `+=` keeps every piece added to it: write each piece out as it "
    'comes (a file, a logger) or start it empty again once it is used (`text = ""`)'
)
HINT_PROFILER = (
    "a torch profiler keeps every op it records until it is stopped: stop it once the steps "
    "you want are recorded (`prof.stop()`, or its `with` block), or give it a "
    "`schedule=torch.profiler.schedule(..., repeat=N)` with `on_trace_ready`"
)
HINT_WORKER = (
    "DataLoader workers touch the refcounts of a Python-object dataset and copy its pages "
    "(pytorch/pytorch#13246): store it in NumPy arrays or Arrow instead of lists of objects"
)
HINT_FRAGMENTATION = (
    "not a leak but allocator fragmentation: try `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`"
)
HINT_PROCESSES = (
    "processes are started and never ended: a DataLoader with `persistent_workers=True` kept "
    "by a cache or a list keeps its workers (delete the old loader before making the next), "
    "a `multiprocessing.Pool` or executor never closed (use `with`, or `close()` and `join()`)"
)
