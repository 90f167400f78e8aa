# expect: leak
# holder: search_trees|game_records
# pattern: pure-Python MCTS self-play (no torch optimizer); nodes have parent pointers (reference cycles) and every move's search root is appended to a global list for "analysis", so whole trees stay reachable
# step_ms: 8
"""UCT self-play on Connect-Four (6x7), pure Python.

Each move builds a fresh search tree of ``Node`` objects (children dict + parent
pointer + a copy of the board). Dropping the tree would be fine (gc collects the
cycles), but the root of every search is stored in ``search_trees`` together
with the move so that visit statistics can be "analysed later". All trees of all
games therefore stay alive.
Fix: store only ``{move: child.visits}`` for the root, not the Node itself.
"""
import math
import random
import time

random.seed(4)
ROWS, COLS = 6, 7
SIMS_PER_MOVE = 160


def legal_moves(board):
    return [c for c in range(COLS) if board[0][c] == 0]


def play(board, col, player):
    nb = [row[:] for row in board]
    for r in range(ROWS - 1, -1, -1):
        if nb[r][col] == 0:
            nb[r][col] = player
            return nb, r
    raise ValueError("column full")


def is_win(board, r, c):
    p = board[r][c]
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        n = 1
        for s in (1, -1):
            rr, cc = r + s * dr, c + s * dc
            while 0 <= rr < ROWS and 0 <= cc < COLS and board[rr][cc] == p:
                n += 1
                rr += s * dr
                cc += s * dc
        if n >= 4:
            return True
    return False


class Node:
    __slots__ = ("board", "player", "parent", "move", "children", "untried", "visits", "wins", "terminal")

    def __init__(self, board, player, parent=None, move=None, terminal=False):
        self.board = board
        self.player = player          # player to move at this node
        self.parent = parent
        self.move = move
        self.children = {}
        self.untried = [] if terminal else legal_moves(board)
        self.visits = 0
        self.wins = 0.0
        self.terminal = terminal

    def ucb_child(self, c=1.4):
        logn = math.log(self.visits)
        return max(self.children.values(),
                   key=lambda ch: ch.wins / ch.visits + c * math.sqrt(logn / ch.visits))


def rollout(board, player):
    board = [row[:] for row in board]
    while True:
        moves = legal_moves(board)
        if not moves:
            return 0
        col = random.choice(moves)
        for r in range(ROWS - 1, -1, -1):
            if board[r][col] == 0:
                board[r][col] = player
                break
        if is_win(board, r, col):
            return player
        player = -player


def mcts(board, player, n_sims):
    root = Node(board, player)
    for _ in range(n_sims):
        node = root
        while not node.untried and node.children:
            node = node.ucb_child()
        if node.untried:
            col = node.untried.pop(random.randrange(len(node.untried)))
            nb, r = play(node.board, col, node.player)
            won = is_win(nb, r, col)
            child = Node(nb, -node.player, parent=node, move=col, terminal=won or not legal_moves(nb))
            node.children[col] = child
            node = child
            winner = node.parent.player if won else (0 if node.terminal else rollout(nb, node.player))
        else:
            winner = 0 if not node.terminal else node.parent.player
        while node is not None:
            node.visits += 1
            if node.parent is not None and winner == node.parent.player:
                node.wins += 1
            elif winner == 0:
                node.wins += 0.5
            node = node.parent
    best = max(root.children.values(), key=lambda ch: ch.visits)
    return best.move, root


search_trees = []
results = {1: 0, -1: 0, 0: 0}
t0 = time.time()
last_print = t0
n_moves = 0
game = 0
while time.time() - t0 < 14.0:
    board = [[0] * COLS for _ in range(ROWS)]
    player = 1
    winner = 0
    while legal_moves(board):
        move, root = mcts(board, player, SIMS_PER_MOVE)
        search_trees.append((game, n_moves, move, root))
        board, r = play(board, move, player)
        n_moves += 1
        if is_win(board, r, move):
            winner = player
            break
        player = -player
    results[winner] += 1
    game += 1
    if time.time() - last_print > 4:
        last_print = time.time()
        print(f"game {game}: first-player wins {results[1]}, second {results[-1]}, draws {results[0]} ({time.time() - t0:.1f}s)")

print(f"{game} games, {n_moves} moves, {1000 * (time.time() - t0) / n_moves:.0f} ms/move, {len(search_trees)} trees kept")
