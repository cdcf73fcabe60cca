"""ppo-submit: the command-line client of the ppo-grader autograding service.

It speaks HTTP only; it imports neither torch nor any of the server's code, so what a
learner installs holds no hidden reference or checks.
"""

#: Written here rather than read from the installed metadata, which costs a large share of
#: the start-up; a test checks the two agree.
__version__ = "0.1.0"

__all__ = ["__version__", "load_ipython_extension"]


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext ppo_submit`` in a notebook: adds ``%ppo_submit FUNCTION`` (see ``ppo_submit.notebook``)."""
    from .notebook import load_ipython_extension as load

    load(ipython)
