"""Queue, workers and persistence of verdicts. The database is the source of truth; the
queue only carries submission ids."""
