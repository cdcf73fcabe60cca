"""The HTML of LTI: what a launch answers, the deep-linking picker, and a course's LTI page.

The launch, picker and error pages are shown inside the LMS (in its frame, or on the window
its form opened), so they may be framed (``frame-ancestors *``) and carry nothing a framing
page could use: they hold a one-time link or form token only. Their one script,
``/lti/static/launch.js``, continues a launch at the top level (or opens a new tab from a
frame, since the site's own pages refuse framing) and submits the deep-linking answer.
Every other page is the dashboard's kit (``server.web.html.page``), with its headers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from fastapi.responses import HTMLResponse

from server.lti import tasks
from server.lti.deeplink import Offer
from server.lti.grades import Action, GradePlan
from server.lti.platforms import failure_text
from server.models import LtiContext, LtiMember, LtiPlatform, LtiTask, User
from server.web.html import Viewer, e, format_score, page, time_html

SCRIPT = "/lti/static/launch.js"


_HOST = re.compile(r"^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])$")


def csp_origin(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, rebuilt from checked parts (so nothing of
    the URL but its origin, and no ``;`` or space, reaches a header); None if it has none."""
    try:
        parts = urlsplit(url)
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        return None
    if parts.scheme not in ("https", "http") or not _HOST.match(host if ":" not in host else f"[{host}]"):
        return None
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}" + (f":{port}" if port else "")


def _csp(answer_origin: str | None = None) -> str:
    targets = "'self'" + (f" {answer_origin}" if answer_origin else "")
    return (
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; "
        f"form-action {targets}; frame-ancestors *; base-uri 'none'"
    )


def lti_response(body: str, status_code: int = 200, answer_to: str | None = None) -> HTMLResponse:
    """An LTI page: frameable by the LMS, never cached; ``answer_to`` is the URL a form on it
    posts to (the LMS's deep-linking return URL), allowed by its ``form-action``."""
    origin = csp_origin(answer_to) if answer_to else None
    headers = {
        "Cache-Control": "no-store",
        "Content-Security-Policy": _csp(origin),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
    }
    return HTMLResponse(body, status_code=status_code, headers=headers)


def _shell(title: str, body: str) -> str:
    return page(title, f'{body}<script src="{SCRIPT}" defer></script>')


def refused_page(title: str, detail: str) -> str:
    """A launch refused: why, and what to do (``server.lti.errors.LaunchRefused``)."""
    return _shell(
        title,
        f'<h1 id="lti-refused">{e(title)}</h1><p id="lti-detail">{e(detail)}</p>'
        '<p class="muted">ppo-grader refused this LTI launch. Nothing was changed.</p>',
    )


def framed_login_page(login_url: str) -> str:
    """A launch that began in the LMS's frame: the same login, in a tab of its own."""
    return _shell(
        "Open ppo-grader",
        "<h1>ppo-grader</h1><p>ppo-grader opens in its own tab.</p>"
        f'<p><a id="lti-open-tab" href="{e(login_url)}" target="_blank" rel="noopener">Open ppo-grader</a></p>',
    )


def launch_page(user: User, course_title: str, continue_url: str, window: bool) -> str:
    """A launch accepted: continue to the signed-in page (at once at the top level; from the
    LMS's frame, in a new tab). ``window``: the LMS opened a window, so no script is needed."""
    refresh = f'<meta http-equiv="refresh" content="0;url={e(continue_url)}">' if window else ""
    return _shell(
        "Opening ppo-grader",
        f"{refresh}<h1>ppo-grader · {e(course_title)}</h1>"
        f"<p>Signed in from the LMS as <b>{e(user.display_name)}</b> ({e(user.name)}).</p>"
        f'<p><a id="lti-continue" data-continue href="{e(continue_url)}">Open ppo-grader</a></p>'
        '<p class="muted">ppo-grader opens in its own tab when the LMS shows it in a frame.</p>',
    )


