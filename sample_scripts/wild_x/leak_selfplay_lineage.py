# expect: leak
# holder: opponent.parent|PolicySnapshot.parent|league.opponent|parent
# pattern: Connect-Four self-play with 64 vectorised games per iteration (MLP policy, REINFORCE with a hand-written SGD update through torch.autograd.grad, no torch.optim, ~150 ms per iteration, code in main() + League/PolicySnapshot classes); every 3 iterations the learner is frozen into a new PolicySnapshot (deep copy of the 1.2M-parameter net) that becomes the opponent and gets parent=<previous opponent> so that gating can measure the win rate against the generation before; nothing cuts the older links, so league.opponent.parent.parent... is a linked list that keeps every past generation's network (~4.7 MB each) alive for the whole run
# step_ms: 150
"""Connect-Four self-play training.

The learner plays batches of games against a frozen copy of itself.  Every
few iterations the learner is promoted: it is frozen into a new snapshot that
becomes the opponent, and the snapshot remembers its parent generation so the
gating check can report how the new opponent fares against the one it
replaced.
"""
import argparse
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS, COLS = 6, 7


def win_kernels():
    k = torch.zeros(4, 1, 4, 4)
    k[0, 0, 0, :] = 1          # horizontal
    k[1, 0, :, 0] = 1          # vertical
    k[2, 0] = torch.eye(4)     # diagonal
    k[3, 0] = torch.eye(4).flip(1)  # anti-diagonal
    return k


KERNELS = win_kernels()


def has_four(plane):
    """plane: (G, 6, 7) float -> (G,) bool."""
    x = F.pad(plane.unsqueeze(1), (0, 3, 0, 3))
    return (F.conv2d(x, KERNELS) >= 3.5).flatten(1).any(1)


class PolicyNet(nn.Module):
    def __init__(self, hidden=1024):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2 * ROWS * COLS, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, COLS),
        )

    def forward(self, planes):
        return self.net(planes.flatten(1))


class PolicySnapshot:
    def __init__(self, net, generation, parent=None):
        self.net = copy.deepcopy(net).eval()
        for p in self.net.parameters():
            p.requires_grad_(False)
        self.generation = generation
        self.parent = parent
        self.record = {"wins": 0, "games": 0}


def play_batch(learner, opponent, n_games, learner_first, collect_logp=True):
    """Plays n_games in lockstep; returns learner's summed log-probs and rewards."""
    board = torch.zeros(n_games, 2, ROWS, COLS)  # plane 0: first player, plane 1: second player
    heights = torch.zeros(n_games, COLS, dtype=torch.long)
    done = torch.zeros(n_games, dtype=torch.bool)
    reward = torch.zeros(n_games)
    logp_sum = torch.zeros(n_games)
    rows = torch.arange(n_games)
    for ply in range(ROWS * COLS):
        mover = ply % 2
        is_learner = (mover == 0) == learner_first
        persp = board.clone() if mover == 0 else board.flip(1)
        legal = heights < ROWS
        if is_learner:
            logits = learner(persp)
        else:
            with torch.no_grad():
                logits = opponent(persp)
        logits = logits.masked_fill(~legal, -1e9)
        dist = torch.distributions.Categorical(logits=logits)
        col = dist.sample()
        if is_learner and collect_logp:
            logp_sum = logp_sum + dist.log_prob(col) * (~done)
        row = ROWS - 1 - heights[rows, col]
        active = ~done
        board[rows[active], mover, row[active], col[active]] = 1.0
        heights[rows[active], col[active]] += 1
        won = has_four(board[:, mover]) & active
        reward = torch.where(won, torch.tensor(1.0 if is_learner else -1.0), reward)
        done = done | won | (heights.sum(1) >= ROWS * COLS)
        if bool(done.all()):
            break
    return logp_sum, reward


class League:
    def __init__(self, learner, lr):
        self.learner = learner
        self.lr = lr
        self.generation = 0
        self.opponent = PolicySnapshot(learner, generation=0)
        self.baseline = 0.0

    def train_iteration(self, n_games, it):
        params = [p for p in self.learner.parameters()]
        logp, reward = play_batch(self.learner, self.opponent.net, n_games, learner_first=(it % 2 == 0))
        adv = reward - self.baseline
        self.baseline = 0.95 * self.baseline + 0.05 * float(reward.mean())
        loss = -(adv * logp).mean()
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            gnorm = torch.sqrt(sum((g * g).sum() for g in grads))
            scale = self.lr / max(1.0, float(gnorm))
            for p, g in zip(params, grads):
                p.sub_(scale * g)
        self.opponent.record["games"] += n_games
        self.opponent.record["wins"] += int((reward < 0).sum())
        return float(reward.mean())

    def promote(self):
        self.generation += 1
        self.opponent = PolicySnapshot(self.learner, self.generation, parent=self.opponent)

    def gate(self, n_games=32):
        """Win rate of the current opponent against the generation it replaced."""
        prev = self.opponent.parent
        if prev is None:
            return None
        with torch.no_grad():
            _, r = play_batch(self.opponent.net, prev.net, n_games, learner_first=True, collect_logp=False)
        return float((r > 0).float().mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=130, help="self-play iterations")
    ap.add_argument("--games", type=int, default=64)
    ap.add_argument("--promote-every", type=int, default=3)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    league = League(PolicyNet(), lr=0.05)
    recent = []
    t0 = time.time()
    for it in range(1, args.steps + 1):
        recent.append(league.train_iteration(args.games, it))
        if it % args.promote_every == 0:
            league.promote()
            if league.generation % 5 == 0:
                wr = league.gate()
                print(f"iter {it:4d}  gen {league.generation:3d}  mean reward {sum(recent) / len(recent):+.3f}  "
                      f"gate win-rate {wr:.2f}  {time.time() - t0:.1f}s", flush=True)
                recent.clear()
    print(f"done: {league.generation} generations")


if __name__ == "__main__":
    main()
