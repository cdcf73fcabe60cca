"""``/dashboard/assignments``: a course's exercise set, for its instructors (and TAs: LMS staff).

- ``GET /dashboard/assignments?course=``: every catalogue exercise with its set state
  (published or not, release/due/close dates in the course's zone, late rule, attempt limit,
  feedback policy, the version served) and a form per exercise.
- ``POST /dashboard/assignments``: publish (or edit) one exercise, or take it out of the set;
  release its held-back (``hidden-until-due``) scores now, or hold them again.
  Each post carries the session's form token (``server.web.session.form_token``) beside the
  ``Origin`` check, as the corrections forms do (``server.dashboard.corrections``).

A change of the due date or late rule re-prices the submissions so far: the first post then
answers a confirmation page with what :func:`server.courses.sets.preview` counts (the same
re-pricing as the apply, run without writing); its button posts again with ``confirm=1``.
What a set is and what publishing does is ``server.courses.sets``'s alone (the CLI's
``ppo-grader sets`` calls the same functions); who did it goes to that service's log line.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import datetime

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from server.catalogue.service import list_exercises
from server.courses import sets
from server.courses.feedback_policy import PolicyKind
from server.courses.page_course import DashboardCourse
from server.courses.service import read_time
from server.dashboard.staff_forms import staff_form_course
from server.deps import SessionDep, SettingsDep
from server.errors import GraderError
from server.models import DEFAULT_COURSE_ID, Course, SetEntry, User
from server.times import input_value
from server.web.deps import WebInstructor
from server.web.html import e, page, time_html
from server.web.responses import FormFields, html_response, redirect, viewer_of
from server.web.session import COOKIE_NAME, form_token
from server.web.urls import in_course

router = APIRouter(include_in_schema=False)

ASSIGNMENTS = "/dashboard/assignments"
UNITS = ("day", "hour")

_CSS = (
    "section.assignment{border:1px solid #c7cfdb;border-radius:.5rem;padding:.5rem 1rem;margin:1rem 0}"
    "section.assignment form{display:grid;grid-template-columns:max-content 1fr;gap:.3rem .8rem;max-width:44rem}"
    "section.assignment form button{grid-column:2;justify-self:start}"
    ".notice.error{border-color:#b91c1c;color:#7f1d1d}"
)


@dataclass(frozen=True)
class SetForm:
    """One exercise's form, read and checked: the keyword arguments :func:`server.courses.sets.publish`
    and :func:`~server.courses.sets.preview` take, field for field."""

    release_at: datetime | None
    due_at: datetime | None
    close_at: datetime | None
    penalty_percent: float
    penalty_unit: str
    max_attempts: int | None
    feedback_policy: str
    version: str | None


class FormInvalid(Exception):
    """A field the form cannot use; its text says which and what it must be."""


def _local_value(moment: datetime | None, course: Course) -> str:
    """A ``datetime-local`` input's value: ``moment`` in the course's zone, to the second."""
    return input_value(moment, course.time_zone)


def _when(text: str | None, course: Course, label: str) -> datetime | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise FormInvalid(f"The {label} date {text[:40]!r} is not a date and time (e.g. 2026-12-07T09:00).") from None
    return read_time(moment, course)


def read_form(fields: dict[str, str], course: Course) -> SetForm:
    """The publish form's fields, read in the course's zone; ``FormInvalid`` for one it cannot use
    (the service then makes its own checks: dates in order, a policy it knows...)."""
    penalty_text = (fields.get("penalty") or "0").strip()
    try:
        penalty = float(penalty_text)
    except ValueError:
        penalty = math.nan
    if not math.isfinite(penalty) or not 0 <= penalty <= 100:
        raise FormInvalid(f"The late penalty must be a percent from 0 to 100, not {penalty_text[:20]!r}.")
    unit = fields.get("per") or "day"
    if unit not in UNITS:
        raise FormInvalid("The late penalty is per day or per hour.")
    attempts_text = (fields.get("attempts") or "").strip()
    attempts: int | None = None
    if attempts_text:
        if not attempts_text.isdigit() or not 1 <= int(attempts_text) <= 10_000:
            raise FormInvalid(
                f"The attempt limit must be a whole number from 1 (empty: no limit), not {attempts_text[:20]!r}."
            )
        attempts = int(attempts_text)
    return SetForm(
        _when(fields.get("release"), course, "release"),
        _when(fields.get("due"), course, "due"),
        _when(fields.get("close"), course, "close"),
        penalty,
        unit,
        attempts,
        (fields.get("feedback") or "full").strip()[:32],
        (fields.get("version") or "").strip()[:16] or None,
    )


def reprices(entry: SetEntry | None, form: SetForm) -> bool:
    """Whether the form changes what the submissions so far are priced by (the due date or the
    late rule), so that it asks for a confirmation first."""
    if entry is None:
        return True  # a (re)published set prices every submission made to it so far
    return (entry.due_at, entry.penalty_percent, entry.penalty_unit) != (
        form.due_at,
        form.penalty_percent,
        form.penalty_unit,
    )


def _state(entry: SetEntry | None, course: Course) -> str:
    zone_name = course.time_zone
    if entry is None:
        opened = " (open to every learner without dates: the default course)" if course.id == DEFAULT_COURSE_ID else ""
        return f'<p class="state">Not published{e(opened)}.</p>'
    dates = "".join(
        f'<dt>{label}</dt><dd class="{cls}">{time_html(moment, zone_name)}</dd>'
        for label, cls, moment in (
            ("Opens", "release", entry.release_at),
            ("Due", "due", entry.due_at),
            ("Closes", "close", entry.close_at),
        )
    )
    return (
        f'<p class="state">Published.</p><dl>{dates}<dt>Late rule</dt><dd class="late">{e(sets.late_rule(entry))}</dd>'
        f'<dt>Attempts</dt><dd class="attempts">{e(entry.max_attempts or "no limit")}</dd>'
        f'<dt>Feedback</dt><dd class="policy">{e(entry.feedback_policy)}</dd>'
        f'<dt>Version served</dt><dd class="version">{e(entry.content_version or "built-in")}</dd></dl>'
    )


def _hidden(token: str, course: Course, slug: str) -> str:
    return (
        f'<input type="hidden" name="csrf" value="{e(token)}">'
        f'<input type="hidden" name="course" value="{e(course.slug)}">'
        f'<input type="hidden" name="exercise" value="{e(slug)}">'
    )


def _form(token: str, course: Course, slug: str, entry: SetEntry | None, fields: dict[str, str] | None) -> str:
    """The publish form, filled with the entry (or, after a refusal, with what was sent)."""
    if fields is not None:
        value = {
            k: fields.get(k, "")
            for k in ("release", "due", "close", "penalty", "per", "attempts", "feedback", "version")
        }
    elif entry is not None:
        value = {
            "release": _local_value(entry.release_at, course),
            "due": _local_value(entry.due_at, course),
            "close": _local_value(entry.close_at, course),
            "penalty": f"{entry.penalty_percent:g}",
            "per": entry.penalty_unit,
            "attempts": str(entry.max_attempts or ""),
            "feedback": entry.feedback_policy,
            "version": entry.content_version or "",
        }
    else:
        value = {
            "release": "",
            "due": "",
            "close": "",
            "penalty": "0",
            "per": "day",
            "attempts": "",
            "feedback": "full",
            "version": "",
        }
    units = "".join(f'<option value="{u}"{" selected" if value["per"] == u else ""}>per {u}</option>' for u in UNITS)
    zone_name = e(course.time_zone)
    f = f"f-{e(slug)}"
    publish = (
        f'<form class="publish" method="post" action="{ASSIGNMENTS}">{_hidden(token, course, slug)}'
        '<input type="hidden" name="action" value="publish">'
        f'<label for="{f}-release">Opens ({zone_name})</label><input id="{f}-release" name="release" type="datetime-local" step="1" value="{e(value["release"])}">'
        f'<label for="{f}-due">Due ({zone_name})</label><input id="{f}-due" name="due" type="datetime-local" step="1" value="{e(value["due"])}">'
        f'<label for="{f}-close">Closes ({zone_name})</label><input id="{f}-close" name="close" type="datetime-local" step="1" value="{e(value["close"])}">'
        f'<label for="{f}-penalty">Late penalty (%)</label><input id="{f}-penalty" name="penalty" inputmode="decimal" maxlength="8" value="{e(value["penalty"])}">'
        f'<label for="{f}-per">Per</label><select id="{f}-per" name="per">{units}</select>'
        f'<label for="{f}-attempts">Attempt limit (empty: none)</label><input id="{f}-attempts" name="attempts" inputmode="numeric" maxlength="6" value="{e(value["attempts"])}">'
        f'<label for="{f}-feedback">Feedback (full, score, hidden-until-due, tokens:N)</label><input id="{f}-feedback" name="feedback" maxlength="32" value="{e(value["feedback"])}">'
        f'<label for="{f}-version">Version (empty: the current verified one)</label><input id="{f}-version" name="version" maxlength="16" value="{e(value["version"])}">'
        f'<button type="submit">{"Save" if entry is not None else "Publish"}</button></form>'
    )
    remove = (
        f'<form class="unpublish inline" method="post" action="{ASSIGNMENTS}">{_hidden(token, course, slug)}'
        '<input type="hidden" name="action" value="unpublish"><button type="submit">Unpublish</button></form>'
        if entry is not None
        else ""
    )
    return publish + remove + _release_form(token, course, slug, entry)


def _release_form(token: str, course: Course, slug: str, entry: SetEntry | None) -> str:
    """The button that releases the held-back scores now, while the set holds them until the
    due date; else, when the set has a due date, the one that holds them until it."""
    if entry is None:
        return ""
    if entry.feedback_policy == PolicyKind.HIDDEN_UNTIL_DUE.value:
        action, label = "release", "Release hidden scores now"
    elif entry.due_at is not None:
        action, label = "hold", "Hold scores until the due date"
    else:
        return ""
    return (
        f'<form class="{action} inline" method="post" action="{ASSIGNMENTS}">{_hidden(token, course, slug)}'
        f'<input type="hidden" name="action" value="{action}"><button type="submit">{label}</button></form>'
    )


def assignments_page(
    session: Session,
    request: Request,
    user: User,
    course: Course,
    secret: bytes,
    *,
    notice: str | None = None,
    error: tuple[str, str, dict[str, str]] | None = None,
) -> str:
    """Every catalogue exercise with its set state and form; ``error``: (exercise, message, the
    fields sent), shown at that exercise with its form filled as sent."""
    token = form_token(request.cookies.get(COOKIE_NAME) or "", secret)
    published = {x.exercise: x for x in sets.entries(session, course)}
    parts = []
    for summary in list_exercises():
        slug = summary.slug
        entry = published.get(slug)
        refused = error is not None and error[0] == slug
        alert = f'<p class="notice error" role="alert">{e(error[1])}</p>' if error is not None and refused else ""
        parts.append(
            f'<section class="assignment" id="set-{e(slug)}" data-exercise="{e(slug)}"'
            f' data-published="{"yes" if entry is not None else "no"}">'
            f'<h2>{e(summary.title)} <small class="muted">{e(slug)}</small></h2>{alert}{_state(entry, course)}'
            f"{_form(token, course, slug, entry, error[2] if error is not None and refused else None)}</section>"
        )
    shown = f'<p class="notice" role="status">{e(notice)}</p>' if notice else ""
    top = (
        f'<p class="notice error" role="alert">{e(error[0])}: {e(error[1])} '
        f'<a href="#set-{e(error[0])}">To its form</a></p>'
        if error is not None
        else ""
    )
    body = (
        f"<h1>Assignments</h1>{top}{shown}"
        f'<p class="muted">Dates are in the course\'s zone ({e(course.time_zone)}). Changing a due date or late rule '
        "re-prices the submissions made so far: you see how many counted scores change before it is applied.</p>"
        + "".join(parts)
    )
    return page("Assignments", body, viewer_of(user, course), current="Assignments", styles=_CSS)


@router.get(ASSIGNMENTS, response_class=HTMLResponse)
def assignments(
    request: Request, session: SessionDep, settings: SettingsDep, user: WebInstructor, page_course: DashboardCourse
) -> Response:
    """The course's set, one form per catalogue exercise."""
    course = page_course.course
    done = request.query_params.get("done")
    notice = None
    if done:
        count = request.query_params.get("counted", "")
        notice = f"Saved {done[:64]}." + (f" {count[:6]} counted scores changed." if count.isdigit() else "")
    body = assignments_page(session, request, user, course, settings.secret_bytes, notice=notice)
    return page_course.remember(html_response(body), request)


