# expect: leak
# holder: linecache.cache|linecache|compile_individual
# pattern: NumPy-only genetic-programming symbolic regression (no torch, no optimizer; one step = one generation of 320 expression trees, ~110 ms per generation, code in main() + module-level GP helpers); every new offspring is turned into a real Python function by generating straight-line source (one SSA line per tree node plus a docstring with the infix formula and lineage), compile()-ing it under a unique pseudo-filename "<gp:g{gen}_{i}>" and exec()-ing it, and, like dataclasses/attrs do for generated methods, the source is registered in linecache.cache[filename] so tracebacks and inspect.getsource show the formula; the entries use mtime None, so linecache.checkcache() never evicts them, and nobody removes them when the individual dies, so the module-global linecache.cache keeps every generated source (split into lines, ~4-6 KB per individual) of every individual ever bred for the whole run
# step_ms: 110
"""Symbolic regression with tree-based genetic programming.

We try to rediscover the closed form of a noisy synthetic "drag" law
    y = 0.5 * rho * v**2 * Cd(Re) * A,   Cd = 24/Re + 0.44 + sin(...)
from 4 measured inputs.  Expression trees are evolved with tournament
selection, subtree crossover, point/subtree mutation and constant jitter.

Evaluating trees with a recursive interpreter was the bottleneck, so each
new individual is compiled once into a straight-line NumPy function.  The
generated source is registered with linecache, which makes a NaN/overflow
traceback inside an evolved function point at the actual formula, and
inspect.getsource() works on the hall-of-fame functions for the final report.

Usage:  python symreg_gp_linecache.py [--steps 170] [--pop 320]
"""
import argparse
import linecache
import math
import random
import time

import numpy as np


# ------------------------------------------------------------ primitives ---
def pdiv(a, b):
    return np.where(np.abs(b) > 1e-6, a / np.where(np.abs(b) > 1e-6, b, 1.0), 1.0)


def plog(a):
    return np.log(np.abs(a) + 1e-6)


BINARY = {"add": "({} + {})", "sub": "({} - {})", "mul": "({} * {})", "div": "pdiv({}, {})"}
UNARY = {"sin": "np.sin({})", "cos": "np.cos({})", "log": "plog({})", "sq": "({} ** 2)", "neg": "(-{})"}
N_VARS = 4
VAR_NAMES = ["rho", "v", "area", "visc"]


def random_tree(rng, depth, full=False):
    if depth == 0 or (not full and rng.random() < 0.3):
        if rng.random() < 0.7:
            return ("x", rng.randrange(N_VARS))
        return ("c", round(rng.uniform(-3, 3), 3))
    if rng.random() < 0.65:
        op = rng.choice(list(BINARY))
        return (op, random_tree(rng, depth - 1, full), random_tree(rng, depth - 1, full))
    return (rng.choice(list(UNARY)), random_tree(rng, depth - 1, full))


def size(tree):
    if tree[0] in ("x", "c"):
        return 1
    return 1 + sum(size(t) for t in tree[1:])


def depth(tree):
    if tree[0] in ("x", "c"):
        return 0
    return 1 + max(depth(t) for t in tree[1:])


def subtrees(tree, path=()):
    yield path, tree
    if tree[0] not in ("x", "c"):
        for i, child in enumerate(tree[1:], start=1):
            yield from subtrees(child, path + (i,))


def replace(tree, path, new):
    if not path:
        return new
    i = path[0]
    return tree[:i] + (replace(tree[i], path[1:], new),) + tree[i + 1:]


def infix(tree):
    op = tree[0]
    if op == "x":
        return VAR_NAMES[tree[1]]
    if op == "c":
        return repr(tree[1])
    if op in BINARY:
        return BINARY[op].format(infix(tree[1]), infix(tree[2]))
    return UNARY[op].format(infix(tree[1]))


# ------------------------------------------------------------- compiling ---
def render_source(tree, name, lineage):
    lines = []
    counter = [0]

    def emit(t):
        op = t[0]
        if op == "x":
            return f"x{t[1]}"
        if op == "c":
            return repr(t[1])
        args = [emit(c) for c in t[1:]]
        tmp = f"t{counter[0]}"
        counter[0] += 1
        tmpl = BINARY.get(op) or UNARY[op]
        lines.append(f"    {tmp} = {tmpl.format(*args)}")
        return tmp

    out = emit(tree)
    formula = infix(tree)
    doc = [f'    """{formula}', "", f"    size={size(tree)} depth={depth(tree)}", f"    lineage: {lineage}", '    """']
    head = [f"def {name}(X):"] + doc + ["    " + ", ".join(f"x{i}" for i in range(N_VARS)) + " = " + ", ".join(f"X[{i}]" for i in range(N_VARS))]
    body = lines + [f"    return {out} + 0.0 * x0"]
    return "\n".join(head + body) + "\n"


