"""Trains a small MLP on synthetic data and prints each step's loss.

    .venv/bin/python examples/torch_mlp.py                          # plain
    LD_PRELOAD=$PWD/build/libophook.so .venv/bin/python examples/torch_mlp.py   # recorded

Options (also from the environment, for benchmarks): --width/MLP_WIDTH hidden units (64),
--depth/MLP_DEPTH hidden layers (2), --steps/MLP_STEPS (20), --batch/MLP_BATCH (32),
--save FILE writes the final parameters' raw bytes (name, dtype, shape, bytes) for exact comparison.
Losses print as float.hex, so two runs are bit-identical exactly when their outputs are equal.
"""
import argparse
import os

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, inputs, width, depth, outputs):
        super().__init__()
        layers = []
        for i in range(depth):
            layers += [nn.Linear(inputs if i == 0 else width, width), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, outputs)

    def forward(self, x):
        return self.head(self.body(x))


def arguments():
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=int(env("MLP_WIDTH", "64")))
    parser.add_argument("--depth", type=int, default=int(env("MLP_DEPTH", "2")))
    parser.add_argument("--steps", type=int, default=int(env("MLP_STEPS", "20")))
    parser.add_argument("--batch", type=int, default=int(env("MLP_BATCH", "32")))
    parser.add_argument("--save", help="write the final parameters' bytes to this file")
    return parser.parse_args()


def save_parameters(model, path):
    with open(path, "wb") as out:
        for name, p in model.named_parameters():
            data = p.detach().contiguous().numpy().tobytes()
            header = "%s %s %s %d\n" % (name, p.dtype, tuple(p.shape), len(data))
            out.write(header.encode())
            out.write(data)


def main():
    args = arguments()
    torch.manual_seed(0)
    features, classes = 16, 4
    x = torch.randn(args.batch * 4, features)
    y = torch.randint(0, classes, (args.batch * 4,))
    model = MLP(features, args.width, args.depth, classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(args.steps):
        start = (step * args.batch) % x.shape[0]
        xb, yb = x[start:start + args.batch], y[start:start + args.batch]
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        print("step %d loss %s" % (step, loss.item().hex()))
    if args.save:
        save_parameters(model, args.save)


if __name__ == "__main__":
    main()
