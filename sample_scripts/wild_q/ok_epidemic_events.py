# expect: no_leak
# pattern: event-driven agent-based SEIRS epidemic on a synthetic town (households, workplaces/schools, random community contacts; NumPy + heapq, no torch); pending events (infection attempts, incubation ends, recoveries, waning of immunity) live in one heapq list and every infectious agent's contact set sits in an active_contacts dict until recovery; the heap and dict track the number of exposed/infectious/recently-recovered agents, so memory climbs through the first epidemic wave (roughly the first 40% of the run), and afterwards the damped seasonal waves only reuse that space: every pending event refers to one of the fixed set of agents, so the queue is bounded by a small multiple of the population
# step_ms: 46
"""Event-driven SEIRS simulation of a seasonal respiratory virus in a town.

Agents live in households (1-6 people), most of them go to a workplace or
school, and everybody meets a few random people in the community each
day.  Infection is simulated with a discrete-event queue: when an agent
becomes infectious we draw, for each contact, whether and when it will be
infected during the infectious period; exposed agents become infectious
after a gamma-distributed incubation; immunity wanes after ~8 months.
Transmissibility follows a winter-peaked seasonal cycle and a trickle of
imported cases seeds each season.  Daily incidence and prevalence are
reported, along with the attack rate per age band.
"""
import argparse
import heapq
import itertools
import time

import numpy as np

S, E, I, R = 0, 1, 2, 3
EV_EXPOSE, EV_INFECTIOUS, EV_RECOVER, EV_WANE = range(4)


