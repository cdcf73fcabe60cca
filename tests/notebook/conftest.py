"""Notebooks end to end: a real Jupyter kernel (ipykernel, driven by nbclient) runs them
against a real `ppo-grader serve` (tests/e2e/conftest.py) that grades in the real jail."""

from __future__ import annotations

import html
import itertools
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import ipykernel  # noqa: F401  (a test tool: the kernel nbclient starts)
import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from exercises.registry import get_exercise
from tests.e2e.conftest import BIN, Server, server  # noqa: F401  (the real-server fixture)

#: A cell's outputs as text: streams, the text/plain of displays and results, errors.
Outputs = list[str]


def reference_function(slug: str) -> str:
    """The reference solution without its module docstring: a cell a learner could have written."""
    source = get_exercise(slug).reference_source
    return re.sub(r'^"""[^"]*"""\n+', "", source)


class RecordingClient(NotebookClient):
    """nbclient, keeping every display message the kernel published (progress updates too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.displays: list[tuple[int, str, str]] = []

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        if msg["msg_type"] in ("display_data", "update_display_data"):
            text = msg["content"].get("data", {}).get("text/plain", "")
            self.displays.append((cell_index, msg["msg_type"], str(text)))
        return super().process_message(msg, cell, cell_index)


@dataclass
class Run:
    """An executed notebook."""

    notebook: Any
    displays: list[tuple[int, str, str]] = field(default_factory=list)

    def cell(self, index: int) -> Any:
        return self.notebook.cells[index]

    def text(self, index: int) -> str:
        """Everything cell ``index`` showed, as text."""
        out = []
        for output in self.cell(index).get("outputs", []):
            if output["output_type"] == "stream":
                out.append(output["text"])
            elif output["output_type"] in ("display_data", "execute_result"):
                out.append(str(output["data"].get("text/plain", "")))
            elif output["output_type"] == "error":
                out.append(f"{output['ename']}: {output['evalue']}")
        return "\n".join(out)

    def html(self, index: int) -> str:
        """The text of cell ``index``'s HTML outputs (tags removed, entities decoded, spaces collapsed)."""
        markup = "\n".join(str(o["data"].get("text/html", "")) for o in self.cell(index).get("outputs", [])
                           if o["output_type"] in ("display_data", "execute_result"))
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())

    def errors(self) -> list[str]:
        return [f"cell {i}: {o['ename']}: {o['evalue']}" for i, c in enumerate(self.notebook.cells)
                for o in c.get("outputs", []) if o["output_type"] == "error"]


def notebook_of(cells: Sequence[str]) -> Any:
    """A notebook: a title, then one code cell per item ("# md: ..." items are markdown)."""
    made = [new_markdown_cell("# A learner's notebook")]
    for cell in cells:
        made.append(new_markdown_cell(cell[6:]) if cell.startswith("# md: ") else new_code_cell(cell))
    return new_notebook(cells=made, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                             "language": "python"}})


@dataclass
class Kernel:
    """Runs notebooks in a fresh ipykernel of this interpreter, logged in to the test server."""

    server: Server
    token: str
    home: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")}
        env.update({"PPO_GRADER_URL": self.server.url, "PPO_GRADER_TOKEN": self.token,
                    "XDG_CONFIG_HOME": str(self.home / "config"), "PATH": f"{BIN}:{env.get('PATH', '')}"})
        env.update(extra)
        return {k: v for k, v in env.items() if v != ""}

    def run(self, notebook: Any, *, env: dict[str, str] | None = None, timeout: int = 300) -> Run:
        client = RecordingClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=True,
                                 resources={"metadata": {"path": str(self.home)}})
        client.execute(env=env or self.env())
        return Run(notebook, client.displays)

    def cells(self, *cells: str, env: dict[str, str] | None = None) -> Run:
        return self.run(notebook_of(cells), env=env)

    def write(self, run: Run, name: str) -> Path:
        path = self.home / name
        nbformat.write(run.notebook, path)
        return path

    def submissions(self) -> list[dict[str, Any]]:
        answer = httpx.get(f"{self.server.url}/api/v1/submissions", params={"limit": 100},
                           headers={"Authorization": f"Bearer {self.token}"}, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()


_learners = itertools.count(1)


@pytest.fixture(scope="module")
def kernel(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:  # noqa: F811
    """A learner of their own per test module, and a folder for their notebooks."""
    home = tmp_path_factory.mktemp("notebooks")
    yield Kernel(server, server.add_user(f"nb-learner-{next(_learners)}"), home)
