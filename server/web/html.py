"""The pieces every HTML page shares: ``e()`` (the only way a value enters the markup),
the document shell with its style sheet and header, the login form and short messages.

No template engine: plain strings, every value escaped here or by the caller with ``e()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from server.times import local_time
from server.web.urls import DASHBOARD, LEARNERS, in_course, learner_url

LOGIN_ACTION = "/login"
LOGOUT_ACTION = "/logout"
LIVE_SCRIPT = "/static/live.js"
LIVE_PATH = "/dashboard/live"
_CURRENT = ' aria-current="page"'

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:1.5rem auto;max-width:62rem;padding:0 1rem;color:#1d2430}
header{display:flex;justify-content:space-between;align-items:center;gap:1rem;flex-wrap:wrap}
header.site{border-bottom:1px solid #e3e7ee;padding-bottom:.6rem;margin-bottom:1rem}
header.site nav{margin:0}
.brand{font-weight:700;color:#1d2430;text-decoration:none;margin-right:.6rem}
h1{font-size:1.4rem;margin:.2rem 0 .8rem}
h2{font-size:1.1rem;margin:1.6rem 0 .5rem}
nav{margin:1rem 0;display:flex;flex-wrap:wrap;gap:.4rem;align-items:center}
nav a{padding:.25rem .7rem;border:1px solid #c7cfdb;border-radius:1rem;text-decoration:none;color:#1d4ed8}
nav a[aria-current]{background:#1d4ed8;color:#fff;border-color:#1d4ed8}
a{color:#1d4ed8}
table{border-collapse:collapse;width:100%}
th,td{padding:.45rem .6rem;border-bottom:1px solid #e3e7ee;text-align:left;vertical-align:top}
th{background:#f3f5f9;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#667085}
.notice{padding:.6rem .8rem;border-radius:.4rem;background:#fff4e5;border:1px solid #f5c27a}
.callout{padding:.8rem 1rem;border-radius:.4rem;background:#eef4ff;border:1px solid #b2c8fb;margin:1rem 0}
.pager{display:flex;gap:1rem;align-items:center;margin-top:1rem}
.tiles{display:flex;flex-wrap:wrap;gap:.8rem;margin:.5rem 0 1rem;padding:0;list-style:none}
.tiles li{border:1px solid #e3e7ee;border-radius:.4rem;padding:.5rem .9rem;min-width:8rem}
.tiles b{display:block;font-size:1.3rem;font-variant-numeric:tabular-nums}
figure.chart-box{margin:1.2rem 0;padding:.8rem 1rem;border:1px solid #e3e7ee;border-radius:.4rem}
figcaption{font-weight:600;margin-bottom:.4rem}
svg.chart{display:block;max-width:100%;height:auto;font:13px system-ui,sans-serif}
svg.chart text.value{font-weight:600;fill:#1d2430}
svg.chart text.label{fill:#1d2430}
svg.chart a:hover text.label,svg.chart a:focus text.label{text-decoration:underline}
details{margin-top:.4rem}
form.login{display:flex;flex-direction:column;gap:.6rem;max-width:28rem}
form.inline{display:inline}
input[type=password]{padding:.45rem;font:inherit}
button{font:inherit;padding:.35rem .9rem;cursor:pointer}
pre{background:#f6f8fa;border:1px solid #e3e7ee;border-radius:.4rem;padding:.7rem;overflow:auto;font-size:13px;line-height:1.4}
"""


def e(value: object) -> str:
    """Escape any value for HTML text or a double-quoted attribute."""
    return escape(str(value), quote=True)


@dataclass(frozen=True)
class CoursePlace:
    """The course a page is about: its slug (every link carries it), title (every page names
    it) and time zone (every time on the page is shown in it)."""

    slug: str
    title: str
    time_zone: str = "UTC"


@dataclass(frozen=True)
class Viewer:
    """Who is looking, for the header: their name, whether they see the whole class, and the
    course the page is about (None: a page outside any course, such as the login form)."""

    name: str
    display_name: str
    instructor: bool
    course: CoursePlace | None = None

    @property
    def course_slug(self) -> str | None:
        """The slug links carry (None outside a course)."""
        return None if self.course is None else self.course.slug

    @property
    def zone(self) -> str:
        """The time zone the page's times are shown in."""
        return "UTC" if self.course is None else self.course.time_zone


