"""What ophook's ranks say to each other, through the job's own store and never a collective on
the program's groups: where that store is and ophook's keys in it (job_store), and a trigger's word
that makes every rank write its ring (rank_signals)."""
