"""The pytest plugin's work (ophook.pytest_plugin loads it only when recording is asked for): one
recording per test (recording), its directory name (node_paths), and the comparison of two runs'
directories (run_comparison)."""
