# expect: leak
# holder: callbacks|probe_outputs
# pattern: a Trainer callback keeps each step's probe outputs with their autograd graph
"""Fine-tuning a tiny BERT classifier with the Hugging Face Trainer, plus a callback
that probes the model on a fixed batch every step to track calibration drift.

The callback runs the forward pass without ``torch.no_grad()`` and keeps the
logits: every probe keeps its autograd graph (the model's activations) alive. The
callback is created inline in ``Trainer(callbacks=[...])``. Fix: probe under
``torch.no_grad()`` and keep ``logits.softmax(-1).max(-1).values.mean().item()``.
``--fixed`` runs the fixed callback.
"""

import argparse

import torch
from torch.utils.data import Dataset
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)


class Synthetic(Dataset):
    def __init__(self, n, vocab, seq, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)
        self.labels = (self.ids[:, 0] % 2).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


class CalibrationProbe(TrainerCallback):
    def __init__(self, batch, fixed):
        self.batch = batch
        self.fixed = fixed
        self.probe_outputs = []

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if self.fixed:
            with torch.no_grad():
                logits = model(input_ids=self.batch).logits
            self.probe_outputs.append(logits.softmax(-1).max(-1).values.mean().item())
        else:
            logits = model(input_ids=self.batch).logits  # BUG: graph kept with the logits
            self.probe_outputs.append(logits)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--fixed", action="store_true")
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    cfg = BertConfig(
        vocab_size=500,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=64,
        num_labels=2,
    )
    model = BertForSequenceClassification(cfg)
    data = Synthetic(a.steps * 8, cfg.vocab_size, 32)
    args = TrainingArguments(
        output_dir="/tmp/memprobe-hf-out",
        per_device_train_batch_size=8,
        max_steps=a.steps,
        learning_rate=1e-3,
        logging_steps=100,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        dataloader_num_workers=0,
        disable_tqdm=False,
    )
    probe_batch = data.ids[:16]
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=data,
        callbacks=[CalibrationProbe(probe_batch, a.fixed)],
    )
    trainer.train()
    print("global steps:", trainer.state.global_step)


if __name__ == "__main__":
    main()
