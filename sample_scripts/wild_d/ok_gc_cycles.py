# expect: no_leak
# holder: none
# pattern: MCTS self-play builds a fresh search tree with parent<->child reference cycles every move and runs with automatic gc disabled, but calls gc.collect() every 25 moves, so garbage is reclaimed (bounded sawtooth)
# step_ms: 20
"""Monte-Carlo tree search self-play for Connect Four (bitboards, pure Python).

Every move runs a fixed number of UCT simulations from a *new* tree.  Nodes
point to their parent and the parent holds its children in a dict, so each
finished tree is a big reference cycle that plain reference counting cannot
free.  For speed the automatic cyclic collector is switched off during
self-play (``gc.disable()``), which looks like a recipe for unbounded growth,
but the loop calls ``gc.collect()`` every ``GC_EVERY`` moves.  Memory is a
sawtooth with a fixed ceiling.
"""
import gc
import math
import random
import time

import numpy as np

WIDTH, HEIGHT = 7, 6
H1 = HEIGHT + 1
SIMS_PER_MOVE = 400
N_MOVES = 950
GC_EVERY = 25
BOTTOM = sum(1 << (c * H1) for c in range(WIDTH))
TOP = sum(1 << (c * H1 + HEIGHT - 1) for c in range(WIDTH))


def is_win(pos):
    for shift in (1, H1, H1 - 1, H1 + 1):
        m = pos & (pos >> shift)
        if m & (m >> (2 * shift)):
            return True
    return False


def legal_moves(mask):
    return [c for c in range(WIDTH) if not mask & (1 << (c * H1 + HEIGHT - 1))]


def play(pos, mask, col):
    """Return (new position for the player who just moved, new mask)."""
    new_mask = mask | (mask + (1 << (col * H1)))
    return pos ^ mask, new_mask  # opponent's stones become 'current'


class Node:
    def __init__(self, pos, mask, parent=None, move=None):
        self.pos, self.mask = pos, mask  # pos = stones of the player to move
        self.parent = parent
        self.move = move
        self.children = {}
        self.untried = legal_moves(mask)
        random.shuffle(self.untried)
        self.visits = 0
        self.value = 0.0
        self.child_q = np.zeros(WIDTH)  # per-move running values, handy for analysis

    def terminal_value(self):
        # the player who just moved owns (pos ^ mask)
        if is_win(self.pos ^ self.mask):
            return 1.0
        if self.mask & TOP == TOP:
            return 0.5
        return None

    def expand(self):
        col = self.untried.pop()
        pos, mask = play(self.pos, self.mask, col)
        child = Node(pos, mask, parent=self, move=col)
        self.children[col] = child
        return child

    def best_child(self, c=1.4):
        logn = math.log(self.visits)
        return max(self.children.values(),
                   key=lambda ch: ch.value / ch.visits + c * math.sqrt(logn / ch.visits))


def rollout(pos, mask, rng):
    """Random playout; returns 1 if the player who moved *into* this state wins."""
    sign = 1
    while True:
        if is_win(pos ^ mask):
            return 1.0 if sign == 1 else 0.0
        moves = legal_moves(mask)
        if not moves:
            return 0.5
        pos, mask = play(pos, mask, rng.choice(moves))
        sign = -sign


def mcts(pos, mask, n_sims, rng):
    root = Node(pos, mask)
    for _ in range(n_sims):
        node = root
        while not node.untried and node.children:
            node = node.best_child()
        tv = node.terminal_value()
        if tv is None and node.untried:
            node = node.expand()
            tv = node.terminal_value()
        result = tv if tv is not None else rollout(node.pos, node.mask, rng)
        while node is not None:
            node.visits += 1
            node.value += result
            if node.parent is not None:
                node.parent.child_q[node.move] = node.value / node.visits
            result = 1.0 - result
            node = node.parent
    best = max(root.children.values(), key=lambda ch: ch.visits)
    return best.move, root


def main():
    rng = random.Random(0)
    random.seed(1)
    gc.disable()  # the cyclic GC pauses are noticeable in the search loop
    pos = mask = 0
    games, results, freed = 0, {"first": 0, "second": 0, "draw": 0}, 0
    ply = 0
    t0 = time.time()
    for move_no in range(1, N_MOVES + 1):
        col, root = mcts(pos, mask, SIMS_PER_MOVE, rng)
        pos, mask = play(pos, mask, col)
        ply += 1
        if is_win(pos ^ mask) or mask & TOP == TOP:
            if is_win(pos ^ mask):
                results["first" if ply % 2 == 1 else "second"] += 1
            else:
                results["draw"] += 1
            games += 1
            pos = mask = 0
            ply = 0
        if move_no % GC_EVERY == 0:
            freed += gc.collect()
        if move_no % 220 == 0:
            print(f"[{time.time() - t0:5.1f}s] move {move_no:4d}  games={games} {results}  "
                  f"root visits={root.visits}  objects freed by gc={freed}")
    gc.enable()


if __name__ == "__main__":
    main()
