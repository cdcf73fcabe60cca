"""HTML for the instructors' leaderboard page: plain strings, every value escaped here.

No template engine and no JavaScript; ``e()`` is the only way a value enters the markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from urllib.parse import urlencode

from server.leaderboard.service import BoardRow

LOGIN_ACTION = "/leaderboard/login"
LOGOUT_ACTION = "/leaderboard/logout"
BOARD_PATH = "/leaderboard"

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:62rem;padding:0 1rem;color:#1d2430}
header{display:flex;justify-content:space-between;align-items:center;gap:1rem}
h1{font-size:1.4rem;margin:0}
nav{margin:1rem 0;display:flex;flex-wrap:wrap;gap:.4rem}
nav a{padding:.25rem .7rem;border:1px solid #c7cfdb;border-radius:1rem;text-decoration:none;color:#1d4ed8}
nav a[aria-current]{background:#1d4ed8;color:#fff;border-color:#1d4ed8}
table{border-collapse:collapse;width:100%}
th,td{padding:.45rem .6rem;border-bottom:1px solid #e3e7ee;text-align:left}
th{background:#f3f5f9;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#667085}
.notice{padding:.6rem .8rem;border-radius:.4rem;background:#fff4e5;border:1px solid #f5c27a}
.pager{display:flex;gap:1rem;align-items:center;margin-top:1rem}
form.login{display:flex;flex-direction:column;gap:.6rem;max-width:28rem}
input[type=password]{padding:.45rem;font:inherit}
button{font:inherit;padding:.35rem .9rem;cursor:pointer}
"""


def e(value: object) -> str:
    """Escape any value for HTML text or a double-quoted attribute."""
    return escape(str(value), quote=True)


def page(title: str, body: str) -> str:
    """A whole document around ``body`` (already escaped markup)."""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="same-origin">'
        f"<title>{e(title)} · ppo-grader</title><style>{_CSS}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def login_page(notice: str | None = None) -> str:
    """The token form; ``notice`` explains why the user is here again, if they are."""
    shown = f'<p class="notice" role="alert">{e(notice)}</p>' if notice else ""
    body = (
        "<header><h1>Leaderboard · instructors</h1></header>"
        f"{shown}"
        f'<form class="login" method="post" action="{LOGIN_ACTION}">'
        '<label for="token">API token (instructor or admin)</label>'
        '<input id="token" name="token" type="password" autocomplete="off" required maxlength="512">'
        '<button type="submit">Log in</button>'
        "</form>"
        '<p class="muted">The token is checked once; the browser then keeps only a signed '
        "session cookie, which ends when you log out, when it expires, or when the token is revoked.</p>"
    )
    return page("Log in", body)


def message_page(title: str, text: str, link_text: str = "Back to the login form") -> str:
    """A short page that says one thing and links back (forbidden, not found, bad request)."""
    body = f"<header><h1>{e(title)}</h1></header><p>{e(text)}</p><p><a href=\"{BOARD_PATH}\">{e(link_text)}</a></p>"
    return page(title, body)


@dataclass(frozen=True)
class BoardView:
    """Everything the board page shows."""

    viewer_name: str
    exercises: list[tuple[str, str]]  # (slug, title), course order
    exercise: str | None
    total: int
    limit: int
    offset: int
    rows: list[BoardRow]
    pseudonyms: dict[int, str] | None  # user id -> what learners see, when that setting is on


def board_url(exercise: str | None, page_number: int = 1, limit: int | None = None) -> str:
    """The board's address for one exercise (None: overall) and page."""
    params: dict[str, object] = {}
    if exercise is not None:
        params["exercise"] = exercise
    if page_number > 1:
        params["page"] = page_number
    if limit is not None:
        params["limit"] = limit
    return BOARD_PATH + ("?" + urlencode(params) if params else "")


