"""Corrections on a learner's page: the record every reader sees, and the instructors' forms.

- The record (learner and instructors alike): every override and excuse of the course, who
  made it, when and why, and when it was taken back.
- The forms (the course's instructors only): set an override, excuse an exercise, take
  either back, grant an extension or take it back (each an event of the audit log, written by
  the services: ``server.courses.audit``). Each posts to ``POST /dashboard/corrections`` with the
  session's form token (``server.web.session.form_token``) beside the ``Origin`` check, so a
  page of another site cannot make one; then 303 back to the learner's page in the course.

What a correction does to the score is ``server.courses.counted``'s alone; this module only
records it through ``server.courses.corrections`` and ``server.courses.sets``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from fastapi import APIRouter, Request
from fastapi.responses import Response

from server.courses import corrections, sets
from server.courses.service import read_time
from server.dashboard.staff_forms import staff_form_course
from server.deps import SessionDep, SettingsDep
from server.errors import GraderError
from server.models import CorrectionKind, Course, ScoreCorrection, User
from server.web.deps import WebInstructor
from server.web.errors import PageBadRequest, PageError
from server.web.html import Viewer, e, format_score, time_html
from server.web.responses import FormFields, redirect
from server.web.urls import learner_url

router = APIRouter(include_in_schema=False)

ACTION = "/dashboard/corrections"
ACTIONS = ("override", "excuse", "undo-override", "undo-excuse", "extend", "undo-extend")


def corrections_section(
    viewer: Viewer, learner: str, titles: dict[str, str], rows: Sequence[ScoreCorrection], form_token: str | None
) -> str:
    """The record of corrections, then (``form_token`` given: the viewer teaches the course) the forms."""
    zone = viewer.zone
    lines = "".join(
        f'<tr class="{"revoked" if r.revoked_at else "in-force"}"><td>{e(titles.get(r.exercise, r.exercise))}</td>'
        f"<td>{e(r.kind)}{e(' ' + format_score(r.score)) if r.score is not None else ''}</td>"
        f"<td>{e(r.reason)}</td><td>{e(r.made_by)}</td><td>{time_html(r.made_at, zone)}</td>"
        f"<td>{('taken back by ' + e(r.revoked_by or '') + ' ' + time_html(r.revoked_at, zone)) if r.revoked_at else 'in force'}</td></tr>"
        for r in rows
    )
    record = (
        '<h2>Corrections</h2><table id="corrections"><thead><tr><th scope="col">Exercise</th><th scope="col">What</th>'
        '<th scope="col">Why</th><th scope="col">By</th><th scope="col">When</th><th scope="col">Now</th></tr></thead>'
        f"<tbody>{lines}</tbody></table>"
        if rows
        else ""
    )
    if form_token is None or viewer.course is None:
        return record
    options = "".join(f'<option value="{e(slug)}">{e(title)}</option>' for slug, title in titles.items())
    actions = "".join(
        f'<option value="{a}">{label}</option>'
        for a, label in (
            ("override", "Override the score"),
            ("excuse", "Excuse (out of the average)"),
            ("undo-override", "Take the override back"),
            ("undo-excuse", "Take the excuse back"),
            ("extend", "Grant an extension"),
            ("undo-extend", "Take the extension back"),
        )
    )
    form = (
        f'<section id="correct"><h2>Correct a score</h2><form id="correction-form" method="post" action="{ACTION}">'
        f'<input type="hidden" name="csrf" value="{e(form_token)}">'
        f'<input type="hidden" name="course" value="{e(viewer.course.slug)}">'
        f'<input type="hidden" name="learner" value="{e(learner)}">'
        f'<label for="c-exercise">Exercise</label><select id="c-exercise" name="exercise">{options}</select>'
        f'<label for="c-action">Action</label><select id="c-action" name="action">{actions}</select>'
        '<label for="c-score">Score (override)</label><input id="c-score" name="score" inputmode="decimal" maxlength="8">'
        f'<label for="c-due">New due date (extension, {e(zone)})</label>'
        '<input id="c-due" name="due" type="datetime-local">'
        '<label for="c-reason">Reason (the learner reads it)</label><input id="c-reason" name="reason" maxlength="500">'
        '<button type="submit">Apply</button></form>'
        '<p class="muted">Every correction is recorded with who, when and why, shown to the learner, and can be '
        "taken back. An extension recomputes the late penalty of the submissions it now covers.</p></section>"
    )
    return record + form


@router.post(ACTION)
def correct(
    request: Request, form: FormFields, session: SessionDep, settings: SettingsDep, user: WebInstructor
) -> Response:
    """Apply one correction from the learner page's form, then go back to that page."""
    fields = form or {}
    course = staff_form_course(request, fields, session, settings.secret_bytes, user, "learner's")
    learner, exercise, action = fields.get("learner", "")[:64], fields.get("exercise", "")[:64], fields.get("action")
    back = learner_url(learner, course.slug)
    if action not in ACTIONS:
        raise PageBadRequest(user, f"Choose one of: {', '.join(ACTIONS)}.")
    reason = fields.get("reason", "")
    try:
        if action == "override":
            corrections.override(
                session, course, learner, exercise, _score(user, fields.get("score")), reason, user.name
            )
        elif action == "excuse":
            corrections.excuse(session, course, learner, exercise, reason, user.name)
        elif action == "extend":
            due = _due(user, course, fields.get("due"))
            sets.grant_extension(session, course, learner, exercise, due, actor=user.name, reason=reason)
        elif action == "undo-extend":
            sets.remove_extension(session, course, learner, exercise, actor=user.name)
        else:
            kind = CorrectionKind.OVERRIDE if action == "undo-override" else CorrectionKind.EXCUSE
            corrections.take_back(session, course, learner, exercise, kind, user.name)
    except GraderError as exc:  # the same refusals as the CLI and the API, in their words
        raise PageError(exc.status_code, "Not applied", exc.detail, user, link=("Back to the learner", back)) from None
    session.commit()
    return redirect(back)


def _score(user: User, text: str | None) -> float:
    try:
        value = float((text or "").strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise PageBadRequest(user, "An override needs a score from 0 to 100.")
    return value


def _due(user: User, course: Course, text: str | None) -> datetime:
    try:
        moment = datetime.fromisoformat((text or "").strip())
    except ValueError:
        raise PageBadRequest(user, "An extension needs a new due date.") from None
    due = read_time(moment, course)
    assert due is not None
    return due