def picker_page(course_title: str, offers: Sequence[Offer], action: str, multiple: bool) -> str:
    """The deep-linking picker: tick exercises (or the whole published set), send them back."""
    kind = "checkbox" if multiple else "radio"
    rows = "".join(
        f'<tr><td><input type="{kind}" name="exercise" value="{e(o.slug)}" id="pick-{e(o.slug)}"></td>'
        f'<td><label for="pick-{e(o.slug)}">{e(o.title)}</label></td><td><code>{e(o.slug)}</code></td>'
        f"<td>{'in the set' if o.published else '<span class=muted>added to the set, no dates</span>'}</td></tr>"
        for o in offers
    )
    whole = (
        '<button type="submit" name="whole-set" value="1" id="pick-set">Add the whole published set</button>'
        if multiple and any(o.published for o in offers)
        else ""
    )
    return _shell(
        "Add exercises",
        f"<h1>Add ppo-grader exercises to {e(course_title)}</h1>"
        f'<form id="lti-picker" method="post" action="{e(action)}">'
        '<table id="offers"><thead><tr><th></th><th scope="col">Exercise</th><th scope="col">Id</th>'
        f'<th scope="col">Course set</th></tr></thead><tbody>{rows}</tbody></table>'
        f'<p><button type="submit" id="pick-send">Add the chosen exercises</button> {whole}</p></form>'
        '<p class="muted">Each exercise becomes one assignment in the LMS with one gradebook column '
        "(reused if the course has it already). An exercise not yet in the course's set is published "
        "without dates; give it dates with <code>ppo-grader sets publish</code>.</p>",
    )


def answer_page(return_url: str, token: str, count: int, note: str | None = None) -> str:
    """The signed deep-linking answer, posted back to the LMS (by the script, or the button;
    with a ``note`` for the instructor, by the button only, once they have read it)."""
    said = f'<p id="lti-answer-note">{e(note)}</p>' if note else ""
    return _shell(
        "Back to the LMS",
        f"<h1>Sending {count} exercise{'s' if count != 1 else ''} to the LMS</h1>{said}"
        f'<form id="lti-answer" method="post" action="{e(return_url)}"{"" if note else " data-autosubmit"}>'
        f'<input type="hidden" name="JWT" value="{e(token)}"><button type="submit">Back to the LMS</button></form>',
    )


def _request_row(kind: str, row: LtiTask | None, zone: str) -> str:
    """One row of the page's requests table: how the last press of ``kind`` went."""
    name = tasks.KINDS[kind].capitalize()
    if row is None:
        shown = '<span class="muted">never asked</span>'
    elif row.state == tasks.QUEUED:
        shown = f"queued {time_html(row.requested_at, zone)}: the background job starts it within a poll"
    elif row.state == tasks.RUNNING:
        shown = f"running since {time_html(row.started_at, zone)}"
    else:
        verb = "done" if row.state == tasks.DONE else "failed"
        shown = f"{verb} {time_html(row.finished_at, zone)}: {e(row.outcome or '')}"
    state = row.state if row is not None else "never"
    return f'<tr id="lti-task-{kind}" data-state="{e(state)}"><th scope="row">{e(name)}</th><td>{shown}</td></tr>'


def _platform_failure(platform: LtiPlatform, zone: str) -> str:
    failed = failure_text(platform)
    if failed is None:
        return ""
    return (
        f'<p class="notice" id="lti-platform-failure" role="alert">{e(platform.name)}: {e(failed)} '
        f"({time_html(platform.failed_at, zone)}). Until it works, rosters, grades and launches that need it fail: "
        "an administrator checks the platform's registration (<code>ppo-grader lti platforms</code>) against the "
        "LMS's values (docs/lti.md). It is cleared at the next call that works.</p>"
    )


