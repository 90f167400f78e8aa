# expect: no_leak
# holder:
# pattern: self-play training for 7x7 four-in-a-row (256 vectorised games per iteration, policy-value MLP, one-ply lookahead targets, torch.optim.Adam, ~20 ms per self-play ply or training minibatch, ~2 s per iteration, code in main() + a SelfPlayTrainer class); looks suspicious twice: every iteration's positions, 8-fold symmetry augmentations and lookahead targets pile up in self.buffer (tens of MB, a tall sawtooth), and each promoted snapshot is built with parent=<previous best>; but the buffer is replaced by a fresh list at the start of every iteration and the promotion cuts the grandparent link (prev.parent = None), so at most two snapshots and one iteration of positions are alive and memory saw-tooths around a flat baseline
# step_ms: 20
"""Self-play trainer for four-in-a-row on a 7x7 board.

Each iteration plays a batch of games with one-ply lookahead move selection
(child positions are scored by the value head), stores every position with its
8 dihedral symmetries, trains the network on that iteration's data, and then
promotes the network to "best" if it beats the previous best in a short match.
"""
import argparse
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

N = 7
CELLS = N * N


def _kernels():
    k = torch.zeros(4, 1, 4, 4)
    k[0, 0, 0, :] = 1
    k[1, 0, :, 0] = 1
    k[2, 0] = torch.eye(4)
    k[3, 0] = torch.eye(4).flip(1)
    return k


KERNELS = _kernels()


def four_in_row(plane):
    x = F.pad(plane.unsqueeze(1), (0, 3, 0, 3))
    return (F.conv2d(x, KERNELS) >= 3.5).flatten(1).any(1)


class PVNet(nn.Module):
    def __init__(self, hidden=192):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(2 * CELLS, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.pi = nn.Linear(hidden, CELLS)
        self.v = nn.Linear(hidden, 1)

    def forward(self, planes):
        h = self.trunk(planes.flatten(1))
        return self.pi(h), torch.tanh(self.v(h)).squeeze(1)


class Snapshot:
    def __init__(self, net, generation, parent=None):
        self.net = copy.deepcopy(net).eval()
        self.generation = generation
        self.parent = parent


def symmetries(x):
    """x: (B, C, N, N) -> list of the 8 dihedral transforms."""
    out = []
    for k in range(4):
        r = torch.rot90(x, k, dims=(2, 3))
        out.append(r)
        out.append(r.flip(3))
    return out


class SelfPlayTrainer:
    def __init__(self, games, lr=1e-3, temperature=0.25):
        self.net = PVNet()
        self.opt = torch.optim.Adam(self.net.parameters(), lr=lr)
        self.games = games
        self.tau = temperature
        self.best = Snapshot(self.net, 0)
        self.buffer = []

    @torch.no_grad()
    def lookahead_targets(self, net, boards, legal):
        g = boards.shape[0]
        children = boards.unsqueeze(1).repeat(1, CELLS, 1, 1, 1)  # (G, 49, 2, N, N)
        idx = torch.arange(CELLS)
        children[:, idx, 0, idx // N, idx % N] = 1.0
        wins = four_in_row(children[:, :, 0].reshape(-1, N, N)).view(g, CELLS)
        _, v_child = net(children.flip(2).reshape(-1, 2, N, N))  # opponent to move in the child
        score = torch.where(wins, torch.tensor(1.0), -v_child.view(g, CELLS))
        return F.softmax((score / self.tau).masked_fill(~legal, -1e9), dim=1)

    def self_play(self):
        g = self.games
        boards = torch.zeros(g, 2, N, N)
        done = torch.zeros(g, dtype=torch.bool)
        records = []  # (boards, targets, mover sign, alive mask)
        outcome = torch.zeros(g)  # +1 first player won, -1 second, 0 draw
        for ply in range(CELLS):
            legal = (boards.sum(1) == 0).flatten(1)
            pi = self.lookahead_targets(self.net, boards, legal)
            move = torch.multinomial(pi, 1).squeeze(1)
            records.append((boards.clone(), pi, 1.0 if ply % 2 == 0 else -1.0, ~done))
            alive = ~done
            rows = torch.nonzero(alive).squeeze(1)
            boards[rows, 0, move[rows] // N, move[rows] % N] = 1.0
            won = four_in_row(boards[:, 0]) & alive
            outcome = torch.where(won, torch.tensor(1.0 if ply % 2 == 0 else -1.0), outcome)
            done = done | won | (boards.sum((1, 2, 3)) >= CELLS)
            boards = boards.flip(1)  # switch perspective to the next mover
            if bool(done.all()):
                break
        for b, pi, sign, alive in records:
            z = (outcome * sign)[alive]
            b, pi = b[alive], pi[alive].view(-1, 1, N, N)
            for bs, ps in zip(symmetries(b), symmetries(pi)):
                self.buffer.append((bs, ps.flatten(1), z))
        return ply + 1

    def train_epoch(self, batch=512):
        X = torch.cat([b for b, _, _ in self.buffer])
        P = torch.cat([p for _, p, _ in self.buffer])
        Z = torch.cat([z for _, _, z in self.buffer])
        perm = torch.randperm(len(X))
        total, n = 0.0, 0
        for i in range(0, len(X), batch):
            j = perm[i:i + batch]
            logits, v = self.net(X[j])
            loss = -(P[j] * F.log_softmax(logits, 1)).sum(1).mean() + F.mse_loss(v, Z[j])
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            total += loss.item()
            n += 1
        return total / max(n, 1), len(X)

    @torch.no_grad()
    def match(self, a, b, games=64):
        boards = torch.zeros(games, 2, N, N)
        done = torch.zeros(games, dtype=torch.bool)
        result = torch.zeros(games)
        for ply in range(CELLS):
            net = a if ply % 2 == 0 else b
            legal = (boards.sum(1) == 0).flatten(1)
            logits, _ = net(boards)
            move = torch.multinomial(F.softmax(logits.masked_fill(~legal, -1e9), 1), 1).squeeze(1)
            rows = torch.nonzero(~done).squeeze(1)
            boards[rows, 0, move[rows] // N, move[rows] % N] = 1.0
            won = four_in_row(boards[:, 0]) & ~done
            result = torch.where(won, torch.tensor(1.0 if ply % 2 == 0 else -1.0), result)
            done = done | won | (boards.sum((1, 2, 3)) >= CELLS)
            boards = boards.flip(1)
            if bool(done.all()):
                break
        return float((result > 0).float().mean())

    def iteration(self, it):
        self.buffer = []  # positions from the previous iteration are not reused
        plies = self.self_play()
        loss, n = self.train_epoch()
        wr = self.match(self.net, self.best.net)
        if wr >= 0.55:
            prev = self.best
            self.best = Snapshot(self.net, it, parent=prev)
            prev.parent = None  # gating only ever looks one generation back
        return plies, loss, n, wr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", "--steps", dest="iterations", type=int, default=12)
    ap.add_argument("--games", type=int, default=256)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    trainer = SelfPlayTrainer(args.games)
    t0 = time.time()
    for it in range(1, args.iterations + 1):
        plies, loss, n, wr = trainer.iteration(it)
        print(f"iter {it:3d}  plies {plies:2d}  positions {n:6d}  loss {loss:.3f}  "
              f"win-rate vs best {wr:.2f}  best gen {trainer.best.generation}  {time.time() - t0:.1f}s",
              flush=True)


if __name__ == "__main__":
    main()
