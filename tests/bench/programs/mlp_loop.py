"""The MLP training loop of the CPU value-mode figures: width 512, depth 8 (Linear, LayerNorm,
GELU), batch 128, SGD, one thread; with --compile its forward compiled by torch.compile (Inductor),
compilation in --warmup steps before the timed ones. Prints the timed loop's wall time in seconds
and the last loss."""
import argparse

import torch

import timed_steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--compile", action="store_true", help="compile the model's forward (Inductor)")
    parser.add_argument("--warmup", type=int, default=0, help="untimed steps first (with --compile: 2 at least)")
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = []
    for _ in range(options.depth):
        layers += [torch.nn.Linear(options.width, options.width), torch.nn.LayerNorm(options.width), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(options.width, 10))
    forward = torch.compile(model) if options.compile else model
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(options.batch, options.width), torch.randint(0, 10, (options.batch,))

    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(forward(x), y)
        loss.backward()
        optimizer.step()
        return loss

    timed_steps.run(step, options.steps, max(options.warmup, 2 if options.compile else 0))


if __name__ == "__main__":
    main()
