"""Issue 38: `ppo-submit`'s live status line (and the notebook's, the same text) says the place
in the queue, and the time only when the server sent its measured estimate."""

from __future__ import annotations

from ppo_submit.render import status_text


def test_the_position_and_the_server_s_estimate() -> None:
    sub = {"id": 4, "status": "queued", "queue_position": 2, "estimated_seconds": 12}
    assert status_text(sub, 3.0) == "queued: position 3 in the queue, about 12 s · 3 s"  # type: ignore[arg-type]
    assert status_text({**sub, "queue_position": 0}) == "queued: position 1 in the queue, about 12 s"  # type: ignore[arg-type]


def test_without_an_estimate_nothing_claims_a_time() -> None:
    for sent in ({"estimated_seconds": None}, {}, {"estimated_seconds": "soon"}, {"estimated_seconds": True}):
        sub = {"id": 4, "status": "queued", "queue_position": 2, **sent}
        assert status_text(sub) == "queued: position 3 in the queue"  # type: ignore[arg-type]
    assert status_text({"status": "queued", "queue_position": None, "estimated_seconds": 5}) == "queued"
    assert status_text({"status": "running", "estimated_seconds": 5}) == "running…"
