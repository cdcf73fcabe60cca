"""What the round 9 fixes keep working besides refusing the attacks (``test_attack_round9``):
a fresh key set is not fetched again, an old one is fetched once and then is fresh; a set past
twice its age limit that cannot be fetched just now (a refresh cooling down) verifies nothing;
the age limit is a setting; an LMS that accepts ``ltiResourceLink`` among other types still gets
its picker; an unverified pack exercise sent anyway (a forged form) is an LTI page; deep-linking
data stored before the launch checked it, that cannot be signed back, is refused by name; and
``Infinity`` in a resource-link launch is a page. Over real HTTP, as ``test_attack_round9``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from joserfc import jws
from pydantic import ValidationError
from sqlalchemy import select, update

from server.config import Settings
from server.db import transaction
from server.lti.platforms import JWKS_MAX_AGE
from server.models import Course, LtiDeepLink, LtiPlatform, SetEntry, utcnow
from tests.lti.conftest import Lti
from tests.lti.test_attack_round9 import (  # noqa: F401  (fixtures, used by name)
    EXERCISE,
    _deep_linking_request,
    _jwks_fetches,
    _picker,
    _post,
    _send_picker,
    _signed,
    unverified_pack,
)
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    Hostile,
    _hostile_course,
    hostile_launch,
    people,
    served_and_registered,
    tool_login,
)


@pytest.fixture
def lms(lti: Lti) -> Iterator[Hostile]:
    """A hostile LMS of the test's own (its cache times are set by the test)."""
    yield from served_and_registered(lti, Hostile)


def _cache(lti: Lti, lms: Hostile, **values: Any) -> None:
    with transaction(lti.state.session_factory) as session:
        session.execute(update(LtiPlatform).where(LtiPlatform.issuer == lms.issuer).values(**values))


def test_the_key_set_age_limit_is_a_setting_of_hours_by_default() -> None:
    assert Settings().LTI_JWKS_MAX_AGE_SECONDS == JWKS_MAX_AGE.total_seconds() == 6 * 3600
    assert Settings(LTI_JWKS_MAX_AGE_SECONDS=600).LTI_JWKS_MAX_AGE_SECONDS == 600
    for wrong in (0, 59, 8 * 86400):
        with pytest.raises(ValidationError):
            Settings(LTI_JWKS_MAX_AGE_SECONDS=wrong)


def test_a_fresh_set_is_not_fetched_again_and_an_old_one_once(lti: Lti, lms: Hostile) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, lms, "R9F-age")
    fetches = _jwks_fetches(lms)
    with lti.client() as browser:
        assert hostile_launch(browser, lti, lms, sub="h-prof-R9F-age", context="R9F-age").status_code == 200
    assert _jwks_fetches(lms) == fetches  # fresh: read from the cache
    _cache(lti, lms, jwks_fetched_at=utcnow() - JWKS_MAX_AGE - timedelta(minutes=1))
    for _ in range(3):
        with lti.client() as browser:
            assert hostile_launch(browser, lti, lms, sub="h-prof-R9F-age", context="R9F-age").status_code == 200
    assert _jwks_fetches(lms) == fetches + 1  # the old set was fetched once, then fresh again
    with lti.state.session_factory() as session:
        platform = session.scalar(select(LtiPlatform).where(LtiPlatform.issuer == lms.issuer))
        assert platform is not None and platform.jwks_miss_at is None  # a refresh that found its key: no cooldown
        assert platform.jwks_fetched_at is not None and utcnow() - platform.jwks_fetched_at < timedelta(minutes=5)


