"""sandbox.tensors: safetensors only, every dtype the jail may return round-trips, and every
limit (bytes, count, names, dtypes, shapes, offsets, header) refuses before a comparison sees it."""

from __future__ import annotations

import json
import struct

import pytest
import torch

from sandbox.tensors import ALLOWED_DTYPES, TensorBlobError, decode, encode

BIG = 1 << 20


def blob(header: dict, data: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def f32(name: str = "a", offsets: tuple[int, int] = (0, 4), shape: tuple[int, ...] = (1,)) -> dict:
    return {name: {"dtype": "F32", "shape": list(shape), "data_offsets": list(offsets)}}


@pytest.mark.parametrize("dtype", sorted(ALLOWED_DTYPES, key=str))
def test_every_allowed_dtype_round_trips_exactly(dtype: torch.dtype) -> None:
    t = (torch.arange(-6, 6).reshape(3, 4) % 2 == 0) if dtype == torch.bool else torch.arange(12).reshape(3, 4).to(dtype)
    got = decode(encode({"x": t}), max_bytes=BIG)
    assert list(got) == ["x"] and got["x"].dtype == dtype and torch.equal(got["x"], t)


def test_views_gradients_and_shared_storage_are_encoded_as_plain_copies() -> None:
    base = torch.arange(6.0, requires_grad=True)
    view = base.detach().reshape(2, 3).t()  # not contiguous
    got = decode(encode({"t": view, "row": view[0], "g": base * 2, "empty": torch.zeros(0, 3)}), max_bytes=BIG)
    assert torch.equal(got["t"], view) and torch.equal(got["row"], view[0]) and got["empty"].shape == (0, 3)
    assert not got["g"].requires_grad and torch.equal(got["g"], torch.arange(6.0) * 2)


def test_nothing_encodes_to_nothing_and_nothing_decodes_to_nothing() -> None:
    assert encode({}) == b""
    assert decode(b"", max_bytes=0) == {}


def test_the_byte_limit_is_checked_first() -> None:
    good = encode({"x": torch.zeros(100)})
    assert decode(good, max_bytes=len(good))["x"].numel() == 100
    with pytest.raises(TensorBlobError, match=f"{len(good)} bytes of tensors, over the {len(good) - 1}-byte limit"):
        decode(good, max_bytes=len(good) - 1)


def test_the_tensor_count_limit_is_exact() -> None:
    three = encode({f"t{i}": torch.zeros(1) for i in range(3)})
    assert len(decode(three, max_bytes=BIG, max_tensors=3)) == 3
    with pytest.raises(TensorBlobError, match="3 tensors, over the limit of 2"):
        decode(three, max_bytes=BIG, max_tensors=2)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.float8_e4m3fn, torch.uint16])
def test_dtypes_a_grader_has_no_use_for_are_refused(dtype: torch.dtype) -> None:
    with pytest.raises(TensorBlobError, match="unsupported dtype"):
        decode(encode({"c": torch.zeros(2).to(dtype)}), max_bytes=BIG)


@pytest.mark.parametrize("name", ["a b", "", "x" * 129, "../etc", "ä", "a\nb", "a/b"])
def test_names_outside_the_flat_charset_are_refused_without_echoing_them_whole(name: str) -> None:
    with pytest.raises(TensorBlobError, match="bad tensor name") as info:
        decode(blob(f32(name)), max_bytes=BIG)
    assert len(str(info.value)) < 80


@pytest.mark.parametrize("name", ["a", "c1.out.0", "c:x-y_z", "A" * 128])
def test_names_the_harness_writes_are_accepted(name: str) -> None:
    assert list(decode(blob(f32(name), b"\0" * 4), max_bytes=BIG)) == [name]


@pytest.mark.parametrize("header, data, match", [
    (f32(shape=(4,), offsets=(0, 8)), b"\0" * 8, "bad byte offsets"),           # size does not match shape
    (f32(offsets=(4, 0)), b"\0" * 4, "bad byte offsets"),                      # reversed
    (f32(offsets=(0, 8), shape=(2,)), b"\0" * 4, "bad byte offsets"),          # past the data
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}, b"\0" * 4, "bad byte offsets"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0.0, 4.0]}}, b"\0" * 4, "bad byte offsets"),
    ({"a": {"dtype": "F32", "shape": [1]}}, b"\0" * 4, "bad byte offsets"),
    (f32(shape=(-1,), offsets=(0, 0)), b"", "bad shape"),
    (f32(shape=(1,) * 9), b"\0" * 4, "bad shape"),
    ({"a": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, b"\0" * 4, "bad shape"),
    ({"a": {"dtype": "F32", "shape": "1", "data_offsets": [0, 4]}}, b"\0" * 4, "bad shape"),
    ({"a": {"dtype": "F32", "shape": [1 << 40], "data_offsets": [0, 4]}}, b"\0" * 4, "bad shape"),
    ({"a": {"shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4, "unsupported dtype"),
    ({"a": [1, 2]}, b"", "unsupported dtype"),
])
def test_header_entries_off_the_format_are_refused_before_the_library_reads_them(
    header: dict, data: bytes, match: str
) -> None:
    with pytest.raises(TensorBlobError, match=match):
        decode(blob(header, data), max_bytes=BIG)


@pytest.mark.parametrize("raw, match", [
    (b"\0" * 7, "shorter than its header length"),
    (struct.pack("<Q", 100) + b"{}", "over the limit or past the data"),
    (struct.pack("<Q", (1 << 20) + 1) + b" " * ((1 << 20) + 1), "over the limit or past the data"),
    (struct.pack("<Q", 5) + b"{nope", "not JSON"),
    (struct.pack("<Q", 6) + b"[1, 2]", "not an object"),
    (struct.pack("<Q", 200_000) + b"[" * 100_000 + b"]" * 100_000, "not JSON"),  # nesting past recursion
])
def test_a_header_that_is_not_a_bounded_json_object_is_refused(raw: bytes, match: str) -> None:
    with pytest.raises(TensorBlobError, match=match):
        decode(raw, max_bytes=4 << 20)


@pytest.mark.parametrize("header, data", [
    ({**f32("a"), **f32("b")}, b"\0" * 4),   # two tensors on the same bytes
    (f32(), b"\0" * 8),                      # bytes no tensor covers
    (f32(offsets=(4, 8)), b"\0" * 8),        # a gap before the first tensor
])
def test_what_only_the_library_checks_is_still_a_tensor_blob_error(header: dict, data: bytes) -> None:
    with pytest.raises(TensorBlobError, match="malformed tensor data"):
        decode(blob(header, data), max_bytes=BIG)


def test_metadata_is_allowed_and_not_counted_as_a_tensor() -> None:
    header = {"__metadata__": {"format": "pt"}, **f32()}
    got = decode(blob(header, struct.pack("<f", 2.5)), max_bytes=BIG, max_tensors=1)
    assert list(got) == ["a"] and got["a"].item() == 2.5
