"""The catalogue's index (``exercises.index``: specs read, not run) agrees with the loaded
catalogue, and stands aside whenever a spec cannot be read without running it."""

from __future__ import annotations

from pathlib import Path

from exercises import registry
from exercises.index import read_index
from exercises.packs import load_catalogue, path_pack
from exercises.scaffold import new_exercise


def test_the_index_is_the_builtin_catalogue_in_its_order() -> None:
    index = read_index([])
    assert index is not None
    assert [(e.slug, e.title, e.function_name, e.order) for e in index] == [
        (e.slug, e.title, e.function_name, e.order) for e in registry.load(served=[])
    ]


def test_a_scaffolded_pack_is_indexed_and_a_computed_title_is_not(tmp_path: Path) -> None:
    new_exercise("my-loss", tmp_path / "pack")
    index = read_index([str(tmp_path / "pack")])
    assert index is not None
    loaded = load_catalogue([path_pack(tmp_path / "pack")])
    assert [e.slug for e in index if e.pack != "built-in"] == list(loaded)
    assert next(e for e in index if e.slug == "my-loss").title == loaded["my-loss"].title

    spec = tmp_path / "pack" / "my_loss" / "spec.py"
    spec.write_text(spec.read_text().replace('title="', 'title="" + "', 1))  # computed: run it to know it
    assert read_index([str(tmp_path / "pack")]) is None
    assert read_index([str(tmp_path / "nowhere")]) is None  # a pack that is not there: the loader says why
