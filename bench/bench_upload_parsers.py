"""The upload form's parsers against input size: CPU seconds and peak memory (issue 31).

Each case is run at 1/8, 1/4, 1/2 and all of its cap, in this process, on the code the server
runs (``server.dashboard.upload``: the streaming multipart reader and ``prepare``, which
builds a notebook's module with ``notebook_format.closure``). The last column is the CPU ratio to
the size before: about 2 for each doubling is linear, 4 is quadratic.

- ``multipart``: a body of one notebook part up to ``MAX_UPLOAD_BYTES`` (newlines, the worst
  case of the old parser), fed in 64 KiB chunks;
- ``py``: a ``.py`` of ``a`` lines up to ``MAX_SOURCE_BYTES`` (a syntax tree node per line);
- ``nb-cells``: a notebook of cells of constants up to the code cap in all;
- ``nb-undefined``: a function reading undefined names, up to the cap of one cell;
- ``nb-imports``: ``import a.bN`` lines up to the code cap in all, and a function using ``a``.

Peak memory is what ``tracemalloc`` saw allocated (Python objects: the syntax trees, the
JSON), above what was held before. Run on a quiet machine:

    .venv/bin/python bench/bench_upload_parsers.py             # the table
    .venv/bin/python bench/bench_upload_parsers.py --write     # and into docs/benchmarks.md
    .venv/bin/python bench/bench_upload_parsers.py --smallest  # 1/8 of each cap only (a smoke run)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client"))

from server.config import Settings
from server.dashboard import upload
from server.web.errors import PageError

SOURCE_CAP = Settings().MAX_SOURCE_BYTES
FRACTIONS = (8, 4, 2, 1)  # 1/8 .. 1/1 of each cap
FUNCTION = "def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\n"
BOUNDARY = b"bench"


def notebook(cells: list[str]) -> bytes:
    """A notebook's JSON, as Jupyter writes it (each cell's source a list of lines)."""
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {},
            "cells": [
                {
                    "cell_type": "code",
                    "metadata": {},
                    "outputs": [],
                    "execution_count": None,
                    "source": text.splitlines(keepends=True),
                }
                for text in cells
            ],
        }
    ).encode()


def spread(lines: list[str], per_cell: int) -> list[str]:
    """``lines`` in cells of at most ``per_cell`` bytes."""
    cells: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        if current and size + len(line) + 1 > per_cell:
            cells.append("\n".join(current) + "\n")
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        cells.append("\n".join(current) + "\n")
    return cells


def run_multipart(size: int) -> str:
    head = b'--bench\r\nContent-Disposition: form-data; name="file"; filename="nb.ipynb"\r\n\r\n'
    tail = b"\r\n--bench--\r\n"
    body = head + b"\n" * (size - len(head) - len(tail)) + tail
    reader = upload.FormReader(BOUNDARY, max_source_bytes=SOURCE_CAP, back="/")
    for start in range(0, len(body), 65536):
        reader.feed(body[start : start + 65536])
    return f"{len(reader.finish().content or b'')} bytes kept"


def prepared(filename: str, content: bytes) -> str:
    try:
        made = upload.prepare(upload.Upload({}, filename, content), "/", max_source_bytes=SOURCE_CAP, visible=None)
    except PageError as exc:
        return f"refused {exc.status_code}"
    return f"{len(made.source)} chars sent"


def run_py(size: int) -> str:
    return prepared("big.py", (FUNCTION + "    return 0\n" + "a\n" * (size // 2)).encode()[:size])


def run_nb_cells(size: int) -> str:
    lines = [f"c{i} = {i}" for i in range(size // 12)]
    cells = spread(lines, SOURCE_CAP - 64)
    return prepared("cells.ipynb", notebook([FUNCTION + "    return c0\n", *cells]))


def run_nb_undefined(size: int) -> str:
    count = (size - 200) // 16
    body = "".join(f"    x{i} = u{i}\n" for i in range(count))
    return prepared("undefined.ipynb", notebook([FUNCTION + body + "    return 0\n"]))


def run_nb_imports(size: int) -> str:
    lines = [f"import a.b{i}" for i in range(size // 14)]
    cells = spread(lines, SOURCE_CAP - 64)
    return prepared("imports.ipynb", notebook([*cells, FUNCTION + "    return a.b0\n"]))


CASES: list[tuple[str, int, Callable[[int], str]]] = [
    ("multipart", upload.MAX_UPLOAD_BYTES, run_multipart),
    ("py", SOURCE_CAP, run_py),
    ("nb-cells", upload.MAX_CODE_FACTOR * SOURCE_CAP, run_nb_cells),
    ("nb-undefined", upload.MAX_CELL_FACTOR * SOURCE_CAP, run_nb_undefined),
    ("nb-imports", upload.MAX_CODE_FACTOR * SOURCE_CAP, run_nb_imports),
]


def measure(run: Callable[[int], str], size: int) -> tuple[float, float, str]:
    """(CPU seconds, peak MiB above the start, outcome) of one run."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    started = time.process_time()
    outcome = run(size)
    cpu = time.process_time() - started
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return cpu, peak / 2**20, outcome


def table(fractions: tuple[int, ...]) -> str:
    rows = [
        "| case | bytes | of the cap | CPU s | peak MiB | CPU ratio to the size before | outcome |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, cap, run in CASES:
        run(1024)  # warm: imports and the catalogue are not the parser's cost
        before: float | None = None
        for fraction in fractions:
            size = cap // fraction
            cpu, peak, outcome = measure(run, size)
            ratio = f"{cpu / before:.2f}" if before else ""
            rows.append(f"| {name} | {size} | 1/{fraction} | {cpu:.3f} | {peak:.1f} | {ratio} | {outcome} |")
            before = max(cpu, 1e-6)
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    parser.add_argument("--smallest", action="store_true", help="1/8 of each cap only (checks the script runs)")
    args = parser.parse_args()
    body = table(FRACTIONS[:1] if args.smallest else FRACTIONS)
    print(body)
    if args.write and not args.smallest:
        from bench.report import write_section

        write_section(
            "Upload and notebook parsers against input size (issue 31)",
            "python bench/bench_upload_parsers.py --write",
            body,
        )


if __name__ == "__main__":
    main()
