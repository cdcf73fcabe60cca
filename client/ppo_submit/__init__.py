"""ppo-submit: the command-line client of the ppo-grader autograding service.

It speaks HTTP only; it imports neither torch nor any of the server's code, so what a
learner installs holds no hidden reference or checks.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ppo-submit")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
