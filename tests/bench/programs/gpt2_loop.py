"""The GPT-2 training loop of the monitor's figures: transformers' GPT2LMHeadModel from a config
(2 layers, width 64, 4 heads, sequences of 64 tokens from a vocabulary of 512), AdamW, batches of 8
from a DataLoader, one thread. Prints the timed loop's wall time in seconds and the last loss."""
import argparse

import torch
from torch.utils.data import DataLoader
from transformers import GPT2Config, GPT2LMHeadModel

import timed_steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=512, n_positions=64, n_embd=options.width, n_layer=2, n_head=4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batches = iter(DataLoader(torch.randint(0, 512, (8 * (options.steps + options.warmup), 64)), batch_size=8))

    def step():
        ids = next(batches)
        loss = model(input_ids=ids, labels=ids).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    timed_steps.run(step, options.steps, options.warmup)


if __name__ == "__main__":
    main()
