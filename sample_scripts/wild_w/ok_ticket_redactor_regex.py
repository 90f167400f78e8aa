# expect: no_leak
# holder:
# pattern: pure-Python support-ticket anonymiser + log-template miner (no numpy, no torch, no optimizer; one step = one batch of 40 tickets, ~4 ms per step, code in main() + a Redactor and a TemplateMiner class); it looks like an unbounded regex/intern pile-up: for every ticket Redactor builds and re.compile()s a brand-new alternation pattern from that customer's own identifiers (name, e-mail, phone, account id, street), so a never-repeating pattern is compiled per ticket, every token goes through sys.intern(), and the miner keeps templates in a dict; but the compiled patterns only live in re's internal cache, which CPython caps at 512 entries (oldest dropped), interned strings are not kept alive by the interpreter's intern table in 3.11, the miner's OrderedDict is an LRU capped at --max-templates with popitem(last=False), and per-window counters are rebuilt every 1000 tickets, so memory climbs for the first second or two and then stays flat
# step_ms: 4
"""Anonymise support tickets and mine recurring message templates.

Each ticket comes with the CRM record of the customer who wrote it.  The
Redactor removes that customer's own identifiers (exact, case-insensitive
matches of their name parts, e-mail, phone variants, account id and street)
plus generic patterns (any e-mail, phone, card or IBAN-like number).  The
TemplateMiner then masks numbers/hex ids and counts message templates, so
that the support team sees which issues are trending in every window.

Usage:  python ticket_redactor_regex.py [--steps 4000] [--batch 40]
"""
import argparse
import collections
import random
import re
import string
import sys
import time

FIRST = ["anna", "ben", "carla", "dmitri", "elena", "farid", "grace", "hiro", "ines", "jonas",
         "kofi", "lena", "marta", "nico", "olga", "pavel", "quinn", "rosa", "sven", "tara"]
LAST = ["schmidt", "okafor", "garcia", "novak", "tanaka", "rossi", "dubois", "kowalski",
        "andersen", "silva", "nguyen", "murphy", "cohen", "petrov", "haddad", "larsen"]
STREETS = ["maple", "harbour", "station", "mill", "church", "linden", "park", "bridge", "king"]
ISSUES = [
    "my order {order} never arrived, tracking says delivered on {date}",
    "I was charged twice for order {order}, card ending {card4}",
    "cannot log in, reset link for {email} expired after {n} minutes",
    "please change the delivery address to {street} street {house}",
    "the app crashes when I open invoice {hexid} on version {ver}",
    "refund for {order} still pending after {n} days, call me at {phone}",
    "{first} here, my account {acct} was locked after {n} attempts",
    "subscription renewal failed with error {errcode}, IBAN {iban}",
    "wrong item in package {order}: got size {size} instead of {size2}",
    "hi this is {first} {last}, the voucher {voucher} is not accepted",
]
FILLER = ["thanks", "urgent", "again", "please", "asap", "still", "waiting", "help", "hello",
          "regards", "already", "tried", "twice", "today", "yesterday", "!!", "?"]