_NAMESPACE = {"np": np, "pdiv": pdiv, "plog": plog}


def compile_individual(tree, name, lineage):
    src = render_source(tree, name, lineage)
    filename = f"<gp:{name}>"
    code = compile(src, filename, "exec")
    # register the generated source so tracebacks / inspect.getsource can show it
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = dict(_NAMESPACE)
    exec(code, ns)
    return ns[name]


# --------------------------------------------------------------- problem ---
def make_data(n, seed):
    rng = np.random.default_rng(seed)
    rho = rng.uniform(0.8, 1.4, n)
    v = rng.uniform(0.5, 6.0, n)
    area = rng.uniform(0.05, 0.8, n)
    visc = rng.uniform(0.5, 3.0, n)
    re = rho * v * np.sqrt(area) / visc * 40
    cd = 24.0 / re + 0.44 + 0.1 * np.sin(re / 15)
    y = 0.5 * rho * v ** 2 * cd * area
    y = y + rng.normal(0, 0.02 * y.std(), n)
    return np.stack([rho, v, area, visc]), y


class Individual:
    __slots__ = ("tree", "fn", "fitness", "name")

    def __init__(self, tree, fn, name):
        self.tree, self.fn, self.name, self.fitness = tree, fn, name, math.inf


def evaluate(ind, X, y, parsimony):
    with np.errstate(all="ignore"):
        pred = ind.fn(X)
    if not np.all(np.isfinite(pred)):
        ind.fitness = math.inf
        return
    rmse = float(np.sqrt(np.mean((pred - y) ** 2)))
    ind.fitness = rmse / (y.std() + 1e-12) + parsimony * size(ind.tree)


def tournament(rng, pop, k=5):
    return min(rng.sample(pop, k), key=lambda ind: ind.fitness)


def crossover(rng, a, b, max_depth=9):
    pa, _ = rng.choice(list(subtrees(a)))
    _, sb = rng.choice(list(subtrees(b)))
    child = replace(a, pa, sb)
    return child if depth(child) <= max_depth else a


def mutate(rng, t):
    path, sub = rng.choice(list(subtrees(t)))
    r = rng.random()
    if sub[0] == "c" and r < 0.6:
        return replace(t, path, ("c", round(sub[1] * rng.uniform(0.8, 1.25) + rng.gauss(0, 0.05), 4)))
    if r < 0.8:
        return replace(t, path, random_tree(rng, rng.randint(1, 3)))
    if sub[0] in BINARY:
        return replace(t, path, (rng.choice(list(BINARY)),) + sub[1:])
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=170, help="generations")
    ap.add_argument("--pop", type=int, default=320)
    ap.add_argument("--n", type=int, default=1500, help="training points")
    ap.add_argument("--elite", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    X, y = make_data(args.n, args.seed)
    parsimony = 2e-4

    pop = []
    for i in range(args.pop):
        tree = random_tree(rng, rng.randint(2, 5), full=(i % 2 == 0))
        name = f"g0_{i}"
        ind = Individual(tree, compile_individual(tree, name, "init"), name)
        evaluate(ind, X, y, parsimony)
        pop.append(ind)

    t0 = time.time()
    best_hist = []
    for gen in range(1, args.steps + 1):
        pop.sort(key=lambda ind: ind.fitness)
        nxt = pop[:args.elite]
        i = 0
        while len(nxt) < args.pop:
            p1 = tournament(rng, pop)
            r = rng.random()
            if r < 0.7:
                p2 = tournament(rng, pop)
                tree = crossover(rng, p1.tree, p2.tree)
                lineage = f"xover({p1.name}, {p2.name})"
            else:
                tree = mutate(rng, p1.tree)
                lineage = f"mut({p1.name})"
            if size(tree) > 90:
                tree = p1.tree
            name = f"g{gen}_{i}"
            i += 1
            ind = Individual(tree, compile_individual(tree, name, lineage), name)
            evaluate(ind, X, y, parsimony)
            nxt.append(ind)
        pop = nxt
        best = min(pop, key=lambda ind: ind.fitness)
        best_hist.append(best.fitness)
        if gen % 20 == 0 or gen == 1:
            sizes = [size(ind.tree) for ind in pop]
            print(f"[{time.time() - t0:6.1f}s] gen {gen:4d}  best={best.fitness:.4f}  "
                  f"mean size={np.mean(sizes):5.1f}  {infix(best.tree)[:70]}", flush=True)

    best = min(pop, key=lambda ind: ind.fitness)
    print(f"done: {args.steps} generations in {time.time() - t0:.1f}s; best fitness {best.fitness:.4f}")
    print("best individual source:")
    print("".join(linecache.getlines(f"<gp:{best.name}>")[:8]), end="")


if __name__ == "__main__":
    main()
