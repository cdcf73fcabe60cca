"""The pages read a notebook submission's places back from the module the client built: the
client's line map and the server's reading agree on every line."""

from __future__ import annotations

import pytest

from notebook_format.cells import Cell, to_python
from notebook_format.closure import CellResolver, build, scan
from server.submissions.places import CellPlaces

CELLS = [
    "import torch\n\n\nEPS = 1e-8",
    "%matplotlib inline\n\n@torch.no_grad()\ndef helper(x):\n\n    # a comment\n\n    return x + EPS\n\n\n",
    "def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):\n    return helper(rewards), values",
]


@pytest.mark.parametrize("counts", [True, False])
def test_every_line_maps_as_the_client_maps_it(counts: bool) -> None:
    cells = [Cell(text, i, i + 4 if counts else None) for i, text in enumerate(CELLS, 1)]
    scanned = scan(to_python(c) for c in cells)
    built = build("compute_gae", CellResolver(scanned, "gae.ipynb"), header="Built by ppo-submit")
    places = CellPlaces.of("gae.ipynb", built.source)
    assert places is not None
    for number in range(1, len(built.source.splitlines()) + 1):
        expected = built.line_map.locate(number)
        assert places.locate(number) == (expected[:2] if expected else None), number


def test_only_notebook_submissions_have_places() -> None:
    assert CellPlaces.of("gae.py", "# cell 1, line 1\nimport torch\n") is None
    assert CellPlaces.of(None, "# cell 1, line 1\nimport torch\n") is None
    places = CellPlaces.of("GAE.IPYNB", "# cell 1, line 1\nimport torch\n")
    assert places is not None and places.where("GAE.IPYNB", 2, 1) == "GAE.IPYNB: cell 1, line 1, column 1"
    assert places.where("GAE.IPYNB", 1, 3) == "GAE.IPYNB: line 1 of what was sent, column 3"
