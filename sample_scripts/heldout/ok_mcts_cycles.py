# expect: no_leak
# pattern: per-move search trees of parent<->child reference cycles, freed by gc (no optimizer)
# step_ms: 10
"""Monte-Carlo tree search for Connect-Four-ish play on a 6x7 board, with a
tiny value network as the leaf evaluator (inference only, no training).

Every move builds a fresh search tree: ``Node`` objects point to their parent
and their children, so each tree is one big reference cycle. When the move
is played the root is dropped; reference counting alone cannot free a cycle,
but the cyclic garbage collector does, every few thousand allocations.
Memory wobbles (trees pile up between collections) but does not grow.
"""

import argparse
import math
import random

import torch
import torch.nn as nn

ROWS, COLS = 6, 7


class Node:
    __slots__ = ("parent", "children", "move", "visits", "value", "board", "player", "__weakref__")

    def __init__(self, board, player, parent=None, move=None):
        self.board, self.player, self.parent, self.move = board, player, parent, move
        self.children = []
        self.visits = 0
        self.value = 0.0

    def ucb(self, c=1.4):
        if self.visits == 0:
            return float("inf")
        return self.value / self.visits + c * math.sqrt(math.log(self.parent.visits) / self.visits)


def legal_moves(board):
    return [c for c in range(COLS) if board[0][c] == 0]


def play(board, col, player):
    new = [row[:] for row in board]
    for r in range(ROWS - 1, -1, -1):
        if new[r][col] == 0:
            new[r][col] = player
            break
    return new


def board_tensor(boards):
    return torch.tensor(boards, dtype=torch.float32).view(len(boards), -1)


class MCTS:
    def __init__(self, value_net, sims, rng):
        self.net, self.sims, self.rng = value_net, sims, rng

    def search(self, board, player):
        root = Node(board, player)
        for _ in range(self.sims):
            node = root
            while node.children:
                node = max(node.children, key=Node.ucb)
            moves = legal_moves(node.board)
            if moves and node.visits > 0:
                for m in moves:
                    node.children.append(
                        Node(play(node.board, m, node.player), -node.player, node, m)
                    )
                node = self.rng.choice(node.children)
            with torch.no_grad():
                v = float(torch.tanh(self.net(board_tensor([node.board]))).item()) * node.player
            while node is not None:
                node.visits += 1
                node.value += v * -node.player
                node = node.parent
        best = max(root.children, key=lambda n: n.visits) if root.children else None
        return best.move if best else self.rng.choice(legal_moves(board))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", type=int, default=40)
    ap.add_argument("--sims", type=int, default=120)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    net = nn.Sequential(nn.Linear(ROWS * COLS, 64), nn.ReLU(), nn.Linear(64, 1)).eval()
    mcts = MCTS(net, args.sims, rng)
    total_moves = 0
    for g in range(args.games):
        board = [[0] * COLS for _ in range(ROWS)]
        player = 1
        while legal_moves(board):
            board = play(board, mcts.search(board, player), player)
            player = -player
            total_moves += 1
        print(f"game {g:3d} finished, {total_moves} moves so far")


if __name__ == "__main__":
    main()
