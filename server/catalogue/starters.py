"""An exercise's starter as a file to download from the learner's page: the same text
``GET /exercises/{slug}`` serves (``ppo-submit starter SLUG``), or the notebook ``ppo-submit
starter SLUG --notebook`` writes from it (``notebook_format.starter``, the builder both sides
ship, so both give the same cells).
"""

from __future__ import annotations

from dataclasses import dataclass

from notebook_format.errors import SourceError
from notebook_format.starter import starter_notebook
from server.catalogue.schemas import ExerciseDetail

#: The suffixes a starter downloads as.
PY, NOTEBOOK = ".py", ".ipynb"


class NotebookUnavailable(Exception):
    """nbformat, which writes the notebook, is not installed with this server."""


@dataclass(frozen=True)
class StarterFile:
    """A starter to send: its file name, media type and text."""

    filename: str
    media_type: str
    text: str


def starter_file(detail: ExerciseDetail, suffix: str) -> StarterFile:
    """The starter of ``detail`` as a ``.py`` file or a Jupyter notebook (``suffix``);
    :class:`NotebookUnavailable` when nbformat is missing (the ``.py`` always works)."""
    name = detail.slug.replace("-", "_")
    if suffix == PY:
        text = detail.starter if detail.starter.endswith("\n") or not detail.starter else detail.starter + "\n"
        return StarterFile(f"{name}.py", "text/x-python; charset=utf-8", text)
    try:
        text = starter_notebook(detail.starter, detail.function)
    except SourceError as exc:  # nbformat is not installed
        raise NotebookUnavailable(exc.message) from None
    return StarterFile(f"{name}.ipynb", "application/x-ipynb+json", text)
