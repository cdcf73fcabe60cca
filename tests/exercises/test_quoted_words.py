"""What a check quotes of a tensor's record (its device, its layout): only words of their closed
lists (review 6, attack 1), whatever record reaches it."""

from __future__ import annotations

import pytest
import torch

from exercises.compare import require_tensor, shown_device
from exercises.framework import Case, CheckFailed, Outcome
from exercises.outcomes import Opaque


@pytest.mark.parametrize("layout, said", [
    ("sparse_coo", "got a sparse_coo tensor"),
    ("LEAK_4711", "got a tensor of an unsupported layout"),
    (None, "got a tensor of an unsupported layout"),
])
def test_a_tensor_that_did_not_cross_is_named_by_a_layout_of_the_closed_list(layout: str | None, said: str) -> None:
    meta = {"type": "tensor", **({"layout": layout} if layout is not None else {})}
    got = Outcome(output=Opaque("tensor (not transferable)"), meta={"": meta})
    with pytest.raises(CheckFailed) as failed:
        require_tensor(got, Case(id="1", args=[torch.zeros(2)]), what="the loss")
    assert said in str(failed.value) and "4711" not in str(failed.value)


def test_a_device_is_quoted_from_the_closed_list_only() -> None:
    assert shown_device({"device": "cuda"}) == "cuda"
    assert shown_device({"device": "LEAK_4711"}) == shown_device({}) == "an unsupported device"
