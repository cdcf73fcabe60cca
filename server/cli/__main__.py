"""``python -m server.cli``: the same command line as ``ppo-grader``."""

from server.cli import app

app()
