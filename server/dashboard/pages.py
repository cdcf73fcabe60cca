"""HTML of the dashboard: the class, one exercise (charts), the learners of a mistake,
the learner list, one learner, one submission. Plain strings; every value through ``e()``.

The shell, charts and escaping are the HTML kit's (``server.web``); a submission's feedback is
the submissions domain's one renderer (``server.submissions.report_page``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from server.courses.audit import AuditPage
from server.courses.counted import describe, late_by
from server.courses.feedback_policy import View, shows_outcome
from server.courses.schemas import ExerciseWindow
from server.dashboard.service import (
    ExerciseLine,
    ExerciseView,
    LearnerExercise,
    LearnerLine,
    MistakeCount,
    MistakeHolder,
    SubmissionLine,
)
from server.dashboard.upload import LateAsk
from server.lti.platforms import failure_text
from server.models import LtiPlatform, Submission
from server.regrades.pages import regrade_notes_html
from server.review.pages import REVIEW_CSS
from server.submissions.report_page import FEEDBACK_CSS, feedback_section
from server.submissions.schemas import SubmissionPublic
from server.web.charts import Bar, columns, horizontal_bars
from server.web.html import Viewer, e, format_score, page, time_html
from server.web.urls import (
    DASHBOARD,
    STAFF_FORM,
    exercise_url,
    in_course,
    learner_url,
    learners_url,
    mistake_url,
    starter_url,
    submission_url,
)


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _tiles(items: Sequence[tuple[str, str]]) -> str:
    return '<ul class="tiles">' + "".join(f"<li><b>{e(v)}</b>{e(k)}</li>" for k, v in items) + "</ul>"


# --- the class -----------------------------------------------------------------------------


def course_picker(course: tuple[str, str], courses: Sequence[tuple[str, str]]) -> str:
    """Links to the other courses the viewer teaches (the header names the one shown)."""
    slug, _title = course
    others = " · ".join(f'<a href="{e(in_course(DASHBOARD, s))}">{e(t)}</a>' for s, t in courses if s != slug)
    return f'<p id="course" class="muted">Other courses you teach: {others}</p>' if others else ""


def class_page(
    viewer: Viewer,
    titles: dict[str, str],
    lines: list[ExerciseLine],
    mistakes: list[MistakeCount],
    *,
    mark: str | None = None,
    course: tuple[str, str] = ("default", "Default course"),
    courses: Sequence[tuple[str, str]] = (),
    lms_failure: LtiPlatform | None = None,
    audit: AuditPage | None = None,
    staff: StaffView | None = None,
    open_reviews: int = 0,
) -> str:
    """Every exercise of one course (its published set only) with its most common
    mistake; the class's top ones first; then ``audit``, the course's latest staff actions
    (the page is its staff's only). ``open_reviews``: the course's open review requests, linked
    to their page (``server.review.page_router``). ``lms_failure``: the course's LMS platform, whose
    token or key set URL failed last (``server.lti.platforms.service_failed``)."""
    c = course[0]
    if mistakes:
        top = mistakes[0]
        callout = (
            '<div class="callout" id="top-mistake"><b>Most common mistake in the class:</b> '
            f'<a href="{e(mistake_url(top.exercise, top.mistake, c))}">{e(top.mistake_title)}</a> '
            f"in {e(titles.get(top.exercise, top.exercise))}, held by {e(_plural(top.learners, 'learner'))}. "
            "Follow the link to see who.</div>"
        )
    else:
        callout = '<p class="muted">No graded submission has named a mistake yet.</p>'
    if open_reviews:
        callout = (
            f'<p class="notice" id="open-reviews"><a href="{e(in_course("/dashboard/reviews", c))}">'
            f"{e(_plural(open_reviews, 'review request'))} open</a>: learners are waiting for an answer.</p>"
        ) + callout
    rows = "".join(
        "<tr>"
        f'<td><a href="{e(exercise_url(line.slug, c))}">{e(titles.get(line.slug, line.slug))}</a></td>'
        f'<td class="num">{line.attempts}</td><td class="num">{line.learners_attempted}</td>'
        f'<td class="num">{line.learners_solved}</td>'
        + (
            f'<td><a href="{e(mistake_url(line.slug, line.top_mistake or line.top_mistake_title, c))}">'
            f"{e(line.top_mistake_title)}</a></td>"
            f'<td class="num">{line.top_mistake_learners}</td>'
            if line.top_mistake_title
            else '<td class="muted">none named</td><td class="num">0</td>'
        )
        + "</tr>"
        for line in lines
    )
    table = (
        '<table id="exercises"><thead><tr><th scope="col">Exercise</th><th scope="col" class="num">Attempts</th>'
        '<th scope="col" class="num">Learners attempted</th><th scope="col" class="num">Solved</th>'
        '<th scope="col">Most common mistake</th><th scope="col" class="num">Learners</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )
    ranked = "".join(
        f'<tr><td><a href="{e(mistake_url(m.exercise, m.mistake, c))}">{e(m.mistake_title)}</a></td>'
        f'<td>{e(titles.get(m.exercise, m.exercise))}</td><td class="num">{m.learners}</td></tr>'
        for m in mistakes[:10]
    )
    top_table = (
        '<h2>Top mistakes across exercises</h2><table id="mistakes"><thead><tr><th scope="col">Mistake</th>'
        f'<th scope="col">Exercise</th><th scope="col" class="num">Learners</th></tr></thead><tbody>{ranked}</tbody></table>'
        if mistakes
        else ""
    )
    body = (
        "<h1>The class at a glance</h1>"
        f"{course_picker(course, courses)}{_lms_failure(lms_failure, viewer, c)}{callout}{table}{top_table}"
        f'<h2>Downloads</h2><p><a href="{e(in_course("/dashboard/gradebook.csv", c))}">Gradebook, one row per learner and exercise (CSV)</a> · '
        f'<a href="{e(in_course("/dashboard/gradebook-canvas.csv", c))}">for Canvas import</a> '
        f'(<a href="{e(in_course("/dashboard/gradebook-canvas.csv", c, login_column="sis-user-id"))}">logins are '
        "SIS User IDs</a>) · "
        f'<a href="{e(in_course("/dashboard/gradebook-moodle.csv", c))}">for Moodle import</a>: one row per learner (CSV); '
        "excused: EX in Canvas, no grade in Moodle; never attempted: no grade, not 0</p>"
        '<p class="muted">Learners only; "solved" means the score that counts (after late penalties and '
        "corrections) is 100; a mistake counts a learner once, however often they hit it. "
        "This page reloads by itself when a verdict arrives.</p>"
        + (staff_section(staff, c) if staff is not None else "")
        + (audit_section(audit, c, viewer.zone) if audit is not None else "")
    )
    return page("Class", body, viewer, current="Class", live=mark)


@dataclass(frozen=True)
class StaffView:
    """The course page's staff section: (login, display name, ``instructor`` or ``ta``) by login,
    the form token when the viewer may change them (None: a TA, who only reads the list), and
    what the last change did or why it was refused."""

    members: Sequence[tuple[str, str, str]]
    csrf: str | None
    notice: str = ""
    error: str = ""


def staff_section(staff: StaffView, course: str) -> str:
    """Who teaches the course; for its instructors, a form to add a TA and a button to remove each."""
    hidden = f'<input type="hidden" name="csrf" value="{e(staff.csrf or "")}"><input type="hidden" name="course" value="{e(course)}">'
    rows = "".join(
        f'<tr data-login="{e(login)}" data-role="{e(role)}"><td>{e(login)}</td><td>{e(name)}</td>'
        f"<td>{'TA' if role == 'ta' else 'instructor'}</td><td>"
        + (
            f'<form class="inline" method="post" action="{STAFF_FORM}">{hidden}'
            f'<input type="hidden" name="action" value="remove"><input type="hidden" name="login" value="{e(login)}">'
            f'<button type="submit">Remove TA {e(login)}</button></form>'
            if staff.csrf is not None and role == "ta"
            else ""
        )
        + "</td></tr>"
        for login, name, role in staff.members
    )
    table = (
        '<table id="staff"><thead><tr><th scope="col">Login</th><th scope="col">Name</th><th scope="col">Role</th>'
        f'<th scope="col"></th></tr></thead><tbody>{rows}</tbody></table>'
        if staff.members
        else '<p class="muted">No staff enrolled in this course.</p>'
    )
    form = (
        f'<form id="add-ta" method="post" action="{STAFF_FORM}">{hidden}<input type="hidden" name="action" value="add">'
        '<label for="ta-login">Add a TA by login</label> '
        '<input id="ta-login" name="login" required maxlength="64" autocomplete="off"> '
        '<button type="submit">Add TA</button></form>'
        '<p class="muted">A TA sees and does everything on the course\'s staff pages except change its staff; '
        "removing one ends their access at once and keeps what they did in the audit log.</p>"
        if staff.csrf is not None
        else '<p class="muted" id="staff-readonly">Only the course\'s instructors add or remove its TAs.</p>'
    )
    shown = (f'<p class="notice" role="status">{e(staff.notice)}</p>' if staff.notice else "") + (
        f'<p class="notice error" role="alert">{e(staff.error)}</p>' if staff.error else ""
    )
    return f'<section id="staff-section"><h2>Staff</h2>{shown}{table}{form}</section>'


def _lms_failure(platform: LtiPlatform | None, viewer: Viewer, course_slug: str) -> str:
    failed = failure_text(platform) if platform is not None else None
    if platform is None or failed is None:
        return ""
    return (
        f'<p class="notice" id="lms-failure" role="alert">The LMS {e(platform.name)}: {e(failed)} '
        f"({time_html(platform.failed_at, viewer.zone)}). Rosters and grades that need it wait; see the course's "
        f'<a href="{e(in_course("/dashboard/lti", course_slug))}">LMS page</a>.</p>'
    )


def audit_section(audit: AuditPage, course: str, zone: str) -> str:
    """The course's audit log, newest first, one page of it with links to the others."""
    rows = "".join(
        f'<tr data-action="{e(ev.action)}"><td>{time_html(ev.at, zone)}</td><td>{e(ev.actor)}</td>'
        f"<td>{e(ev.action)}</td><td>{e(ev.target)}</td><td>{e(ev.detail)}</td></tr>"
        for ev in audit.events
    )
    pager = " · ".join(
        f'<a href="{e(in_course(DASHBOARD, course, audit_page=n))}#audit">{label}</a>'
        for n, label in ((audit.page - 1, "newer"), (audit.page + 1, "older"))
        if 1 <= n <= audit.pages
    )
    table = (
        '<table id="audit-log"><thead><tr><th scope="col">When</th><th scope="col">Who</th>'
        '<th scope="col">Action</th><th scope="col">On</th><th scope="col">Detail</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        if audit.events
        else '<p class="muted">No staff action recorded in this course yet.</p>'
    )
    return (
        f'<section id="audit"><h2>Audit log</h2><p class="muted" id="audit-count" data-total="{audit.total}">'
        f"{audit.total} staff actions recorded (extensions, corrections, sets, regrades, staff, bulk imports); "
        f"page {audit.page} of {audit.pages}.</p>{table}<p>{pager}</p></section>"
    )


# --- one exercise --------------------------------------------------------------------------


def exercise_page(
    viewer: Viewer, slug: str, title: str, view: ExerciseView, *, mark: str | None = None, notice: str = ""
) -> str:
    """Tiles, then the charts: named mistakes, checks, best scores, submissions per day.
    ``notice``: markup shown under the title (stale verdicts, server.regrades.pages)."""
    stats = view.stats
    median = "–" if view.median_attempts_to_solve is None else format_score(view.median_attempts_to_solve)
    tiles = _tiles(
        [
            ("submissions", str(stats.submissions)),
            ("learners attempted", str(stats.learners_attempted)),
            ("learners solved", str(stats.learners_solved)),
            ("median attempts to solve", median),
        ]
    )
    mistakes = horizontal_bars(
        "chart-mistakes",
        "Named mistakes: learners who hit each (follow a bar to see who)",
        [
            Bar(
                m.mistake_title,
                m.learners,
                _plural(m.learners, "learner"),
                mistake_url(slug, m.mistake_id or m.mistake_title, viewer.course_slug),
                note=_plural(m.submissions, "submission"),
            )
            for m in stats.mistakes
        ],
        value_head="Learners",
    )
    checks = horizontal_bars(
        "chart-checks",
        "Failure rate of each check (graded submissions)",
        [
            Bar(c.name, c.failure_rate, f"{c.failure_rate * 100:.1f}%", note=f"{c.failures} of {c.runs} runs failed")
            for c in stats.checks
        ],
        max_value=1.0,
        value_head="Failure rate",
    )
    histogram = columns(
        "chart-scores",
        "Score that counts per learner (late penalties and overrides applied)",
        [
            Bar(
                f"{b.low}" if b.low == b.high else f"{b.low}–{b.high}",
                b.learners,
                str(b.learners),
                note=f"{_plural(b.submissions, 'graded submission')} in this range",
            )
            for b in stats.score_distribution
        ],
        value_head="Learners",
    )
    every = max(1, len(view.per_day) // 12)
    per_day = columns(
        "chart-days",
        "Submissions per day (UTC days)",
        [Bar(d.isoformat()[5:], n, str(n), note=d.isoformat()) for d, n in view.per_day],
        value_head="Submissions",
        label_every=every,
    )
    earlier = (
        f'<p class="muted">{e(_plural(view.days_before, "submission"))} on earlier days are not drawn.</p>'
        if view.days_before
        else ""
    )
    median_note = (
        f'<p class="muted" id="median-note">Median attempts to solve: {e(median)}, over '
        f"{e(_plural(view.solvers, 'learner'))} whose score that counts is 100, as the tile counts "
        "(attempts up to and including the first full score).</p>"
    )
    body = (
        f"<h1>{e(title)}</h1>{notice}{tiles}{median_note}{mistakes}{checks}{histogram}{per_day}{earlier}"
        f"<h2>Latest submissions</h2>{submissions_table(viewer, view.recent, with_learner=True, with_exercise=False)}"
    )
    return page(title, body, viewer, live=mark)


def mistake_page(
    viewer: Viewer,
    slug: str,
    title: str,
    mistake_title: str,
    holders: list[MistakeHolder],
    *,
    mark: str | None = None,
) -> str:
    """Who hit one mistake, the most recent first, and whether they have solved it since."""
    rows = "".join(
        f'<tr><td class="learner"><a href="{e(learner_url(h.name, viewer.course_slug))}">{e(h.display_name)}</a></td>'
        f'<td>{e(h.name)}</td><td class="num">{h.submissions}</td><td>{time_html(h.first_at, viewer.zone)}</td>'
        f"<td>{time_html(h.last_at, viewer.zone)}</td>"
        f'<td class="num">{e(format_score(h.counted_score))}</td><td>{"solved" if h.solved else "not yet"}</td>'
        f'<td><a href="{e(submission_url(h.last_submission_id))}">#{h.last_submission_id}</a></td></tr>'
        for h in holders
    )
    if not holders:
        rows = '<tr><td colspan="8" class="muted">No learner has hit this mistake.</td></tr>'
    body = (
        f'<p><a href="{e(exercise_url(slug, viewer.course_slug))}">← {e(title)}</a></p>'
        f"<h1>{e(mistake_title)}</h1>"
        f"<p>{e(_plural(len(holders), 'learner'))} hit this in {e(title)}; the most recent first.</p>"
        '<table id="holders"><thead><tr><th scope="col">Learner</th><th scope="col">Login</th>'
        '<th scope="col" class="num">Submissions with it</th><th scope="col">First</th><th scope="col">Latest</th>'
        '<th scope="col" class="num">Score that counts now</th><th scope="col">Solved</th><th scope="col">Latest with it</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )
    return page(f"{mistake_title} · {title}", body, viewer, live=mark)


# --- learners ------------------------------------------------------------------------------


def learners_page(
    viewer: Viewer, total: int, lines: list[LearnerLine], page_number: int, per_page: int, *, mark: str | None = None
) -> str:
    """Every learner, by login, paged."""
    rows = (
        "".join(
            f'<tr><td class="learner"><a href="{e(learner_url(x.name, viewer.course_slug))}">{e(x.display_name)}</a></td>'
            f'<td>{e(x.name)}</td><td class="num">{x.attempted}</td><td class="num">{x.solved}</td>'
            f'<td class="num">{x.attempts}</td><td>{time_html(x.last_submitted, viewer.zone)}</td></tr>'
            for x in lines
        )
        or '<tr><td colspan="6" class="muted">No learners on this page.</td></tr>'
    )
    pages = max(1, -(-total // per_page))
    here = viewer.course_slug
    prev = f'<a rel="prev" href="{e(learners_url(here, page_number - 1))}">← Previous</a>' if page_number > 1 else ""
    nxt = f'<a rel="next" href="{e(learners_url(here, page_number + 1))}">Next →</a>' if page_number < pages else ""
    body = (
        f"<h1>Learners ({total})</h1>"
        '<table id="learners"><thead><tr><th scope="col">Learner</th><th scope="col">Login</th>'
        '<th scope="col" class="num">Exercises attempted</th><th scope="col" class="num">Solved</th>'
        '<th scope="col" class="num">Attempts</th><th scope="col">Last submission</th></tr></thead>'
        f'<tbody>{rows}</tbody></table><div class="pager">{prev}<span>Page {page_number} of {pages}</span>{nxt}</div>'
    )
    return page("Learners", body, viewer, current="Learners", live=mark)


@dataclass(frozen=True)
class LearnerView:
    name: str
    display_name: str
    exercises: list[LearnerExercise]
    submissions: list[SubmissionLine]
    total_submissions: int
    page_number: int
    per_page: int
    #: The learner's exercises as ``ppo-submit exercises`` lists them (``server.courses.windows``):
    #: dates, late rule, feedback policy, tokens left, attempts used.
    schedule: list[ExerciseWindow] = field(default_factory=list)


@dataclass(frozen=True)
class UploadView:
    """What the upload form on a learner's own page needs (``server.dashboard.upload``)."""

    form_token: str
    idempotency_key: str
    #: (slug, title) of the courses the learner may submit to, when there are several.
    courses: list[tuple[str, str]]
    max_source_kib: int
    max_upload_mib: int
    max_notebook_code_kib: int


def upload_form(titles: dict[str, str], upload: UploadView, chosen: str | None = None) -> str:
    """A ``.py`` or ``.ipynb`` file, or a pasted function, submitted from the browser
    (``chosen``: the exercise picked in advance)."""
    options = "".join(
        f'<option value="{e(slug)}"{" selected" if slug == chosen else ""}>{e(title)}</option>'
        for slug, title in titles.items()
    )
    course = ""
    if upload.courses:
        picks = "".join(f'<option value="{e(slug)}">{e(title)}</option>' for slug, title in upload.courses)
        course = f'<label for="upload-course">Course</label><select id="upload-course" name="course">{picks}</select>'
    return (
        '<section id="upload"><h2>Submit from the browser</h2>'
        # the token is in the address, so the server checks it before it reads the body
        f'<form id="upload-form" method="post" action="/dashboard/submit?csrf={e(quote(upload.form_token))}" '
        'enctype="multipart/form-data" data-live-hold>'
        f'<input type="hidden" name="key" value="{e(upload.idempotency_key)}">'
        '<label for="upload-exercise">Exercise</label><select id="upload-exercise" name="exercise">'
        f'<option value="">found from the function</option>{options}</select>{course}'
        '<label for="upload-file">A .py file or a Jupyter notebook (.ipynb)</label>'
        '<input id="upload-file" name="file" type="file" accept=".py,.ipynb,text/x-python,application/x-ipynb+json">'
        '<label for="upload-source">or paste your function</label>'
        '<textarea id="upload-source" name="source" rows="10" spellcheck="false" '
        'placeholder="def your_function(...):"></textarea>'
        '<button type="submit">Submit</button></form>'
        f'<p class="muted">The code sent is at most {upload.max_source_kib} KiB; a notebook file may be up to '
        f"{upload.max_upload_mib} MiB with its outputs (its code: {upload.max_source_kib} KiB a cell, "
        f"{upload.max_notebook_code_kib} KiB in all), of which only the function and the helpers, imports "
        "and constants it uses are sent, as <code>ppo-submit notebook.ipynb</code> sends them. "
        "The submission's page shows the verdict as soon as it arrives.</p></section>"
    )


def late_confirm_page(viewer: Viewer, ask: LateAsk, source_b64: str, form_token: str, back: str) -> str:
    """Before an upload past its due date is sent: what it costs, and a button that sends it
    (the prepared source carried back in the form, base64, with its exercise, course and key),
    or the way back without sending. Nothing was stored yet."""
    prepared = ask.prepared
    hidden = "".join(
        f'<input type="hidden" name="{name}" value="{e(value)}">'
        for name, value in (
            ("key", ask.key),
            ("exercise", prepared.exercise),
            ("course", ask.course),
            ("filename", prepared.filename),
            ("late", "confirmed"),
            ("late_source", source_b64),
        )
    )
    body = (
        "<h1>Send it late?</h1>"
        f'<p id="late-notice" class="callout">{e(ask.notice)}</p>'
        f"<p>Nothing has been sent yet: <b>{e(prepared.filename)}</b> for {e(prepared.exercise)}.</p>"
        f'<form id="late-confirm" method="post" action="/dashboard/submit?csrf={e(quote(form_token))}" '
        f'enctype="multipart/form-data">{hidden}<button type="submit">Send it late</button> '
        f'<a id="late-cancel" href="{e(back)}">Do not send it</a></form>'
    )
    return page("Send it late?", body, viewer, styles=UPLOAD_CSS)


#: The learner's way to their own API token (``server.users.terminal``).
TERMINAL_LINK = (
    '<p id="terminal"><a href="/dashboard/terminal">Use from a terminal</a> '
    '<span class="muted">(ppo-submit or a notebook: your personal API token)</span></p>'
)
_CURRENT = ' aria-current="true"'

UPLOAD_CSS = """
#upload-form,#correction-form{display:grid;grid-template-columns:max-content 1fr;gap:.5rem .8rem;max-width:52rem;align-items:start}
#correction-form button{grid-column:2;justify-self:start}
#upload-form textarea{font:13px/1.4 ui-monospace,monospace;width:100%;box-sizing:border-box}
#upload-form button{grid-column:2;justify-self:start}
tr[aria-current]{background:#eef4ff}
"""


def learner_page(
    viewer: Viewer,
    titles: dict[str, str],
    view: LearnerView,
    *,
    mark: str | None = None,
    upload: UploadView | None = None,
    corrections: str = "",
    focus: str | None = None,
) -> str:
    """One learner: every exercise (best, attempts, last verdict), the upload form on their own
    page, then every submission. ``focus``: the exercise the page is opened for (marked, and
    chosen in the upload form)."""
    own = viewer.name == view.name
    here, zone = viewer.course_slug, viewer.zone
    # attempts as `ppo-submit exercises` counts them, whatever the feedback policy holds back
    used = {w.exercise: w.attempts_used for w in view.schedule}
    rows = []
    for x in view.exercises:
        title = titles.get(x.slug, x.slug)
        name = f'<a href="{e(exercise_url(x.slug, here))}">{e(title)}</a>' if viewer.instructor else e(title)
        if x.last is None:
            last = '<span class="muted">not attempted</span>'
        else:
            last = f'<a href="{e(submission_url(x.last.id))}">{e(_outcome(x.last))}</a> · {time_html(x.last.created_at, zone)}'
        counted = "–" if x.score is None or x.score.counted is None else format_score(x.score.counted)
        if x.score is not None and x.score.excused:
            counted = "excused"
        how = describe(x.score, zone)
        if x.best_hidden:  # the feedback policy holds the score back until the due date
            counted = how = "hidden until due"
        rows.append(
            f'<tr data-exercise="{e(x.slug)}"{_CURRENT if x.slug == focus else ""}><td>{name}</td><td class="num counted">{e(counted)}</td>'
            f'<td class="described">{e(how)}</td><td class="num">{used.get(x.slug, x.attempts)}</td><td>{last}</td></tr>'
        )
    table = (
        '<table id="learner-exercises"><thead><tr><th scope="col">Exercise</th>'
        '<th scope="col" class="num">Score that counts</th><th scope="col">How it counts</th>'
        '<th scope="col" class="num">Attempts</th><th scope="col">Last submission</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    pages = max(1, -(-view.total_submissions // view.per_page))
    prev = (
        f'<a rel="prev" href="{e(learner_url(view.name, here, view.page_number - 1))}">← Newer</a>'
        if view.page_number > 1
        else ""
    )
    nxt = (
        f'<a rel="next" href="{e(learner_url(view.name, here, view.page_number + 1))}">Older →</a>'
        if view.page_number < pages
        else ""
    )
    heading = "Your work" if own else f"{view.display_name} ({view.name})"
    board = (
        f'<p id="board-link"><a href="{e(in_course("/leaderboard", here))}">Your course\'s board</a> '
        '<span class="muted">(learners by pseudonym unless your course shows names)</span></p>'
        if own and not viewer.instructor
        else ""
    )
    body = (
        f"<h1>{e(heading)}</h1>{table}"
        f"{schedule_table(view.schedule, zone, here, own)}"
        f"{upload_form(titles, upload, focus) if upload is not None and own else ''}"
        f"{TERMINAL_LINK if own else ''}{board}"
        f"<h2>Submissions ({view.total_submissions})</h2>"
        f"{submissions_table(viewer, view.submissions, with_learner=False, with_exercise=True, titles=titles)}"
        f"{corrections}"
        f'<div class="pager">{prev}<span>Page {view.page_number} of {pages}</span>{nxt}</div>'
        '<p class="muted">Open a submission for its checks, messages, named mistakes, timing and source. '
        "This page reloads by itself when a verdict arrives.</p>"
    )
    return page(heading, body, viewer, current="My work" if own else "Learners", live=mark, styles=UPLOAD_CSS)


#: What each feedback policy shows a learner, on their own page.
_POLICY_TEXT = {
    "full": "the full report",
    "score": "the score and the check names only",
    "hidden-until-due": "nothing until the due date, then the report (a file that does not run is shown at once)",
}


def policy_text(policy: str, tokens_left: int | None) -> str:
    """``tokens:3: the score only; 3 reports a day (2 left today)`` and its kin."""
    kind, _, count = policy.partition(":")
    if kind == "tokens":
        left = f" ({tokens_left} left today)" if tokens_left is not None else ""
        return f"{policy}: the score only; a token shows one submission's report, {count} a day{left}"
    return f"{policy}: {_POLICY_TEXT.get(policy, policy)}"


def late_rule(window: ExerciseWindow) -> str:
    """``-10% per day started late`` (``flagged late, no penalty``; ``excused``), as the learner reads it."""
    if window.excused:
        return "excused: no late penalty"
    if window.due_at is None:
        return "no due date"
    if window.penalty_percent:
        return f"-{window.penalty_percent:g}% of the score per {window.penalty_unit} started late"
    return "flagged late, no penalty"


def schedule_table(schedule: Sequence[ExerciseWindow], zone: str, course: str | None, own: bool) -> str:
    """Each exercise's release, due and close dates (the course's zone), late rule, feedback
    policy, tokens left and attempts, and (on the learner's own page) its starter to download."""
    rows = []
    for w in schedule:
        due = time_html(w.due_at, zone) if w.due_at else '<span class="muted">none</span>'
        if w.extended:
            due += " (your extension)"
        attempts = f"{w.attempts_used} of {w.max_attempts}" if w.max_attempts else str(w.attempts_used)
        starter = (
            f'<td class="starter"><a href="{e(starter_url(w.exercise, ".py", course))}" download>.py</a> · '
            f'<a href="{e(starter_url(w.exercise, ".ipynb", course))}" download>.ipynb</a></td>'
            if own
            else ""
        )
        rows.append(
            f'<tr data-exercise="{e(w.exercise)}" data-status="{e(w.status)}"><td>{e(w.title)}</td>'
            f'<td class="release">{time_html(w.release_at, zone) if w.release_at else "open"}</td>'
            f'<td class="due">{due}</td>'
            f'<td class="close">{time_html(w.close_at, zone) if w.close_at else "no hard close"}</td>'
            f'<td class="late-rule">{e(late_rule(w))}</td><td class="policy">{e(policy_text(w.feedback_policy, w.tokens_left))}</td>'
            f'<td class="num attempts">{e(attempts)}</td>{starter}</tr>'
        )
    if not rows:
        return ""
    starter_head = '<th scope="col">Starter</th>' if own else ""
    return (
        f'<h2 id="dates">Exercises and dates <span class="muted">(times in {e(zone)})</span></h2>'
        '<table id="exercise-dates"><thead><tr><th scope="col">Exercise</th><th scope="col">Opens</th>'
        '<th scope="col">Due</th><th scope="col">Closes</th><th scope="col">Late rule</th>'
        f'<th scope="col">Feedback</th><th scope="col" class="num">Attempts</th>{starter_head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def late_mark(late_seconds: int | None, penalty_percent: float | None) -> str:
    """``late 1h: -10%`` for a late submission (``late 2d`` when only flagged); empty when on time."""
    if late_seconds is None:
        return ""
    penalty = f": -{penalty_percent:g}%" if penalty_percent else ""
    return f"late {late_by(late_seconds)}{penalty}"


#: What each feedback view means, on a learner's submission page.
_VIEW_TEXT = {
    "report": "the report, without what your code printed or raised on the judge's inputs",
    "score": "the score and the check names only",
    "hidden": "received and graded; the score and feedback come at the due date",
}


def _policy_row(visible: SubmissionPublic | None, submission_id: int, csrf: str) -> str:
    """The feedback policy's row of the facts, when it hides anything from this viewer (with the
    button that spends a token, when one is left)."""
    if visible is None or visible.feedback_view == "full":
        return ""
    said = _VIEW_TEXT[visible.feedback_view]
    if visible.feedback_view == "hidden" and shows_outcome(View.HIDDEN, visible.verdict):
        said = "your code never reached a check, so this is shown now; scores and feedback come at the due date"
    text = f"{visible.feedback_policy}: {said}"
    if visible.tokens_left is not None:
        spent = (
            "a token was spent on this submission"
            if visible.token_spent
            else (f"{visible.tokens_left} token{'s' if visible.tokens_left != 1 else ''} left today")
        )
        text += f" · {spent}"
    button = ""
    if visible.tokens_left and not visible.token_spent:
        button = (
            f' <form id="spend-token" method="post" action="/dashboard/submissions/{submission_id}/token" '
            f'style="display:inline"><input type="hidden" name="csrf" value="{e(csrf)}">'
            '<button type="submit">Use a token: show the report</button></form>'
        )
    return f'<tr id="feedback-policy"><th scope="row">Feedback</th><td>{e(text)}{button}</td></tr>'


def _outcome(line: SubmissionLine) -> str:
    if line.status != "done":
        return line.status
    if line.verdict is None:  # a feedback policy holds the verdict back until the due date
        return "received"
    return f"{line.verdict} {format_score(line.score)}" if line.score is not None else str(line.verdict)


def submissions_table(
    viewer: Viewer,
    lines: list[SubmissionLine],
    *,
    with_learner: bool,
    with_exercise: bool,
    titles: dict[str, str] | None = None,
) -> str:
    """Submissions, each linking to its page: raw score, late mark and the score that counts."""
    head = '<th scope="col">Submission</th>'
    head += '<th scope="col">Learner</th>' if with_learner else ""
    head += '<th scope="col">Exercise</th>' if with_exercise else ""
    head += (
        '<th scope="col">Submitted</th><th scope="col">Status</th><th scope="col">Verdict</th>'
        '<th scope="col" class="num">Score</th><th scope="col">Late</th><th scope="col" class="num">Counts</th>'
    )
    rows = []
    for s in lines:
        cells = f'<td><a href="{e(submission_url(s.id))}">#{s.id}</a></td>'
        if with_learner:
            cells += f'<td><a href="{e(learner_url(s.user_name, viewer.course_slug))}">{e(s.display_name)}</a></td>'
        if with_exercise:
            cells += f"<td>{e((titles or {}).get(s.exercise, s.exercise))}</td>"
        cells += (
            f"<td>{time_html(s.created_at, viewer.zone)}</td><td>{e(s.status)}</td><td>{e(s.verdict or '–')}</td>"
            f'<td class="num">{e(format_score(s.score))}</td><td>{e(late_mark(s.late_seconds, s.penalty_percent))}</td>'
            f'<td class="num">{e(format_score(s.counted_score))}</td>'
        )
        rows.append(f"<tr>{cells}</tr>")
    if not rows:
        span = 7 + with_learner + with_exercise
        rows.append(f'<tr><td colspan="{span}" class="muted">No submissions yet.</td></tr>')
    return f'<table class="submissions"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


# --- one submission ------------------------------------------------------------------------


def submission_page(
    viewer: Viewer,
    title: str,
    submission: Submission,
    *,
    visible: SubmissionPublic,
    mark: str | None = None,
    csrf: str = "",
    review: str = "",
) -> str:
    """One submission: who, what, when; applied regrades; the feedback ``ppo-submit`` prints; the
    human review (``review``: ``server.review.pages.review_section``'s markup); the source. Every fact of the verdict comes from ``visible``, the record as the viewer may see it
    (the exercise set's feedback policy): the stored row gives only its owner and its source,
    which are the learner's own."""
    owner, here = submission.user, viewer.course_slug
    exercise = (
        f'<a href="{e(exercise_url(submission.exercise, here))}">{e(title)}</a>' if viewer.instructor else e(title)
    )
    finished = (
        f'<tr><th scope="row">Finished</th><td>{time_html(visible.finished_at, viewer.zone)}</td></tr>'
        if visible.feedback_view != "hidden"
        else ""  # no time of the run until the verdict is released: it is a channel for the inputs
    )
    facts = (
        '<table id="submission-facts"><tbody>'
        f'<tr><th scope="row">Learner</th><td><a href="{e(learner_url(owner.name, here))}">{e(owner.display_name)}</a> ({e(owner.name)})</td></tr>'
        f'<tr><th scope="row">Exercise</th><td>{exercise}</td></tr>'
        f'<tr><th scope="row">Submitted</th><td>{time_html(visible.created_at, viewer.zone)}</td></tr>'
        f"{finished}"
        f'<tr><th scope="row">Status</th><td>{e(visible.status)}</td></tr>'
        f'<tr><th scope="row">Raw score</th><td>{e(format_score(visible.score))}</td></tr>'
        f'<tr><th scope="row">Late</th><td>{e(late_mark(visible.late_seconds, visible.penalty_percent) or "no")}</td></tr>'
        f'<tr><th scope="row">Counts</th><td id="submission-counted">{e(format_score(visible.counted_score))}</td></tr>'
        f'<tr><th scope="row">Graded by</th><td id="versions">exercise version <code>{e(visible.content_version)}</code>, '
        f"grader version <code>{e(visible.grader_version)}</code></td></tr>"
        f"{_policy_row(visible, submission.id, csrf)}"
        "</tbody></table>"
    )
    notes = regrade_notes_html(visible.regrades, viewer.zone)
    body = (
        f"<h1>Submission #{submission.id}</h1>{facts}{notes}"
        f"{feedback_section(submission, visible)}{review}"
        f'<h2>Source</h2><pre id="source"><code>{e(submission.source)}</code></pre>'
    )
    return page(f"Submission {submission.id}", body, viewer, live=mark, styles=FEEDBACK_CSS + REVIEW_CSS)
