"""The approach ophook grew from (a NumPy operation monitor): every ufunc in the numpy
namespace replaced by a functools.wraps wrapper that np.save's each array input and the output
per call, named op_<name>_input<k>_<counter>.npy / op_<name>_output_<counter>.npy.
Its coloured log lines are left out: they would measure the terminal, not the recorder."""
import functools
import os

import numpy as np

from baselines.ufunc_namespace import UfuncNamespacePatch


class SeedDumper(UfuncNamespacePatch):
    def __init__(self, output_dir):
        super().__init__()
        self.output_dir = output_dir
        self.counter = 0

    def wrap(self, name, ufunc):
        @functools.wraps(ufunc)
        def wrapped_call(*args, **kwargs):
            self.counter += 1
            prefix = self.counter
            for k, value in enumerate(args, 1):
                if isinstance(value, np.ndarray):
                    np.save(os.path.join(self.output_dir, f"op_{name}_input{k}_{prefix}.npy"), value)
            result = ufunc(*args, **kwargs)
            np.save(os.path.join(self.output_dir, f"op_{name}_output_{prefix}.npy"), result)
            return result

        return wrapped_call

    def install(self):
        os.makedirs(self.output_dir, exist_ok=True)
        super().install()