def course_lti_page(
    viewer: Viewer,
    link: LtiContext | None,
    platform: LtiPlatform | None,
    members: Sequence[tuple[User, LtiMember]],
    grades: GradePlan | None,
    csrf: str,
    titles: dict[str, str],
    course_slug: str,
    requests: dict[str, LtiTask] | None = None,
) -> str:
    """A course's LTI page: its link, its platform's last service failure, the page's requests
    to the background job and how they went, roster and grades (what the LMS had when last
    compared, what would be sent)."""
    if link is None or platform is None:
        body = (
            '<h1>LMS</h1><p id="lti-none">This course is not linked to an LMS course. It is linked the first time '
            "an instructor opens ppo-grader from the LMS course (docs/lti.md).</p>"
        )
        return page("LMS", body, viewer, current="LMS")
    zone = viewer.zone
    hidden = f'<input type="hidden" name="csrf" value="{e(csrf)}"><input type="hidden" name="course" value="{e(course_slug)}">'
    error = (
        f'<p class="notice" id="lti-error" role="alert">The last grade sync failed '
        f"{time_html(link.sync_failed_at, zone)}: {e(link.sync_error)} Nothing was lost: what was not sent is "
        f"sent by the next sync{', retried ' + time_html(link.next_sync_at, zone) if link.next_sync_at else ''}.</p>"
        if link.sync_error
        else ""
    )
    auto = "on" if link.auto_grades else "off"
    facts = (
        '<table id="lti-link"><tbody>'
        f'<tr><th scope="row">LMS</th><td>{e(platform.name)} · course {e(link.title)} (<code>{e(link.context_id)}</code>)</td></tr>'
        f'<tr><th scope="row">Roster synced</th><td>{time_html(link.roster_synced_at, zone)}</td></tr>'
        f'<tr><th scope="row">Grades sent</th><td id="lti-grades-synced">{time_html(link.grades_synced_at, zone)}</td></tr>'
        f'<tr><th scope="row">Automatic grades</th><td id="lti-auto">{auto}</td></tr>'
        f'<tr><th scope="row">Send requested</th><td id="lti-requested">{time_html(link.send_requested_at, zone)}</td></tr>'
        "</tbody></table>"
    )
    asked = requests or {}
    progress = (
        '<h2>Requests to the LMS</h2><table id="lti-tasks"><tbody>'
        + "".join(_request_row(kind, asked.get(kind), zone) for kind in (tasks.ROSTER, tasks.COMPARE))
        + "</tbody></table>"
    )
    buttons = (
        f'<form class="inline" method="post" action="/dashboard/lti/roster">{hidden}'
        '<button type="submit" id="lti-sync-roster">Sync the roster</button></form> '
        f'<form class="inline" method="post" action="/dashboard/lti/grades">{hidden}'
        '<button type="submit" id="lti-send">Send the grades below</button></form> '
        f'<form class="inline" method="post" action="/dashboard/lti/auto">{hidden}'
        f'<input type="hidden" name="auto" value="{"off" if link.auto_grades else "on"}">'
        f'<button type="submit" id="lti-auto-toggle">Turn automatic grades {"off" if link.auto_grades else "on"}</button></form> '
        f'<form class="inline" method="post" action="/dashboard/lti/compare">{hidden}'
        '<button type="submit" id="lti-compare">Compare with the LMS gradebook</button></form>'
    )
    people = "".join(
        f'<tr class="{e(m.status)}"><td>{e(u.display_name)}</td><td>{e(u.name)}</td>'
        f'<td class="muted">{e(m.roles)}</td><td>{e(m.status)}</td><td>{time_html(m.seen_at, zone)}</td></tr>'
        for u, m in members
    )
    roster = (
        '<h2>Roster</h2><table id="lti-roster"><thead><tr><th scope="col">Name</th><th scope="col">Login</th>'
        '<th scope="col">LMS roles</th><th scope="col">Status</th><th scope="col">Last seen</th></tr></thead>'
        f"<tbody>{people}</tbody></table>"
    )
    grade_rows = ""
    lms_note = ""
    if grades is not None:
        if grades.lms_error:
            lms_note = (
                f'<p class="notice" id="lti-lms-unread">What the LMS has could not be read: {e(grades.lms_error)}</p>'
            )
        elif not grades.lms_read:  # a view never calls the LMS: the button's job asks it, once per press
            lms_note = (
                '<p class="muted" id="lti-lms-unasked">The LMS was not asked what it has: '
                "<i>Compare with the LMS gradebook</i> has the background job read it.</p>"
            )
        elif grades.lms_read_at is not None:
            lms_note = f'<p class="muted" id="lti-lms-read">What the LMS has, as read {time_html(grades.lms_read_at, zone)}.</p>'
        for line in grades.lines:
            sent = "excused" if line.sent_excused else (format_score(line.sent) if line.was_sent else "–")
            lms = "?" if grades.lms_error or not grades.lms_read else format_score(line.lms)
            grade_rows += (
                f'<tr data-learner="{e(line.login)}" data-exercise="{e(line.exercise)}" class="{e(line.action.replace(" ", "-"))}">'
                f"<td>{e(line.display_name)} ({e(line.login)})</td><td>{e(titles.get(line.exercise, line.exercise))}</td>"
                f'<td class="described">{e(line.described)}</td><td class="num sent">{e(sent)}</td>'
                f'<td class="num lms">{e(lms)}</td><td class="action">{e(line.action)}</td></tr>'
            )
    to_send = sum(1 for line in grades.lines if line.action == Action.SEND) if grades is not None else 0
    table = (
        f'<h2>Grades ({to_send} to send)</h2>{lms_note}<table id="lti-grades"><thead><tr><th scope="col">Learner</th>'
        '<th scope="col">Exercise</th><th scope="col">Score that counts</th><th scope="col" class="num">Last sent</th>'
        '<th scope="col" class="num">The LMS has</th><th scope="col">Next send</th></tr></thead>'
        f"<tbody>{grade_rows}</tbody></table>"
    )
    failure = _platform_failure(platform, zone)
    body = f"<h1>LMS</h1>{failure}{error}{facts}<p>{buttons}</p>{progress}{table}{roster}"
    return page("LMS", body, viewer, current="LMS")
