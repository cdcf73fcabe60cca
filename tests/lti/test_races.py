"""Two first launches at once (red team 3), on SQLite and on PostgreSQL, with the race forced
rather than hoped for: launch A makes everything and holds its transaction open; launch B looks
(and finds nothing, since A has not committed), and just before B's first insert A commits. B
must then end with A's rows (the same course, link, account) or the next free name, never an
``IntegrityError``. ``tests/lti/test_redteam3`` drives the same race over HTTP (SQLite).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Engine, event, func, select
from sqlalchemy.orm import Session

from server.config import Settings
from server.db import make_engine, make_session_factory
from server.lti import claims as c
from server.lti.accounts import course_link, person, record_member
from server.lti.launch import Context, Launch
from server.lti.platforms import Registration, add_platform
from server.models import Course, Enrollment, LtiContext, LtiMember, LtiPlatform, LtiUser, User
from tests.lti.conftest import LEARNER, STAFF
from tests.pg import pg_database, pg_url  # noqa: F401  (fixtures)
from tests.server.conftest import (  # noqa: F401  (fixtures)
    db_backend,
    pytest_generate_tests,
    served_database,
    settings,
)

DEPLOYMENT = "race-1"


@dataclass(frozen=True)
class Accepted:
    """What one launch ended with."""

    link_id: int
    user_id: int
    login: str


def _launch(session: Session, sub: str, context: str, roles: tuple[str, ...], name: str) -> Launch:
    platform = session.scalar(select(LtiPlatform))
    assert platform is not None
    return Launch(
        platform=platform,
        message_type=c.RESOURCE_LINK_REQUEST,
        deployment_id=DEPLOYMENT,
        sub=sub,
        name=name,
        email=None,
        username=None,
        roles=roles,
        context=Context(id=context, title=f"Course {context}", label=f"race-{context}"),
        resource_link_id="rl-1",
    )


def _accept(session: Session, sub: str, context: str, roles: tuple[str, ...] = (STAFF,), name: str = "Ada Lovelace") -> Accepted:
    """What the launch route does with a validated launch (``server.lti.router._accept``)."""
    launch = _launch(session, sub, context, roles, name)
    link = course_link(session, launch, STAFF in roles)
    user = person(session, launch.platform.id, sub, name=name)
    record_member(session, link, user, roles)
    return Accepted(link.id, user.id, user.name)


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:  # noqa: F811
    served_database(settings)
    made = make_engine(settings.DATABASE_URL)
    with Session(made) as session:
        add_platform(
            session,
            Registration(
                "Race LMS",
                "https://lms.race.example",
                "race-client",
                "https://lms.race.example/auth",
                "https://lms.race.example/token",
                "https://lms.race.example/jwks",
                (DEPLOYMENT,),
            ),
        )
        session.commit()
    yield made
    made.dispose()


def _race(engine: Engine, first: Callable[[Session], Accepted], second: Callable[[Session], Accepted]) -> tuple[Accepted, Accepted]:
    """``first`` done, uncommitted; ``second`` in a thread, and ``first`` committed just before
    the second's first insert (after all its looking); both results."""
    sessions = make_session_factory(engine)
    about_to_insert, committed = threading.Event(), threading.Event()
    racer: dict[str, Any] = {}

    def hook(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if threading.get_ident() == racer.get("thread") and statement.lstrip().upper().startswith("INSERT"):
            if not about_to_insert.is_set():
                about_to_insert.set()
                assert committed.wait(30), "the first launch never committed"

    def run() -> None:
        racer["thread"] = threading.get_ident()
        try:
            with sessions() as session:
                racer["result"] = second(session)
                session.commit()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            racer["error"] = exc

    event.listen(engine, "before_cursor_execute", hook)
    try:
        with sessions() as session_a:
            a = first(session_a)
            thread = threading.Thread(target=run)
            thread.start()
            reached = about_to_insert.wait(30)
            session_a.commit()
            committed.set()
            thread.join(60)
        assert reached, "the second launch made no insert"
    finally:
        event.remove(engine, "before_cursor_execute", hook)
    if "error" in racer:
        raise racer["error"]
    return a, racer["result"]


def _count(engine: Engine, model: Any) -> int:
    with Session(engine) as session:
        return int(session.scalar(select(func.count()).select_from(model)) or 0)


def test_one_instructor_in_two_tabs_makes_one_course_and_one_account(engine: Engine) -> None:
    a, b = _race(engine, lambda s: _accept(s, "prof", "C1"), lambda s: _accept(s, "prof", "C1"))
    assert a == b
    assert [_count(engine, m) for m in (LtiContext, LtiUser, LtiMember)] == [1, 1, 1]
    assert _count(engine, Course) == 2 and _count(engine, Enrollment) == 1  # the default course, and this one


def test_two_of_the_staff_at_once_make_one_course(engine: Engine) -> None:
    a, b = _race(
        engine, lambda s: _accept(s, "prof", "C2", name="Grace Hopper"), lambda s: _accept(s, "ta", "C2", name="Alan Turing")
    )
    assert a.link_id == b.link_id and a.user_id != b.user_id
    assert (_count(engine, Course), _count(engine, LtiContext), _count(engine, Enrollment)) == (2, 1, 2)


def test_two_new_people_of_one_name_at_once_get_two_names(engine: Engine) -> None:
    with make_session_factory(engine)() as session:  # the course exists: the race is on the login name
        _accept(session, "prof", "C3", name="Grace Hopper")
        session.commit()
    a, b = _race(
        engine,
        lambda s: _accept(s, "ada-1", "C3", roles=(LEARNER,)),
        lambda s: _accept(s, "ada-2", "C3", roles=(LEARNER,)),
    )
    assert (a.login, b.login) == ("ada-lovelace", "ada-lovelace-2") and a.user_id != b.user_id
    with Session(engine) as session:
        assert set(session.scalars(select(User.name).where(User.name.like("ada%")))) == {a.login, b.login}


def test_one_new_learner_in_two_tabs_gets_one_account(engine: Engine) -> None:
    with make_session_factory(engine)() as session:
        _accept(session, "prof", "C4", name="Grace Hopper")
        session.commit()
    a, b = _race(
        engine,
        lambda s: _accept(s, "ada", "C4", roles=(LEARNER,)),
        lambda s: _accept(s, "ada", "C4", roles=(LEARNER,)),
    )
    assert a == b and _count(engine, LtiUser) == 2 and _count(engine, LtiMember) == 2