def test_a_set_past_twice_its_limit_verifies_nothing_while_a_refresh_cools_down(lti: Lti, lms: Hostile) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, lms, "R9F-cool")
    fetches = _jwks_fetches(lms)
    # a refresh failed a moment ago (the cooldown): a set a little past its limit still verifies ...
    _cache(lti, lms, jwks_fetched_at=utcnow() - JWKS_MAX_AGE - timedelta(hours=1), jwks_miss_at=utcnow())
    with lti.client() as browser:
        assert hostile_launch(browser, lti, lms, sub="h-prof-R9F-cool", context="R9F-cool").status_code == 200
    # ... one older than twice the limit does not
    _cache(lti, lms, jwks_fetched_at=utcnow() - 2 * JWKS_MAX_AGE - timedelta(hours=1))
    with lti.client() as browser:
        refused = hostile_launch(browser, lti, lms, sub="h-prof-R9F-cool", context="R9F-cool")
    assert refused.status_code == 502 and "could not be read" in refused.text
    assert "text/html" in refused.headers["content-type"]
    assert _jwks_fetches(lms) == fetches  # the cooldown held: nothing fetched
    _cache(lti, lms, jwks_miss_at=utcnow() - timedelta(minutes=2))  # the cooldown over: fetched, verified
    with lti.client() as browser:
        assert hostile_launch(browser, lti, lms, sub="h-prof-R9F-cool", context="R9F-cool").status_code == 200
    assert _jwks_fetches(lms) == fetches + 1


def test_a_request_accepting_resource_links_among_other_types_gets_its_picker(lti: Lti, lms: Hostile) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, lms, "R9F-types")
        nonce, state = tool_login(browser, lti, lms)
        body = _deep_linking_request(lms, nonce, "R9F-types", None, accept=("file", "ltiResourceLink", "html"))
        picker = _post(browser, lti, _signed(lms, body), state)
        assert picker.status_code == 200 and 'id="lti-picker"' in picker.text
        nonce, state = tool_login(browser, lti, lms)
        refused = _post(
            browser, lti, _signed(lms, _deep_linking_request(lms, nonce, "R9F-types", None, accept=("file",))), state
        )
    assert refused.status_code == 400 and "does not offer" in refused.text


def test_an_unverified_pack_exercise_sent_anyway_is_a_page_naming_no_folder(
    lti: Lti,
    lms: Hostile,
    unverified_pack: str,  # noqa: F811
) -> None:
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, lms, "R9F-forged-pick")
        picker = _picker(browser, lti, lms, "R9F-forged-pick")
        assert f'value="{unverified_pack}"' not in picker.text and f'value="{EXERCISE}"' in picker.text
        answer = _send_picker(browser, lti, picker, unverified_pack)  # the form, edited to name it
    assert answer.status_code == 409 and "text/html" in answer.headers["content-type"]
    assert "Nothing to send" in answer.text and "/pack" not in answer.text
    with lti.state.session_factory() as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None and session.get(SetEntry, (course.id, unverified_pack)) is None


@pytest.mark.parametrize("stored", ['{"weight": NaN}', '{"title": "Week 1 \\ud83d"}'])
def test_deep_linking_data_stored_before_the_check_is_refused_by_name(lti: Lti, lms: Hostile, stored: str) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, lms, "R9F-old-data")
        picker = _picker(browser, lti, lms, "R9F-old-data", data={"title": "Week 1"})
        assert picker.status_code == 200
        with transaction(lti.state.session_factory) as session:  # as an earlier version stored it
            row = session.scalars(select(LtiDeepLink).order_by(LtiDeepLink.id.desc())).first()
            assert row is not None and row.data == '{"title": "Week 1"}'
            row.data = stored
        answer = _send_picker(browser, lti, picker, EXERCISE)
    assert answer.status_code == 400 and "text/html" in answer.headers["content-type"]
    assert "Unreadable deep-linking data" in answer.text


def test_infinity_in_a_resource_link_launch_is_a_page(lti: Lti, lms: Hostile) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, lms, "R9F-inf")
        nonce, state = tool_login(browser, lti, lms)
        body = lms.claims(nonce, sub="h-prof-R9F-inf", context="R9F-inf")
        body["https://example.edu/weight"] = float("inf")
        token = jws.serialize_compact(
            {"alg": "RS256", "kid": lms.key.kid, "typ": "JWT"}, json.dumps(body).encode(), lms.key
        )
        answer = _post(browser, lti, token, state)
    assert answer.status_code == 400 and "text/html" in answer.headers["content-type"]
    assert "NaN or Infinity" in answer.text
