"""ophook's replay package: re-runs recorded calls from their dumps and compares the results with the
recordings or with a float64 reference (`ophook replay`, `ophook compare --referee`). Run by the
`ophook` tool as `python -m ophook._replay`; never imported by a recorded program."""
