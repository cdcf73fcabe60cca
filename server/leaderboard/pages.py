"""HTML for the leaderboard page (``/leaderboard``): the instructors' board and the learners'
(:func:`learner_board_page`); plain strings, every value escaped with ``e()``. Its route is
``server.leaderboard.page_router``; the rows are the API's."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from server.leaderboard.service import BoardRow
from server.web.html import Viewer, e, format_score, page, time_html
from server.web.urls import learner_url

BOARD_PATH = "/leaderboard"


@dataclass(frozen=True)
class BoardView:
    """Everything the board page shows."""

    viewer: Viewer
    exercises: list[tuple[str, str]]  # (slug, title), course order
    exercise: str | None
    total: int
    limit: int
    offset: int
    rows: list[BoardRow]
    pseudonyms: dict[int, str] | None  # user id -> what learners see, unless the course shows real names
    course: tuple[str, str] | None = None  # (slug, title) of the course shown; None: the default course


def board_url(exercise: str | None, page_number: int = 1, limit: int | None = None, course: str | None = None) -> str:
    """The board's address for one course (None: the default), one exercise (None: overall) and page."""
    params: dict[str, object] = {}
    if course is not None:
        params["course"] = course
    if exercise is not None:
        params["exercise"] = exercise
    if page_number > 1:
        params["page"] = page_number
    if limit is not None:
        params["limit"] = limit
    return BOARD_PATH + ("?" + urlencode(params) if params else "")


def _url(view: BoardView, exercise: str | None, page_number: int = 1, limit: int | None = None) -> str:
    """A link that stays in the course shown."""
    return board_url(exercise, page_number, limit, view.course[0] if view.course is not None else None)


def board_page(view: BoardView, default_limit: int, *, mark: str | None = None) -> str:
    """The board: exercise tabs, the table, paging and a logout button."""
    limit_param = None if view.limit == default_limit else view.limit
    tabs = [_tab("Overall", _url(view, None, limit=limit_param), view.exercise is None)]
    tabs += [_tab(title, _url(view, slug, limit=limit_param), view.exercise == slug) for slug, title in view.exercises]
    current = next((title for slug, title in view.exercises if slug == view.exercise), "Overall")
    if view.course is not None:
        current = f"{current} ({view.course[1]})"
    score_head = "Total of board scores" if view.exercise is None else "Board score"
    pseudonym_head = '<th scope="col">Shown to learners as</th>' if view.pseudonyms is not None else ""
    head = (
        '<tr><th scope="col" class="num">Rank</th><th scope="col">Learner</th><th scope="col">Login</th>'
        f'{pseudonym_head}<th scope="col" class="num">{score_head}</th><th scope="col" class="num">Attempts</th>'
        '<th scope="col" class="num">Solved</th><th scope="col">Board score first reached</th></tr>'
    )
    body_rows = "".join(_row(view, i, row) for i, row in enumerate(view.rows))
    if not view.rows:
        columns = 8 if view.pseudonyms is not None else 7
        empty = "No learner has a finished submission yet." if view.total == 0 else "No rows on this page."
        body_rows = f'<tr><td colspan="{columns}" class="muted">{e(empty)}</td></tr>'
    body = (
        f"<h1>Leaderboard · {e(current)}</h1>"
        f'<nav aria-label="Exercises">{"".join(tabs)}</nav>'
        f'<table id="board"><thead>{head}</thead><tbody>{body_rows}</tbody></table>'
        f"{_pager(view, limit_param)}"
        '<p class="muted">Ranked by the board score, then by when it was first reached. The board score is the '
        "score that counts (late penalties and corrections applied) of the checks the judge confirmed, so it can "
        "be below the score that counts that the gradebooks and the learner's pages show (a check whose evidence "
        "is the learner's own report earns no place). A failed or crashed run never lowers it; a learner excused "
        "from an exercise is not ranked on it. Only learners are ranked."
        + (" Learners see the pseudonyms, not the names (the course's setting)." if view.pseudonyms is not None else "")
        + "</p>"
    )
    return page(f"Leaderboard · {current}", body, view.viewer, current="Leaderboard", live=mark)


def _tab(label: str, href: str, selected: bool) -> str:
    current = ' aria-current="page"' if selected else ""
    return f'<a href="{e(href)}"{current}>{e(label)}</a>'