def board_page(view: BoardView, default_limit: int) -> str:
    """The board: exercise tabs, the table, paging and a logout button."""
    limit_param = None if view.limit == default_limit else view.limit
    tabs = [_tab("Overall", board_url(None, limit=limit_param), view.exercise is None)]
    tabs += [_tab(title, board_url(slug, limit=limit_param), view.exercise == slug) for slug, title in view.exercises]
    current = next((title for slug, title in view.exercises if slug == view.exercise), "Overall")
    score_head = "Total of best scores" if view.exercise is None else "Best score"
    pseudonym_head = '<th scope="col">Shown to learners as</th>' if view.pseudonyms is not None else ""
    head = (
        '<tr><th scope="col" class="num">Rank</th><th scope="col">Learner</th><th scope="col">Login</th>'
        f'{pseudonym_head}<th scope="col" class="num">{score_head}</th><th scope="col" class="num">Attempts</th>'
        '<th scope="col" class="num">Solved</th><th scope="col">Best first reached</th></tr>'
    )
    body_rows = "".join(_row(view, i, row) for i, row in enumerate(view.rows))
    if not view.rows:
        columns = 8 if view.pseudonyms is not None else 7
        empty = "No learner has a finished submission yet." if view.total == 0 else "No rows on this page."
        body_rows = f'<tr><td colspan="{columns}" class="muted">{e(empty)}</td></tr>'
    body = (
        f"<header><h1>Leaderboard · {e(current)}</h1>"
        f'<form method="post" action="{LOGOUT_ACTION}">'
        f'<span class="muted">Signed in as {e(view.viewer_name)}</span> '
        '<button type="submit">Log out</button></form></header>'
        f'<nav aria-label="Exercises">{"".join(tabs)}</nav>'
        f'<table id="board"><thead>{head}</thead><tbody>{body_rows}</tbody></table>'
        f"{_pager(view, limit_param)}"
        '<p class="muted">Ranked by best score, then by when it was first reached; a failed or '
        "crashed run never lowers a best. Only learners are ranked.</p>"
    )
    return page(f"Leaderboard · {current}", body)


def _tab(label: str, href: str, selected: bool) -> str:
    current = ' aria-current="page"' if selected else ""
    return f'<a href="{e(href)}"{current}>{e(label)}</a>'


def _row(view: BoardView, index: int, row: BoardRow) -> str:
    pseudonym = f"<td>{e(view.pseudonyms.get(row.user_id, ''))}</td>" if view.pseudonyms is not None else ""
    return (
        f'<tr><td class="num">{view.offset + index + 1}</td>'
        f'<td class="learner">{e(row.display_name)}</td><td class="login">{e(row.name)}</td>{pseudonym}'
        f'<td class="num score">{e(format_score(row.best))}</td><td class="num">{row.attempts}</td>'
        f'<td class="num">{row.solved}</td><td>{_time(row.reached_at)}</td></tr>'
    )


def _pager(view: BoardView, limit_param: int | None) -> str:
    page_number = view.offset // view.limit + 1
    pages = max(1, -(-view.total // view.limit))
    first, last = view.offset + 1, min(view.offset + len(view.rows), view.total)
    where = f"{first}–{last} of {view.total}" if view.rows else f"{view.total} in all"
    prev_link = (
        f'<a rel="prev" href="{e(board_url(view.exercise, page_number - 1, limit_param))}">← Previous</a>'
        if page_number > 1 else '<span class="muted">← Previous</span>'
    )
    next_link = (
        f'<a rel="next" href="{e(board_url(view.exercise, page_number + 1, limit_param))}">Next →</a>'
        if view.offset + view.limit < view.total else '<span class="muted">Next →</span>'
    )
    return (
        f'<div class="pager">{prev_link}<span>Page {page_number} of {pages} · learners {e(where)}</span>'
        f"{next_link}</div>"
    )


def format_score(score: float) -> str:
    """100.0 -> "100", 87.5 -> "87.5", 33.333 -> "33.33"."""
    return f"{score:.2f}".rstrip("0").rstrip(".")


def _time(value: datetime | None) -> str:
    if value is None:
        return '<span class="muted">never</span>'
    value = value.astimezone(UTC)
    return f'<time datetime="{e(value.isoformat())}">{e(value.strftime("%Y-%m-%d %H:%M:%S"))} UTC</time>'