def page(
    title: str, body: str, viewer: Viewer | None = None, *, current: str = "", live: str | None = None, styles: str = ""
) -> str:
    """A whole document around ``body`` (already escaped markup).

    ``styles``: more CSS for what ``body`` holds (a domain's fragment brings its own, such as
    ``server.submissions.report_page.FEEDBACK_CSS``), after the shell's.

    ``live``: the change mark the page was drawn at (``server.submissions.waiting.change_mark``).
    The small same-origin script (``/static/live.js``, allowed by ``script-src 'self'``) polls
    ``/dashboard/live`` and reloads the page when the mark moves, i.e. when a submission is
    added or a verdict arrives; without script, the ``<noscript>`` refresh reloads every 30 s.
    """
    live_head = (
        f'<script src="{LIVE_SCRIPT}" defer></script><noscript><meta http-equiv="refresh" content="30"></noscript>'
        if live is not None
        else ""
    )
    live_attr = f' data-live="{e(LIVE_PATH)}" data-live-mark="{e(live)}"' if live is not None else ""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="same-origin">'
        f"<title>{e(title)} · ppo-grader</title><style>{_CSS}{styles}</style>{live_head}</head>"
        f"<body{live_attr}>{site_header(viewer, current)}{body}</body></html>\n"
    )


def site_header(viewer: Viewer | None, current: str) -> str:
    """The brand, the viewer's places and the logout button."""
    if viewer is None:
        return ""
    slug = viewer.course_slug
    if viewer.instructor:
        links = [
            ("Class", in_course(DASHBOARD, slug)),
            ("Learners", in_course(LEARNERS, slug)),
            (
                "Assignments",
                in_course("/dashboard/assignments", slug),
            ),  # the course's set (server.dashboard.assignments)
            ("Extensions", in_course("/dashboard/extensions", slug)),  # and corrections (server.dashboard.extensions)
            ("Regrades", in_course("/dashboard/regrades", slug)),  # preview, apply, cancel: server.dashboard.regrades
            ("Reviews", in_course("/dashboard/reviews", slug)),  # review requests (server.review.page_router)
            ("Leaderboard", in_course("/leaderboard", slug)),
            ("Similarity", in_course("/dashboard/similarity", slug)),
            ("LMS", in_course("/dashboard/lti", slug)),  # the course's LTI link, roster and grades (server.lti)
        ]
    else:
        links = [("My work", learner_url(viewer.name, slug)), ("Board", in_course("/leaderboard", slug))]
    nav = "".join(f'<a href="{e(href)}"{_CURRENT if label == current else ""}>{e(label)}</a>' for label, href in links)
    place = (
        f'<span id="page-course" class="course-name">Course: <b>{e(viewer.course.title)}</b> '
        f'<span class="muted">({e(viewer.course.slug)}, times in {e(viewer.course.time_zone)})</span></span>'
        if viewer.course is not None
        else ""
    )
    return (
        f'<header class="site"><nav aria-label="Site"><a class="brand" href="{e(in_course(DASHBOARD, slug))}">ppo-grader</a>'
        f"{nav}</nav>{place}"
        f'<form class="inline" method="post" action="{LOGOUT_ACTION}">'
        f'<span class="muted">Signed in as {e(viewer.display_name)}</span> '
        '<button type="submit">Log out</button></form></header>'
    )


def login_page(notice: str | None = None, next_path: str = "") -> str:
    """The token form; ``notice`` explains why the user is here again, if they are;
    ``next_path`` is where a successful login goes."""
    shown = f'<p class="notice" role="alert">{e(notice)}</p>' if notice else ""
    following = f'<input type="hidden" name="next" value="{e(next_path)}">' if next_path else ""
    body = (
        "<header><h1>ppo-grader · log in</h1></header>"
        f"{shown}"
        f'<form class="login" method="post" action="{LOGIN_ACTION}">'
        '<label for="token">API token</label>'
        '<input id="token" name="token" type="password" autocomplete="off" required maxlength="512">'
        f"{following}"
        '<button type="submit">Log in</button>'
        "</form>"
        '<p class="muted">Instructors see the class dashboard and the leaderboard; learners see '
        "their own submissions and feedback, and their course's board. The token is checked once; the browser then keeps "
        "only a signed session cookie, which ends when you log out, when it expires, or when the "
        "token is revoked.</p>"
    )
    return page("Log in", body)


def message_page(
    title: str, text: str, viewer: Viewer | None = None, link: tuple[str, str] = ("Back to the start", "/dashboard")
) -> str:
    """A short page that says one thing and links on (forbidden, not found, bad request)."""
    body = f'<h1>{e(title)}</h1><p>{e(text)}</p><p><a href="{e(link[1])}">{e(link[0])}</a></p>'
    return page(title, body, viewer)


def format_score(score: float | None) -> str:
    """100.0 -> "100", 87.5 -> "87.5", 33.333 -> "33.33", None -> "–"."""
    if score is None:
        return "–"
    return f"{score:.2f}".rstrip("0").rstrip(".")


def time_html(value: datetime | None, zone: str) -> str:
    """A ``<time>`` in the course's zone, saying which (``server.times.local_time``), the
    machine-readable ``datetime`` attribute in UTC; or "never"."""
    if value is None:
        return '<span class="muted">never</span>'
    value = value.astimezone(UTC)
    return f'<time datetime="{e(value.isoformat())}">{e(local_time(value, zone))}</time>'