def _row(view: BoardView, index: int, row: BoardRow) -> str:
    pseudonym = f"<td>{e(view.pseudonyms.get(row.user_id, ''))}</td>" if view.pseudonyms is not None else ""
    return (
        f'<tr><td class="num">{view.offset + index + 1}</td>'
        f'<td class="learner"><a href="{e(learner_url(row.name, view.viewer.course_slug))}">{e(row.display_name)}</a></td>'
        f'<td class="login">{e(row.name)}</td>{pseudonym}'
        f'<td class="num score">{e(format_score(row.best))}</td><td class="num">{row.attempts}</td>'
        f'<td class="num">{row.solved}</td><td>{time_html(row.reached_at, view.viewer.zone)}</td></tr>'
    )


def _pager(view: BoardView, limit_param: int | None) -> str:
    page_number = view.offset // view.limit + 1
    pages = max(1, -(-view.total // view.limit))
    first, last = view.offset + 1, min(view.offset + len(view.rows), view.total)
    where = f"{first}–{last} of {view.total}" if view.rows else f"{view.total} in all"
    prev_link = (
        f'<a rel="prev" href="{e(_url(view, view.exercise, page_number - 1, limit_param))}">← Previous</a>'
        if page_number > 1
        else '<span class="muted">← Previous</span>'
    )
    next_link = (
        f'<a rel="next" href="{e(_url(view, view.exercise, page_number + 1, limit_param))}">Next →</a>'
        if view.offset + view.limit < view.total
        else '<span class="muted">Next →</span>'
    )
    return (
        f'<div class="pager">{prev_link}<span>Page {page_number} of {pages} · learners {e(where)}</span>'
        f"{next_link}</div>"
    )


# --- the learners' board -------------------------------------------------------------------


@dataclass(frozen=True)
class LearnerBoardView:
    """A course's board as one of its learners sees it (``GET /api/v1/leaderboard``'s rows)."""

    viewer: Viewer
    viewer_id: int
    course: tuple[str, str]  # (slug, title)
    exercises: list[tuple[str, str]]  # (slug, title) the learner may see a board of
    held: list[str]  # titles of exercises whose scores are held back until the due dates
    exercise: str | None
    total: int
    limit: int
    offset: int
    rows: list[BoardRow]
    #: What the page calls each learner: their pseudonym in the course, or (the course's setting) their name.
    names: dict[int, str]
    real_names: bool


def learner_board_page(view: LearnerBoardView) -> str:
    """The board for a learner: exercise tabs, rank, learner (pseudonym unless the course shows
    names), board score, attempts, solved, when first reached; their own row marked."""
    slug = view.course[0]
    tabs = [_tab("Overall", board_url(None, course=slug), view.exercise is None)]
    tabs += [_tab(title, board_url(s, course=slug), view.exercise == s) for s, title in view.exercises]
    current = next((title for s, title in view.exercises if s == view.exercise), "Overall")
    rows = "".join(_learner_row(view, i, r) for i, r in enumerate(view.rows))
    if not rows:
        rows = '<tr><td colspan="6" class="muted">No learner has a finished submission yet.</td></tr>'
    held = (
        f'<p class="muted" id="held">Not on the board until every learner\'s due date has passed: {e(", ".join(view.held))}.</p>'
        if view.held
        else ""
    )
    naming = "by name (your course's setting)" if view.real_names else "by pseudonym (yours included), not by name"
    body = (
        f"<h1>Board · {e(current)} ({e(view.course[1])})</h1>"
        f'<nav aria-label="Exercises">{"".join(tabs)}</nav>{held}'
        '<table id="board"><thead><tr><th scope="col" class="num">Rank</th><th scope="col">Learner</th>'
        '<th scope="col" class="num">Board score</th><th scope="col" class="num">Attempts</th>'
        '<th scope="col" class="num">Solved</th><th scope="col">Best first reached</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        f'<p class="muted">{e(view.total)} learners on this board. Learners are shown {e(naming)}. The board score '
        "counts the checks the judge confirmed, after late penalties; a failed run never lowers it. "
        f'<a href="{e(learner_url(view.viewer.name, slug))}">Back to your work</a></p>'
    )
    return page(f"Board · {current}", body, view.viewer, current="Board")


def _learner_row(view: LearnerBoardView, index: int, row: BoardRow) -> str:
    you = row.user_id == view.viewer_id
    mark = ' class="you" aria-current="true"' if you else ""
    return (
        f'<tr{mark}><td class="num">{view.offset + index + 1}</td>'
        f'<td class="learner">{e(view.names.get(row.user_id, ""))}{" (you)" if you else ""}</td>'
        f'<td class="num score">{e(format_score(row.best))}</td><td class="num">{row.attempts}</td>'
        f'<td class="num">{row.solved}</td><td>{time_html(row.reached_at, view.viewer.zone)}</td></tr>'
    )