def _confirm_page(user: User, course: Course, slug: str, fields: dict[str, str], repriced: sets.Repricing) -> str:
    kept = "".join(
        f'<input type="hidden" name="{name}" value="{e(fields.get(name, ""))}">'
        for name in (
            "csrf",
            "course",
            "exercise",
            "release",
            "due",
            "close",
            "penalty",
            "per",
            "attempts",
            "feedback",
            "version",
        )
    )
    body = (
        f"<h1>Confirm: {e(slug)}</h1>"
        f'<p id="reprice-count" data-counted="{repriced.counted}" data-rewritten="{repriced.rewritten}">'
        f"This change re-prices the submissions made so far: <b>{repriced.counted}</b> "
        f"submission{'s' if repriced.counted != 1 else ''}' counted score would change "
        f"({repriced.rewritten} would get a new lateness or penalty).</p>"
        f'<form method="post" action="{ASSIGNMENTS}">{kept}<input type="hidden" name="action" value="publish">'
        '<input type="hidden" name="confirm" value="1"><button type="submit">Confirm and apply</button></form>'
        f'<p><a href="{e(in_course(ASSIGNMENTS, course.slug))}#set-{e(slug)}">Cancel</a></p>'
    )
    return page("Confirm", body, viewer_of(user, course), current="Assignments")


