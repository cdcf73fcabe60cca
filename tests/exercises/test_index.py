"""The catalogue's index (``exercises.index``: specs read, not run) agrees with the loaded
catalogue, and stands aside whenever a spec cannot be read without running it."""

from __future__ import annotations

from pathlib import Path

from exercises import registry
from exercises.index import read_index
from exercises.packs import load_catalogue, path_pack
from exercises.scaffold import new_exercise
from exercises.versions import content_version


def test_the_index_is_the_builtin_catalogue_in_its_order() -> None:
    index = read_index([])
    assert index is not None
    loaded = registry.load(served=[])
    assert [(e.slug, e.title, e.function_name, e.order, e.pack, e.folder) for e in index] == [
        (e.slug, e.title, e.function_name, e.order, e.pack, e.folder) for e in loaded
    ]
    # The same folder, so the same content version (`exercises versions` hashes the index's).
    assert [content_version(e) for e in index] == [content_version(e) for e in loaded]


def test_a_scaffolded_pack_is_indexed_and_a_computed_title_is_not(tmp_path: Path) -> None:
    new_exercise("my-loss", tmp_path / "pack")
    index = read_index([str(tmp_path / "pack")])
    assert index is not None
    loaded = load_catalogue([path_pack(tmp_path / "pack")])
    assert [e.slug for e in index if e.pack != "built-in"] == list(loaded)
    mine = next(e for e in index if e.slug == "my-loss")
    assert (mine.title, mine.pack, mine.folder) == (loaded["my-loss"].title, loaded["my-loss"].pack, loaded["my-loss"].folder)

    spec = tmp_path / "pack" / "my_loss" / "spec.py"
    spec.write_text(spec.read_text().replace('title="', 'title="" + "', 1))  # computed: run it to know it
    assert read_index([str(tmp_path / "pack")]) is None
    assert read_index([str(tmp_path / "nowhere")]) is None  # a pack that is not there: the loader says why
    (tmp_path / "empty").mkdir()
    assert read_index([str(tmp_path / "empty")]) is None  # nor one that holds no exercise
