"""The seed API tracer's example program, on ophook's Tracer.

    .venv/bin/python examples/api_tracer.py [OUTPUT_DIR]     # with ophook importable (pip install .)

Writes trace_output/ (or OUTPUT_DIR): trace.jsonl, summary.json and the seed's four text files —
api_trace.txt (one call per line, e.g. `torch.randn(2, 3, device="cpu")`), api_apis.txt (the set
of APIs), api_configs.txt (distinct calls, sorted) and api_statistics.txt (counts).
"""
import sys

import torch

import ophook

output = sys.argv[1] if len(sys.argv) > 1 else "trace_output"

# The seed: APITracer(dialect="torch", output_path="trace_output", levels=1, merge_output=True);
# its level 1 (TorchFunctionHook) is ophook's "torch_function" level.
tracer = ophook.Tracer(output_path=output, levels=["torch_function"], mode="trace")

with tracer:
    tensor1 = torch.randn(2, 3, device="cpu")
    tensor2 = torch.ones(2, 3)
    result = torch.add(tensor1, tensor2, alpha=10)
    final_sum = result.sum()

# Or by hand: tracer.start(); ...; tracer.stop()
print("traced into %s" % tracer.output)
