"""Queue, workers and persistence of verdicts, a live submission's and a regrade result's
(``regrade_jobs``). The database is the source of truth; the queue only carries ids."""
