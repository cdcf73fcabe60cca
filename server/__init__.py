"""ppo-grader server: HTTP API, database, queue and workers. Never runs learner code itself."""

__version__ = "0.1.0"
