"""ophook's blame package (`ophook blame RUN`): for each recorded call of a dump-mode run, its local
error (its recorded outputs against the op run again in float64 on its recorded inputs, as `ophook
replay --reference float64` judges it) and its propagated error (its recorded inputs against the
float64 chain: the float64 outputs of the calls that made them, fed forward), and how much of the
run's final error each call's own rounding explains (docs/precision.md). Run by the `ophook` tool
as `python -m ophook._blame`; never imported by a recorded program.

A package of its own, beside _replay rather than a mode of it: replay's calls are independent and
run in parallel, each from its own files, while the chain feeds each call the outputs of earlier
calls, so it runs in order; it reuses _replay's reading of records, its float64 widening and its
judging of outputs (call.float64_outputs, call.reference_tally)."""