GENERIC = [
    (re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+"), "<EMAIL>"),
    (re.compile(r"\+?\d[\d ()-]{7,}\d"), "<PHONE>"),
    (re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,5}\b"), "<IBAN>"),
    (re.compile(r"\b(?:\d[ -]?){13,16}\b"), "<CARD>"),
]
MASKS = [(re.compile(r"\b[0-9a-f]{8,}\b"), "<HEX>"), (re.compile(r"\d+"), "<NUM>")]


class TicketSource:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.n = 0

    def customer(self):
        r = self.rng
        first, last = r.choice(FIRST), r.choice(LAST)
        phone = f"+49 {r.randint(150, 179)} {r.randint(1000000, 9999999)}"
        return {
            "first": first, "last": last,
            "email": f"{first}.{last}{r.randint(1, 999)}@{r.choice(['mail', 'web', 'post'])}.example",
            "phone": phone, "phone_compact": phone.replace(" ", ""),
            "acct": f"AC-{r.randint(10 ** 7, 10 ** 8 - 1)}",
            "street": f"{r.choice(STREETS)} street {r.randint(1, 200)}",
        }

    def ticket(self):
        r = self.rng
        cust = self.customer()
        slots = {
            **cust,
            "order": f"#{r.randint(10 ** 6, 10 ** 7)}", "date": f"2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
            "card4": f"{r.randint(0, 9999):04d}", "n": r.randint(2, 90),
            "hexid": "".join(r.choice("0123456789abcdef") for _ in range(12)),
            "ver": f"{r.randint(1, 9)}.{r.randint(0, 20)}.{r.randint(0, 9)}",
            "house": r.randint(1, 200), "errcode": f"E{r.randint(100, 999)}",
            "iban": "DE" + "".join(r.choice(string.digits) for _ in range(20)),
            "size": r.choice("SMLX"), "size2": r.choice("SMLX"),
            "voucher": "".join(r.choice(string.ascii_uppercase + string.digits) for _ in range(10)),
        }
        parts = [r.choice(ISSUES).format(**slots) for _ in range(r.randint(1, 3))]
        parts += r.choices(FILLER, k=r.randint(0, 5))
        r.shuffle(parts)
        self.n += 1
        text = " ".join(parts)
        if r.random() < 0.5:
            text = f"{cust['first'].title()} {cust['last'].title()} wrote: " + text
        return {"id": self.n, "customer": cust, "text": text}


class Redactor:
    def __init__(self):
        self.n_hits = 0

    def _customer_pattern(self, cust):
        idents = {cust["first"], cust["last"], cust["email"], cust["phone"], cust["phone_compact"],
                  cust["acct"], cust["street"]}
        alts = sorted((re.escape(s) for s in idents if len(s) > 2), key=len, reverse=True)
        return re.compile("|".join(alts), re.IGNORECASE)

    def __call__(self, ticket):
        rx = self._customer_pattern(ticket["customer"])
        text, k = rx.subn("<PII>", ticket["text"])
        self.n_hits += k
        for gen_rx, repl in GENERIC:
            text = gen_rx.sub(repl, text)
        return text


class TemplateMiner:
    def __init__(self, max_templates):
        self.max_templates = max_templates
        self.templates = collections.OrderedDict()   # template -> [count, example]
        self.window = collections.Counter()

    def add(self, text):
        for rx, repl in MASKS:
            text = rx.sub(repl, text)
        toks = [sys.intern(t) for t in text.lower().split()]
        key = " ".join(toks[:14])
        entry = self.templates.get(key)
        if entry is None:
            self.templates[key] = [1, text[:160]]
            if len(self.templates) > self.max_templates:
                self.templates.popitem(last=False)
        else:
            entry[0] += 1
            self.templates.move_to_end(key)
        self.window[key] += 1

    def roll_window(self):
        top = self.window.most_common(3)
        self.window = collections.Counter()
        return top


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=4000, help="batches of tickets")
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--max-templates", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    src = TicketSource(args.seed)
    redactor = Redactor()
    miner = TemplateMiner(args.max_templates)
    leaked = 0
    t0 = time.time()
    processed = 0
    for step in range(args.steps):
        for _ in range(args.batch):
            ticket = src.ticket()
            clean = redactor(ticket)
            if ticket["customer"]["email"] in clean:
                leaked += 1
            miner.add(clean)
            processed += 1
            if processed % 1000 == 0:
                top = miner.roll_window()
        if step % 750 == 0:
            print(f"[{time.time() - t0:6.1f}s] step {step:5d}  tickets={processed:7d}  "
                  f"redactions={redactor.n_hits:8d}  templates={len(miner.templates):5d}  "
                  f"leaked={leaked}  top={top[0][1] if processed >= 1000 else 0}", flush=True)
    print(f"processed {processed} tickets in {time.time() - t0:.1f}s; "
          f"{redactor.n_hits} identifier matches; {len(miner.templates)} templates kept")


if __name__ == "__main__":
    main()
