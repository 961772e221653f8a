"""The compiled-model figures' loop: the MLP of mlp_loop.py (Linear, LayerNorm, GELU; width 256,
depth 4, batch 64, SGD, one thread) with its forward compiled by torch.compile (Inductor), two
warm-up steps (compilation), then the timed steps. Prints the timed loop's wall time in seconds
and the last loss."""
import argparse
import time

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = []
    for _ in range(options.depth):
        layers += [torch.nn.Linear(options.width, options.width), torch.nn.LayerNorm(options.width), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(options.width, 10))
    compiled = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(options.batch, options.width), torch.randint(0, 10, (options.batch,))

    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(2):
        step()
    start = time.perf_counter()
    for _ in range(options.steps):
        loss = step()
    print("%.6f %r" % (time.perf_counter() - start, loss.item()))


if __name__ == "__main__":
    main()