class Town:
    def __init__(self, n, rng):
        self.n = n
        sizes = rng.choice([1, 2, 3, 4, 5, 6], size=n, p=[0.28, 0.33, 0.16, 0.14, 0.06, 0.03])
        sizes = sizes[np.cumsum(sizes) <= n]
        hh_of = np.repeat(np.arange(len(sizes)), sizes)
        hh_of = np.concatenate([hh_of, np.arange(len(sizes), len(sizes) + n - len(hh_of))])
        self.household = hh_of
        order = np.argsort(hh_of, kind="stable")
        self.hh_start = np.searchsorted(hh_of[order], np.arange(hh_of.max() + 2))
        self.hh_members = order
        self.age = rng.choice(4, size=n, p=[0.2, 0.15, 0.45, 0.2])       # child, young, adult, senior
        goes_out = (self.age < 3) & (rng.random(n) < 0.85)
        site_size = np.where(self.age < 2, 25, 12)
        n_sites = n // 12
        self.site = np.where(goes_out, rng.integers(0, n_sites, n) // np.maximum(site_size // 12, 1), -1)
        s_order = np.argsort(self.site, kind="stable")
        s_sorted = self.site[s_order]
        first = np.searchsorted(s_sorted, 0)
        self.site_members = s_order[first:]
        self.site_start = np.searchsorted(s_sorted[first:], np.arange(self.site.max() + 2))

    def contacts(self, i, rng, n_random):
        h = self.household[i]
        hh = self.hh_members[self.hh_start[h]:self.hh_start[h + 1]]
        parts = [hh[hh != i]]
        s = self.site[i]
        if s >= 0:
            members = self.site_members[self.site_start[s]:self.site_start[s + 1]]
            if len(members) > 15:
                members = rng.choice(members, 15, replace=False)
            parts.append(members[members != i])
        parts.append(rng.integers(0, self.n, n_random))
        return np.concatenate(parts).astype(np.int32)


class Epidemic:
    def __init__(self, town, rng, beta_hh=0.065, beta_site=0.016, beta_comm=0.012,
                 inf_days=6.0, wane_days=240.0, seasonal_amp=0.35):
        self.town = town
        self.rng = rng
        self.state = np.zeros(town.n, np.int8)
        self.ever_infected = np.zeros(town.n, np.int32)
        self.betas = (beta_hh, beta_site, beta_comm)
        self.inf_days = inf_days
        self.wane_days = wane_days
        self.seasonal_amp = seasonal_amp
        self.queue = []
        self.active_contacts = {}
        self.seq = itertools.count()
        self.incidence = 0

    def schedule(self, t, kind, agent, src=-1):
        heapq.heappush(self.queue, (t, next(self.seq), kind, agent, src))

    def seasonal(self, t):
        return 1.0 + self.seasonal_amp * np.cos(2 * np.pi * (t - 15) / 365.0)

    def expose(self, t, i, src):
        if self.state[i] != S:
            return
        self.state[i] = E
        self.incidence += 1
        self.ever_infected[i] += 1
        self.schedule(t + self.rng.gamma(4.0, 0.8), EV_INFECTIOUS, i, src)

    def become_infectious(self, t, i):
        self.state[i] = I
        dur = self.rng.gamma(6.0, self.inf_days / 6.0)
        self.schedule(t + dur, EV_RECOVER, i)
        c = self.town.contacts(i, self.rng, n_random=int(self.rng.poisson(8)))
        self.active_contacts[i] = c
        n_hh = int((self.town.household[c] == self.town.household[i]).sum())
        beta = np.full(len(c), self.betas[2])
        beta[:n_hh] = self.betas[0]
        beta[n_hh:len(c) - 8] = self.betas[1]
        p = 1.0 - np.exp(-beta * dur * self.seasonal(t))
        hit = self.rng.random(len(c)) < p
        when = t + self.rng.random(hit.sum()) * dur
        for j, tj in zip(c[hit].tolist(), when.tolist()):
            self.schedule(tj, EV_EXPOSE, j, i)

    def recover(self, t, i):
        self.state[i] = R
        self.active_contacts.pop(i, None)
        self.schedule(t + self.rng.exponential(self.wane_days), EV_WANE, i)

    def run_until(self, t_end):
        q = self.queue
        while q and q[0][0] < t_end:
            t, _, kind, agent, src = heapq.heappop(q)
            if kind == EV_EXPOSE:
                self.expose(t, agent, src)
            elif kind == EV_INFECTIOUS:
                self.become_infectious(t, agent)
            elif kind == EV_RECOVER:
                self.recover(t, agent)
            elif kind == EV_WANE and self.state[agent] == R:
                self.state[agent] = S


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--population", type=int, default=400_000)
    p.add_argument("--days", type=int, default=480)
    p.add_argument("--imports-per-day", type=float, default=1.5)
    p.add_argument("--report-every", type=int, default=40)
    p.add_argument("--seed", type=int, default=11)
    args = p.parse_args()

    rng = np.random.default_rng(args.seed)
    town = Town(args.population, rng)
    epi = Epidemic(town, rng)
    for i in rng.choice(args.population, 20, replace=False):
        epi.expose(0.0, int(i), -1)

    t0 = time.perf_counter()
    daily = []
    for day in range(args.days):
        for i in rng.integers(0, args.population, rng.poisson(args.imports_per_day)):
            epi.expose(day + rng.random(), int(i), -1)
        epi.incidence = 0
        epi.run_until(day + 1.0)
        counts = np.bincount(epi.state, minlength=4)
        daily.append((epi.incidence, counts[I]))
        if (day + 1) % args.report_every == 0:
            inc = np.array(daily[-args.report_every:])
            ms = (time.perf_counter() - t0) * 1000 / (day + 1)
            print(f"day {day + 1:4d}  incidence/day {inc[:, 0].mean():7.1f}  prevalence {counts[I]:6d}  "
                  f"S/E/I/R {counts.tolist()}  queue {len(epi.queue):6d}  {ms:.1f} ms/day", flush=True)

    attack = [np.mean(epi.ever_infected[town.age == a] > 0) for a in range(4)]
    print("ever infected by age band (child, young, adult, senior):", np.round(attack, 3))
    peaks = np.array(daily)[:, 0]
    print(f"peak incidence {peaks.max()} on day {peaks.argmax()}, total infections {int(epi.ever_infected.sum())}")


if __name__ == "__main__":
    main()
