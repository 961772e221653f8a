"""`ophook bisect`: which ops must run in higher precision. The engine (__main__, bisection,
search, answer, state) runs the program repeatedly under the hook (program_runs) with chosen
groups of calls (groups) widened through overrides (upcast, the program's side) and judges each
run's result (result) against the run with every group widened (docs/precision.md)."""
