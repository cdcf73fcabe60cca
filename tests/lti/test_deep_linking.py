"""Deep linking against the independent platform: an instructor picks exercises in the LMS's
"add external tool" picker; the platform checks the signed answer with the tool's key set and
makes one resource link per exercise, and one line item per exercise, ever."""

from __future__ import annotations

import re
from html import unescape

import httpx
import pytest
from sqlalchemy import select

from server.models import Course, LtiLineItem, SetEntry
from tests.lti.conftest import LEARNER, STAFF, Lti, pick_exercises
from tests.lti.servers import launch

PEOPLE = {
    "prof": {"sub": "dl-prof", "name": "Barbara Liskov", "roles": {"D1": [STAFF]}},
    "ada": {"sub": "dl-ada", "name": "Ada Lovelace", "roles": {"D1": [LEARNER]}},
}


@pytest.fixture(scope="module", autouse=True)
def people(lti: Lti) -> None:
    lti.platform.people(PEOPLE, {"D1": {"title": "Deep links", "label": "DL-1"}})


def _pick(lti: Lti, browser: httpx.Client, *exercises: str, whole_set: bool = False) -> httpx.Response:
    return pick_exercises(lti, browser, "prof", "D1", *exercises, whole_set=whole_set)


def _items(lti: Lti, slug: str) -> list[dict]:  # type: ignore[type-arg]
    return [i for i in lti.platform.state()["line_items"] if i.get("resourceId") == slug]


def test_picking_an_exercise_makes_one_assignment_with_one_line_item(lti: Lti) -> None:
    with lti.client() as browser:
        done = _pick(lti, browser, "actor-loss")
    assert "Added 1" in done.text
    state = lti.platform.state()
    [link] = state["resource_links"]
    assert link["custom"] == {"exercise": "actor-loss"} and link["url"] == f"{lti.tool}/lti/launch"
    [item] = _items(lti, "actor-loss")
    assert (item["tag"], item["scoreMaximum"], item["resourceLinkId"]) == ("ppo-grader", 100, link["id"])
    with lti.state.session_factory() as session:
        course = session.scalar(select(Course).where(Course.slug == "dl-1"))
        assert course is not None
        assert session.get(SetEntry, (course.id, "actor-loss")) is not None  # published by the pick


def test_linking_the_same_exercise_again_reuses_its_line_item(lti: Lti) -> None:
    with lti.client() as browser:
        done = _pick(lti, browser, "actor-loss", "critic-loss")
    assert "Added 2" in done.text
    assert len(_items(lti, "actor-loss")) == 1  # found by resource id and tag: not asked for again
    assert len(_items(lti, "critic-loss")) == 1
    assert len(lti.platform.state()["resource_links"]) == 3
    with lti.state.session_factory() as session:
        rows = session.scalars(select(LtiLineItem).order_by(LtiLineItem.exercise)).all()
        assert [(r.exercise, r.url) for r in rows] == [
            ("actor-loss", _items(lti, "actor-loss")[0]["id"]),  # looked up at the second linking
            ("critic-loss", None),  # the LMS is creating it from this answer: looked up when grades go out
        ]


def test_the_whole_set_links_every_published_exercise_once(lti: Lti) -> None:
    with lti.client() as browser:
        done = _pick(lti, browser, whole_set=True)
    assert "Added 2" in done.text
    assert len(_items(lti, "actor-loss")) == len(_items(lti, "critic-loss")) == 1


def test_a_picker_answers_once_and_learners_get_none(lti: Lti) -> None:
    with lti.client() as browser:
        picker = launch(browser, lti.platform, user="prof", context="D1", message="deeplink").response
        action = unescape(re.search(r'action="(/lti/deep-link/[^"]+)"', picker.text).group(1))  # type: ignore[union-attr]
        first = browser.post(lti.tool + action, data={"exercise": "actor-loss"})
        second = browser.post(lti.tool + action, data={"exercise": "actor-loss"})
        forged = browser.post(lti.tool + "/lti/deep-link/not-a-token", data={"exercise": "actor-loss"})
        cross = browser.post(lti.tool + action, data={"exercise": "actor-loss"}, headers={"Origin": "https://evil.invalid"})
    assert first.status_code == 200 and second.status_code == 409 and forged.status_code == 404
    assert cross.status_code == 403
    with lti.client() as browser:
        learner = launch(browser, lti.platform, user="ada", context="D1", message="deeplink").response
    assert learner.status_code == 403 and "Instructors only" in learner.text