@router.post(ASSIGNMENTS)
def change_set(
    request: Request, form: FormFields, session: SessionDep, settings: SettingsDep, user: WebInstructor
) -> Response:
    """Publish, edit (after a confirmation when it re-prices) or unpublish one exercise."""
    fields = form or {}
    course = staff_form_course(request, fields, session, settings.secret_bytes, user, "assignments")
    slug, action = (fields.get("exercise") or "")[:64], fields.get("action")

    def refused(status: int, text: str) -> Response:
        body = assignments_page(session, request, user, course, settings.secret_bytes, error=(slug, text, fields))
        return html_response(body, status_code=status)

    if slug not in {x.slug for x in list_exercises()}:
        return refused(404, f"There is no exercise {slug!r} in the catalogue.")
    try:
        if action == "unpublish":
            sets.unpublish(session, course, slug, actor=user.name)
            session.commit()
            return redirect(in_course(ASSIGNMENTS, course.slug, done=slug))
        if action in ("release", "hold"):
            sets.release_scores(session, course, slug, hold=action == "hold", actor=user.name)
            session.commit()
            return redirect(in_course(ASSIGNMENTS, course.slug, done=slug) + f"#set-{slug}")
        if action != "publish":
            return refused(400, "Choose publish, unpublish, release or hold.")
        try:
            wanted = read_form(fields, course)
        except FormInvalid as exc:
            return refused(400, str(exc))
        entry = session.get(SetEntry, (course.id, slug))
        if fields.get("confirm") != "1" and reprices(entry, wanted):
            repriced = sets.preview(session, course, slug, **asdict(wanted))
            if entry is not None or repriced.rewritten:  # a new set over no submission: nothing to confirm
                return html_response(_confirm_page(user, course, slug, fields, repriced))
        done = sets.publish(session, course, slug, **asdict(wanted), actor=user.name)
    except GraderError as exc:  # the same refusals as the CLI and the API, in their words
        session.rollback()
        return refused(exc.status_code, exc.detail)
    session.commit()
    return redirect(in_course(ASSIGNMENTS, course.slug, done=slug, counted=done.repriced.counted) + f"#set-{slug}")
