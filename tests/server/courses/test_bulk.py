"""``server.courses.bulk`` at the service: the CSV's caps as read, and the work a row costs
(counted in statements, on SQLite and PostgreSQL), so a 2,000-row file stays a bounded load."""

from __future__ import annotations

import pytest
from sqlalchemy import event, select

from server.config import Settings
from server.courses import audit, bulk
from server.courses.service import create_course, enroll
from server.courses.sets import publish
from server.db import make_engine, make_session_factory, transaction
from server.errors import InvalidBulkFile
from server.migrations import upgrade_to_head
from server.models import AuditEvent, Course, Role, ScoreCorrection
from server.users.service import create_user

#: Statements one override row costs, its dry run and its counted scores included (15 measured).
PER_ROW = 18


def test_the_caps_as_read() -> None:
    head = b"learner,exercise,score,reason\n"
    assert len(bulk.read_csv(head + b"ann,gae,1,r\n" * bulk.MAX_ROWS)) == bulk.MAX_ROWS
    with pytest.raises(InvalidBulkFile, match="more than 2000 rows"):
        bulk.read_csv(head + b"ann,gae,1,r\n" * (bulk.MAX_ROWS + 1))
    with pytest.raises(InvalidBulkFile) as too_large:
        bulk.read_csv(head + b"x" * bulk.MAX_CSV_BYTES)
    assert too_large.value.status_code == 413
    [row] = bulk.read_csv(b"learner,exercise\n" + b"a" * 70 + b",gae\n", "excuse")
    assert (len(row.learner), row.action) == (70, "excuse")  # never cut to a login another account may hold


def test_a_row_costs_a_bounded_number_of_statements(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    upgrade_to_head(engine)
    factory = make_session_factory(engine)
    try:
        with transaction(factory) as session:
            course = create_course(session, "load", "Load", "UTC")
            for i in range(20):
                enroll(session, course, create_user(session, f"l{i}", Role.LEARNER, settings.secret_bytes).user, "learner")
            create_user(session, "prof", Role.INSTRUCTOR, settings.secret_bytes)
            publish(session, course, "actor-loss")
        rows = bulk.read_csv(
            ("learner,exercise,score,reason\n" + "".join(f"l{i % 20},actor-loss,{i % 100},r\n" for i in range(200))).encode()
        )
        statements = [0]
        event.listen(engine, "before_cursor_execute", lambda *_: statements.__setitem__(0, statements[0] + 1))
        with factory() as session:
            where = session.scalar(select(Course).where(Course.slug == "load"))
            assert where is not None
            plan = bulk.run(session, where, rows, "prof", apply=True)
            session.commit()
        assert plan.applied and not plan.refused
        assert plan.changed == 20  # 200 rows on 20 pairs: each pair's score changes once, whatever its rows
        assert statements[0] <= PER_ROW * len(rows), statements[0] / len(rows)
        with factory() as session:
            assert len(session.scalars(select(ScoreCorrection)).all()) == 200  # each row's, the replaced ones revoked
            assert len(session.scalars(select(AuditEvent)).all()) == 1 + 200 + 1  # publish, the rows, the import
            where = session.scalar(select(Course).where(Course.slug == "load"))
            assert where is not None
            second = audit.latest(session, where, 2)  # the course page's second page, newest first
            assert (second.total, second.pages, len(second.events)) == (202, 9, audit.PER_PAGE)
            ids = [e.id for e in second.events]
            assert ids == sorted(ids, reverse=True) and audit.latest(session, where, 99).page == 9
    finally:
        engine.dispose()
