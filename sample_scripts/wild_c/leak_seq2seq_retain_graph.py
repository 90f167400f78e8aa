# expect: leak
# holder: running_loss
# pattern: seq2seq loop does loss.backward(retain_graph=True) and keeps `running_loss += loss` as a tensor for the whole run, so every step's graph and saved activations stay reachable
# step_ms: 12
"""GRU encoder/decoder learning to reverse digit sequences (synthetic).

Written like the "NLP From Scratch: Translation with a Sequence to Sequence
Network" tutorial.  At some point the author hit "Trying to backward through
the graph a second time" and added ``retain_graph=True``.  The real problem is
``running_loss += loss`` (no ``.item()``): ``running_loss`` becomes a tensor
whose autograd graph chains every step's loss together, and because of
``retain_graph=True`` none of the saved activations are freed after backward.
``running_loss`` lives for the whole run (it is used for the final
"average train loss"), so memory climbs every step.

Fix: ``running_loss += loss.item()`` and drop ``retain_graph=True``.
"""
import random
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
torch.manual_seed(0)
random.seed(0)

SOS, EOS, PAD = 10, 11, 12
VOCAB = 13
MAX_LEN = 10


class ReverseDataset(Dataset):
    def __init__(self, n):
        self.pairs = []
        for _ in range(n):
            L = random.randint(4, MAX_LEN)
            src = [random.randint(0, 9) for _ in range(L)]
            self.pairs.append((src, src[::-1]))

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, i):
        return self.pairs[i]


def collate(batch):
    src = torch.full((len(batch), MAX_LEN + 1), PAD, dtype=torch.long)
    tgt = torch.full((len(batch), MAX_LEN + 2), PAD, dtype=torch.long)
    for i, (s, t) in enumerate(batch):
        src[i, : len(s) + 1] = torch.tensor(s + [EOS])
        tgt[i, : len(t) + 2] = torch.tensor([SOS] + t + [EOS])
    return src, tgt


class EncoderRNN(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)

    def forward(self, src):
        out, h = self.gru(self.embedding(src))
        return out, h


class AttnDecoderRNN(nn.Module):
    """Bahdanau-style attention decoder, one token at a time (as in the tutorial)."""

    def __init__(self, vocab, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.Wa = nn.Linear(hidden, hidden)
        self.Ua = nn.Linear(hidden, hidden)
        self.Va = nn.Linear(hidden, 1)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward_step(self, tok, h, enc_out):
        emb = self.embedding(tok)                                   # B,1,H
        query = h.permute(1, 0, 2)                                  # B,1,H
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(enc_out)))  # B,T,1
        weights = torch.softmax(scores.squeeze(2), dim=-1).unsqueeze(1)  # B,1,T
        context = torch.bmm(weights, enc_out)                       # B,1,H
        out, h = self.gru(torch.cat((emb, context), dim=2), h)
        return self.out(out), h

    def forward(self, enc_out, h, target=None, max_len=MAX_LEN + 1):
        B = enc_out.size(0)
        tok = torch.full((B, 1), SOS, dtype=torch.long)
        outputs = []
        for i in range(max_len):
            logits, h = self.forward_step(tok, h, enc_out)
            outputs.append(logits)
            if target is not None:
                tok = target[:, i].unsqueeze(1)  # teacher forcing
            else:
                tok = logits.argmax(-1).detach()
        return torch.cat(outputs, dim=1), h


def train_epoch(loader, encoder, decoder, enc_opt, dec_opt, criterion, state):
    for src, tgt in loader:
        enc_opt.zero_grad()
        dec_opt.zero_grad()

        enc_out, h = encoder(src)
        logits, _ = decoder(enc_out, h, target=tgt[:, 1:])
        loss = criterion(logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1))

        loss.backward(retain_graph=True)
        torch.nn.utils.clip_grad_norm_(encoder.parameters(), 1.0)
        torch.nn.utils.clip_grad_norm_(decoder.parameters(), 1.0)
        enc_opt.step()
        dec_opt.step()

        state["running_loss"] += loss
        state["n"] += 1


@torch.no_grad()
def evaluate(pairs, encoder, decoder):
    """Greedy-decode one sentence at a time, like the tutorial's evaluateRandomly."""
    encoder.eval()
    decoder.eval()
    exact = 0
    for src, tgt in pairs:
        src_t, _ = collate([(src, tgt)])
        enc_out, h = encoder(src_t)
        logits, _ = decoder(enc_out, h)
        decoded = []
        for tok in logits.argmax(-1)[0].tolist():
            if tok == EOS:
                break
            decoded.append(tok)
        exact += decoded == tgt
    encoder.train()
    decoder.train()
    return exact / len(pairs)


def main():
    hidden = 32
    train_loader = DataLoader(ReverseDataset(96), batch_size=8, shuffle=True,
                              collate_fn=collate, num_workers=0)
    val_pairs = ReverseDataset(450).pairs
    encoder, decoder = EncoderRNN(VOCAB, hidden), AttnDecoderRNN(VOCAB, hidden)
    enc_opt = torch.optim.Adam(encoder.parameters(), lr=3e-3)
    dec_opt = torch.optim.Adam(decoder.parameters(), lr=3e-3)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)

    state = {"running_loss": 0.0, "n": 0}
    t0 = time.time()
    epochs = 17
    for epoch in range(epochs):
        train_epoch(train_loader, encoder, decoder, enc_opt, dec_opt, criterion, state)
        acc = evaluate(val_pairs, encoder, decoder)
        avg = state["running_loss"] / state["n"]
        print(f"epoch {epoch+1:2d}  avg train loss so far {avg.item():.3f}  val exact match {acc:.3f}  ({time.time()-t0:.1f}s)")


if __name__ == "__main__":
    main()
