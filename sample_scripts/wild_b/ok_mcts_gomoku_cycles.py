# expect: no_leak
# holder: none
# pattern: MCTS self-play builds a new tree of nodes with parent pointers (reference cycles) and a __del__ for bookkeeping for every move; the tree is dropped after the move and the cyclic garbage collector frees it
# step_ms: 25
"""Gomoku-lite (8x8 board, four in a row) self-play with plain UCT, pure Python.

Every move creates a fresh search tree. Nodes point to their parent and their
children (cycles) and define ``__del__`` to keep a live-node counter for a debug
print. After the move only the chosen column is kept, the tree becomes cyclic
garbage and Python's gc reclaims it (``__del__`` does not block collection since
PEP 442). Memory goes up and down a little per move but stays flat overall.
"""
import gc
import math
import random
import time

random.seed(12)
N = 8
WIN = 4
DIRS = ((0, 1), (1, 0), (1, 1), (1, -1))


def winner_at(board, pos):
    r, c = divmod(pos, N)
    p = board[pos]
    for dr, dc in DIRS:
        cnt = 1
        for s in (1, -1):
            rr, cc = r + s * dr, c + s * dc
            while 0 <= rr < N and 0 <= cc < N and board[rr * N + cc] == p:
                cnt += 1
                rr += s * dr
                cc += s * dc
        if cnt >= WIN:
            return True
    return False


class TreeNode:
    live = 0

    def __init__(self, parent, move, to_play, moves_left, board):
        self.parent = parent
        self.board = board          # snapshot of the position, handy for debugging
        self.move = move
        self.to_play = to_play
        self.children = []
        self.untried = moves_left
        self.n = 0
        self.w = 0.0
        TreeNode.live += 1

    def __del__(self):
        TreeNode.live -= 1

    def select(self):
        k = 2.0 * math.log(self.n)
        return max(self.children, key=lambda c: c.w / c.n + math.sqrt(k / c.n))


def random_playout(board, to_play, empties):
    board = board[:]
    empties = empties[:]
    random.shuffle(empties)
    for pos in empties:
        board[pos] = to_play
        if winner_at(board, pos):
            return to_play
        to_play = -to_play
    return 0


def search(board, to_play, n_sims):
    empties = [i for i in range(N * N) if board[i] == 0]
    root = TreeNode(None, None, to_play, empties[:], board[:])
    for _ in range(n_sims):
        node = root
        while not node.untried and node.children:
            node = node.select()
        b = node.board[:]
        result = None
        if node.untried:
            mv = node.untried.pop(random.randrange(len(node.untried)))
            b[mv] = node.to_play
            if winner_at(b, mv):
                result = node.to_play
            child = TreeNode(node, mv, -node.to_play, [] if result else [i for i in range(N * N) if b[i] == 0], b[:])
            node.children.append(child)
            node = child
        if result is None:
            left = [i for i in range(N * N) if b[i] == 0]
            result = random_playout(b, node.to_play, left) if left else 0
        while node is not None:
            node.n += 1
            if node.parent is not None:
                node.w += 1.0 if result == node.parent.to_play else (0.5 if result == 0 else 0.0)
            node = node.parent
    return max(root.children, key=lambda c: c.n).move


t0 = time.time()
last = t0
moves = 0
games = 0
tally = {1: 0, -1: 0, 0: 0}
while time.time() - t0 < 17.0:
    board = [0] * (N * N)
    to_play, result = 1, 0
    for _ in range(N * N):
        mv = search(board, to_play, n_sims=500)
        board[mv] = to_play
        moves += 1
        if winner_at(board, mv):
            result = to_play
            break
        to_play = -to_play
    tally[result] += 1
    games += 1
    if time.time() - last > 4:
        last = time.time()
        print(f"game {games}: tally {tally}, live nodes {TreeNode.live}, gc counts {gc.get_count()} ({last - t0:.1f}s)")

print(f"{games} games, {moves} moves, {1000 * (time.time() - t0) / moves:.0f} ms/move")
