"""``/dashboard/extensions``: a course's extensions, overrides and excuses, and bulk changes from a
CSV, for its staff (instructors and TAs); a learner gets the same 404 as for any staff page.

- ``GET /dashboard/extensions?course=``: every extension, override and excuse of the course
  with who, when and why (taken-back corrections too), and the bulk form: a CSV pasted or
  uploaded, with the action of rows that name none.
- ``POST /dashboard/extensions/preview``: the dry run (``server.courses.bulk.run``, rolled
  back): one line per row with what changes and the counted score before and after, refused
  rows with why; when no row is refused, a confirmation form that carries the CSV and the
  digest of the rows shown.
- ``POST /dashboard/extensions/apply``: the same rows again, applied only when their digest is
  the confirmed one (a CSV, or a score it touches, that changed since the preview is refused
  with the new dry run to confirm), all or nothing; then 303 to the overview.

Both posts are ``multipart/form-data`` (a file may come with them), read here under caps before
any of it is parsed (:data:`MAX_BODY_BYTES`, one file, a few fields), after the sender is known
to teach and holding no database connection while the body arrives (``WebInstructorSender``,
as the upload form's ``WebSender``), and each carries the
session's form token beside the ``Origin`` check (``server.dashboard.staff_forms``). What a row
does is the domain services' alone (``server.courses.bulk``, as ``ppo-grader extensions import``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException

from server.config import Settings
from server.courses import bulk
from server.courses.corrections import LedgerLine, ledger
from server.courses.page_course import DashboardCourse
from server.dashboard.staff_forms import staff_form_course
from server.deps import SessionDep, SettingsDep
from server.errors import InvalidBulkFile
from server.models import Course, User
from server.web.deps import WebInstructor, WebInstructorSender
from server.web.errors import PageError
from server.web.html import e, format_score, page, time_html
from server.web.responses import html_response, redirect, viewer_of
from server.web.session import COOKIE_NAME, form_token
from server.web.urls import in_course

router = APIRouter(include_in_schema=False)

OVERVIEW = "/dashboard/extensions"
PREVIEW = "/dashboard/extensions/preview"
APPLY = "/dashboard/extensions/apply"
#: The most a bulk post may carry: the CSV twice (pasted and as a file) and the other fields.
MAX_BODY_BYTES = 2 * bulk.MAX_CSV_BYTES + 16 * 1024
_FIELDS = ("csrf", "course", "kind", "csv", "digest")

_CSS = (
    "form.bulk{display:grid;grid-template-columns:max-content 1fr;gap:.3rem .8rem;max-width:50rem}"
    "form.bulk button{grid-column:2;justify-self:start}form.bulk textarea{font-family:monospace;min-height:8rem}"
    "tr.refused td{color:#7f1d1d}.notice.error{border-color:#b91c1c;color:#7f1d1d}"
)


@dataclass(frozen=True)
class BulkForm:
    """A bulk post as read: its text fields and the uploaded file's bytes (None: no file);
    ``refused``: why the body could not be read (too large, not the form)."""

    fields: dict[str, str]
    file: bytes | None = None
    refused: str | None = None


async def _bulk_form(request: Request) -> BulkForm:
    """The multipart body, read under :data:`MAX_BODY_BYTES` before Starlette parses it (one
    file, a few fields, no part over the CSV's cap)."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "multipart/form-data":
        return BulkForm({}, refused="The form was not sent as the page sends it; reload the page and try again.")
    declared = request.headers.get("content-length", "")
    too_large = BulkForm({}, refused=f"The CSV is over {bulk.MAX_CSV_BYTES // 1024} KiB; split it into smaller files.")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return too_large
    sent = bytes(body)

    async def replay() -> dict[str, object]:
        return {"type": "http.request", "body": sent, "more_body": False}

    try:
        form = await Request(request.scope, replay).form(
            max_files=1, max_fields=len(_FIELDS), max_part_size=bulk.MAX_CSV_BYTES + 1
        )
    # Starlette's own HTTPException (the base of FastAPI's): a text part over ``max_part_size``
    # (a pasted CSV) raises it, not ``MultiPartException``.
    except (MultiPartException, HTTPException):
        return too_large if len(sent) > bulk.MAX_CSV_BYTES else BulkForm({}, refused="The form could not be read.")
    try:
        fields = {k: v for k, v in form.items() if isinstance(v, str) and k in _FIELDS}
        upload = form.get("file")
        data = await upload.read(bulk.MAX_CSV_BYTES + 1) if isinstance(upload, UploadFile) else None
    finally:
        await form.close()
    return BulkForm(fields, data or None)


BulkFormDep = Annotated[BulkForm, Depends(_bulk_form)]


def _what(line: LedgerLine, zone: str) -> str:
    if line.kind == "extension":
        return f"extension to {time_html(line.due_at, zone)}"
    if line.kind == "override":
        return f"override {e(format_score(line.score))}"
    return e(line.kind)


_NONE_GIVEN = '<span class="muted">none given</span>'


def _now(line: LedgerLine, zone: str) -> str:
    if line.revoked_at is None:
        return "in force"
    return f"taken back by {e(line.revoked_by or '')} {time_html(line.revoked_at, zone)}"


def _kinds(chosen: str) -> str:
    labels = {"": "as the CSV says (an action column; else due: extend, score: override)"}
    labels.update({k: k for k in bulk.KINDS})
    return "".join(
        f'<option value="{e(k)}"{" selected" if k == chosen else ""}>{e(label)}</option>' for k, label in labels.items()
    )


def _bulk_form_html(token: str, course: Course, kind: str = "", text: str = "") -> str:
    return (
        f'<section id="bulk"><h2>Bulk changes from a CSV</h2>'
        f'<form class="bulk" id="bulk-form" method="post" action="{PREVIEW}" enctype="multipart/form-data">'
        f'<input type="hidden" name="csrf" value="{e(token)}"><input type="hidden" name="course" value="{e(course.slug)}">'
        f'<label for="b-kind">Action of each row</label><select id="b-kind" name="kind">{_kinds(kind)}</select>'
        f'<label for="b-csv">CSV (paste)</label><textarea id="b-csv" name="csv" spellcheck="false">{e(text)}</textarea>'
        '<label for="b-file">or a file</label><input id="b-file" name="file" type="file" accept=".csv,text/csv">'
        '<button type="submit">Dry run</button></form>'
        f'<p class="muted">Columns: learner, exercise, due (an extension, in {e(course.time_zone)} unless an offset is '
        "given), score (an override, 0-100), reason (the learner reads it), and optionally action (extend, "
        "undo-extend, override, excuse, undo-override, undo-excuse). At most "
        f"{bulk.MAX_ROWS} rows and {bulk.MAX_CSV_BYTES // 1024} KiB. The dry run shows every row's change before "
        "anything is applied; the apply is all or nothing.</p></section>"
    )


def overview_page(
    user: User, course: Course, lines: list[LedgerLine], token: str, *, notice: str = "", error: str = ""
) -> str:
    """The course's extensions and corrections, then the bulk form."""
    zone = course.time_zone
    rows = "".join(
        f'<tr class="{"revoked" if line.revoked_at else "in-force"}" data-kind="{e(line.kind)}">'
        f"<td>{e(line.learner)}</td><td>{e(line.exercise)}</td><td>{_what(line, zone)}</td>"
        f"<td>{e(line.reason) or _NONE_GIVEN}</td><td>{e(line.made_by)}</td>"
        f"<td>{time_html(line.made_at, zone)}</td>"
        f"<td>{_now(line, zone)}</td></tr>"
        for line in lines
    )
    table = (
        '<table id="ledger"><thead><tr><th scope="col">Learner</th><th scope="col">Exercise</th>'
        '<th scope="col">What</th><th scope="col">Why</th><th scope="col">By</th><th scope="col">When</th>'
        f'<th scope="col">Now</th></tr></thead><tbody>{rows}</tbody></table>'
        if lines
        else '<p class="muted" id="ledger-empty">No extension, override or excuse in this course yet.</p>'
    )
    shown = f'<p class="notice" role="status" id="bulk-done">{e(notice)}</p>' if notice else ""
    alert = f'<p class="notice error" role="alert">{e(error)}</p>' if error else ""
    body = f"<h1>Extensions and corrections</h1>{shown}{alert}<h2>In this course</h2>{table}" + _bulk_form_html(
        token, course
    )
    return page("Extensions", body, viewer_of(user, course), current="Extensions", styles=_CSS)


@router.get(OVERVIEW, response_class=HTMLResponse)
def overview(
    request: Request, session: SessionDep, settings: SettingsDep, user: WebInstructor, page_course: DashboardCourse
) -> Response:
    """Every extension, override and excuse of the course, and the bulk form."""
    course = page_course.course
    applied, changed = request.query_params.get("applied", ""), request.query_params.get("changed", "")
    notice = (
        f"Applied {applied} rows; {changed} counted scores changed." if applied.isdigit() and changed.isdigit() else ""
    )
    token = form_token(request.cookies.get(COOKIE_NAME) or "", settings.secret_bytes)
    body = overview_page(user, course, ledger(session, course), token, notice=notice)
    return page_course.remember(html_response(body), request)


def _plan_page(user: User, course: Course, plan: bulk.BulkPlan, fields: dict[str, str], text: str, note: str) -> str:
    rows = "".join(
        f'<tr class="{"refused" if r.refused else "ok"}" data-line="{r.row.line}">'
        f'<td class="num">{r.row.line}</td><td>{e(r.row.learner)}</td><td>{e(r.row.exercise)}</td>'
        f"<td>{e(r.row.action)}</td>"
        + (
            f'<td colspan="2" class="why">Refused: {e(r.refused)}</td>'
            if r.refused
            else f'<td class="change">{e(r.change)}</td><td class="scores">{e(r.before)} → {e(r.after)}</td>'
        )
        + "</tr>"
        for r in plan.results
    )
    refused = len(plan.refused)
    summary = (
        f'<p id="plan-summary" data-rows="{len(plan.results)}" data-refused="{refused}" data-changed="{plan.changed}">'
        + (
            f"<b>{refused}</b> of {len(plan.results)} rows refused: fix or remove them, then run the dry run again. "
            "Nothing is applied while a row is refused."
            if refused
            else f"{len(plan.results)} rows; <b>{plan.changed}</b> counted scores would change. Nothing has changed yet."
        )
        + "</p>"
    )
    confirm = (
        ""
        if refused
        else f'<form id="apply-form" method="post" action="{APPLY}" enctype="multipart/form-data">'
        f'<input type="hidden" name="csrf" value="{e(fields.get("csrf", ""))}">'
        f'<input type="hidden" name="course" value="{e(course.slug)}">'
        f'<input type="hidden" name="kind" value="{e(fields.get("kind", ""))}">'
        f'<input type="hidden" name="csv" value="{_kept(text)}">'
        f'<input type="hidden" name="digest" value="{e(plan.digest)}">'
        '<button type="submit">Apply these rows</button></form>'
    )
    notice = f'<p class="notice error" role="alert">{e(note)}</p>' if note else ""
    body = (
        f"<h1>Dry run: {len(plan.results)} rows</h1>{notice}{summary}"
        '<table id="plan"><thead><tr><th scope="col" class="num">Line</th><th scope="col">Learner</th>'
        '<th scope="col">Exercise</th><th scope="col">Action</th><th scope="col">What changes</th>'
        f'<th scope="col">Counted score before → after</th></tr></thead><tbody>{rows}</tbody></table>'
        f'{confirm}<p><a href="{e(in_course(OVERVIEW, course.slug))}">Back to the extensions</a></p>'
    )
    return page("Dry run", body, viewer_of(user, course), current="Extensions", styles=_CSS)


def _kept(text: str) -> str:
    """``text`` as an attribute value that comes back exactly: escaped, and its line ends as
    character references (a parser turns a literal CR LF into LF, which would change a quoted cell)."""
    return e(text).replace("\r", "&#13;").replace("\n", "&#10;")


def _rows(form: BulkForm) -> tuple[list[bulk.BulkRow], str]:
    """The CSV's rows (the file when one came, else the pasted text) and its text."""
    data = form.file if form.file is not None else form.fields.get("csv", "").encode("utf-8", "replace")
    rows = bulk.read_csv(data, form.fields.get("kind") or None)
    return rows, data.decode("utf-8-sig")


def _unread(form: BulkForm, user: User) -> None:
    """A body that could not be read is refused before anything else (its fields, the form
    token among them, are unknown: nothing is done, and the page says only why)."""
    if form.refused is not None:
        status = 413 if "KiB" in form.refused else 400
        raise PageError(status, "Not read", form.refused, user, link=("Back to the extensions", OVERVIEW))


def _refused_page(user: User, course: Course, token: str, status: int, message: str, session: SessionDep) -> Response:
    body = overview_page(user, course, ledger(session, course), token, error=message)
    return html_response(body, status_code=status)


def _read_form(
    request: Request, user: User, form: BulkForm, session: Session, settings: Settings
) -> tuple[User, Course, list[bulk.BulkRow], str] | Response:
    """What the dry run and the apply both read first: the sender (in this session: the
    header's staff links), the course their form names (checked: ``staff_form_course``) and
    the CSV's rows and text, or the page that refuses an unreadable CSV."""
    user = session.get(User, user.id) or user
    _unread(form, user)
    course = staff_form_course(request, form.fields, session, settings.secret_bytes, user, "extensions")
    try:
        rows, text = _rows(form)
    except InvalidBulkFile as exc:
        return _refused_page(user, course, form.fields.get("csrf", ""), exc.status_code, exc.detail, session)
    return user, course, rows, text


@router.post(PREVIEW)
def preview(
    request: Request, user: WebInstructorSender, form: BulkFormDep, session: SessionDep, settings: SettingsDep
) -> Response:
    """The dry run of a CSV: every row's change, or why it is refused; nothing is kept."""
    read = _read_form(request, user, form, session, settings)
    if isinstance(read, Response):
        return read
    user, course, rows, text = read
    plan = bulk.run(session, course, rows, user.name)
    session.rollback()
    return html_response(_plan_page(user, course, plan, form.fields, text, ""), 200 if not plan.refused else 422)


@router.post(APPLY)
def apply(
    request: Request, user: WebInstructorSender, form: BulkFormDep, session: SessionDep, settings: SettingsDep
) -> Response:
    """Apply the confirmed rows, only when they are the ones the dry run showed; then the overview."""
    read = _read_form(request, user, form, session, settings)
    if isinstance(read, Response):
        return read
    user, course, rows, text = read
    digest = form.fields.get("digest", "")
    plan = bulk.run(session, course, rows, user.name, apply=True, expected_digest=digest)
    if not plan.applied:
        session.rollback()
        note = (
            "Nothing was applied: a row is refused."
            if plan.refused
            else "Nothing was applied: the CSV, or a score it touches, changed since its dry run. "
            "Here is the dry run of it now; confirm again to apply it."
        )
        return html_response(_plan_page(user, course, plan, form.fields, text, note), 409)
    session.commit()
    return redirect(in_course(OVERVIEW, course.slug, applied=len(plan.results), changed=plan.changed))
