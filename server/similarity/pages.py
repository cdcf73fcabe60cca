"""The similarity pages' HTML: the ranked pairs of a course, and one pair side by side.

Plain strings like every dashboard page; every value enters the markup through ``e()``.
Instructors only (the routes ask for it); nothing here is ever on a learner's page.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

from server.similarity.schemas import PairPublic, RunPublic, SideBySide
from server.times import local_time
from server.web.html import Viewer, e, page
from server.web.urls import learner_url, submission_url

LIST_PATH = "/dashboard/similarity"
_CURRENT = ' aria-current="page"'
_MATCH = ' class="match"'
RUN_ACTION = "/dashboard/similarity/run"

CSS = """
.side{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:.8rem}
.side figure{margin:0;min-width:0}
.side pre{margin:0;padding:.4rem 0;font-size:12.5px;overflow:auto}
.side pre span{display:block;padding:0 .5rem;white-space:pre}
.side pre span.match{background:#fff1b8;box-shadow:inset 3px 0 #d4a106}
.side pre i{font-style:normal;color:#98a2b3;display:inline-block;width:2.6rem;user-select:none}
.mark-fine{color:#166534;font-weight:600}.mark-concern{color:#b42318;font-weight:600}
form.review{display:flex;gap:.5rem;margin:.6rem 0}
"""


def pair_url(course: str, a: str, b: str) -> str:
    """One pair's side-by-side page."""
    return f"{LIST_PATH}/{quote(a, safe='')}/{quote(b, safe='')}?{urlencode({'course': course})}"


def _mark(mark: str | None) -> str:
    if mark is None:
        return '<span class="muted">not reviewed</span>'
    return f'<span class="mark-{e(mark)}">reviewed: {e(mark)}</span>'


def _run_line(latest: RunPublic | None, pairs_run: RunPublic | None, zone: str) -> str:
    if latest is None:
        return '<p class="notice">Not compared yet: runs start by themselves after each due date, or now with the button.</p>'
    parts = []
    if pairs_run is not None:
        finished = local_time(pairs_run.finished_at, zone) if pairs_run.finished_at else ""
        parts.append(
            f"Run {pairs_run.id} ({'after a due date' if pairs_run.reason == 'due' else 'on request'}, {e(finished)}): "
            f"{pairs_run.learners} learners, {pairs_run.submissions} submissions, {pairs_run.pairs_found} similar pairs."
        )
    if pairs_run is None or latest.id != pairs_run.id:
        state = {"queued": "waiting", "running": "running", "failed": "failed", "done": "done"}[latest.status]
        parts.append(f"The newest run ({latest.id}) is {state}." + (f" {e(latest.message)}" if latest.message else ""))
    return f'<p class="muted">{" ".join(parts)}</p>'


def list_page(
    viewer: Viewer,
    course: tuple[str, str],
    latest: RunPublic | None,
    pairs_run: RunPublic | None,
    pairs: list[PairPublic],
    exercise: str | None,
) -> str:
    """The top pairs of the course (or of one exercise), with their marks and a run button."""
    slug, title = course
    exercises = pairs_run.exercises if pairs_run is not None else []
    filters = "".join(
        f'<a href="{e(LIST_PATH + "?" + urlencode({"course": slug, **({"exercise": x} if x else {})}))}"'
        f"{_CURRENT if x == exercise else ''}>{e(x or 'whole course')}</a>"
        for x in [None, *exercises]
    )
    rows = "".join(
        "<tr>"
        f'<td class="num">{p.rank}</td>'
        f'<td><a href="{e(pair_url(slug, p.learner_a, p.learner_b))}">{e(p.display_name_a)} / {e(p.display_name_b)}</a>'
        f' <span class="muted">({e(p.learner_a)} / {e(p.learner_b)})</span></td>'
        f'<td class="num">{p.score:.2f}</td><td class="num">{p.similar_on}</td>'
        f"<td>{e(', '.join(f'{x.exercise} {x.similarity:.2f}' for x in p.exercises if exercise is None or x.exercise == exercise))}</td>"
        f"<td>{_mark(p.review)}</td></tr>"
        for p in pairs
    )
    table = (
        '<table id="similar-pairs"><thead><tr><th class="num">rank</th><th>learners</th><th class="num">score</th>'
        '<th class="num">similar on</th><th>exercises (similarity)</th><th>review</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        if pairs
        else "<p>No similar pairs.</p>"
        if pairs_run is not None
        else ""
    )
    body = (
        f"<style>{CSS}</style><h1>Similar submissions: {e(title)}</h1>"
        '<p class="callout">Pairs of learners whose code is most alike, after names, comments and layout are '
        "normalised and the starter and the code most solutions share are left out. A pair's score sums its "
        "similarity (0 to 1) over the course's exercises. This is for review: learners never see it and no "
        "score changes.</p>"
        f"{_run_line(latest, pairs_run, viewer.zone)}"
        f'<form method="post" action="{RUN_ACTION}"><input type="hidden" name="course" value="{e(slug)}">'
        '<button type="submit">Compare now</button></form>'
        f'<nav aria-label="Exercise">{filters}</nav>{table}'
    )
    return page(f"Similarity · {title}", body, viewer, current="Similarity")


def _numbered(source: str, spans: list[tuple[int, int]]) -> str:
    marked = {n for first, last in spans for n in range(first, last + 1)}
    return "".join(
        f"<span{_MATCH if number in marked else ''}><i>{number}</i>{e(line)}</span>"
        for number, line in enumerate(source.splitlines() or [""], start=1)
    )


def pair_page(viewer: Viewer, course: tuple[str, str], pair: PairPublic, sides: list[SideBySide]) -> str:
    """Both files of each exercise side by side, the matching lines marked; the review form."""
    slug, title = course
    names = (pair.display_name_a, pair.display_name_b)
    logins = (pair.learner_a, pair.learner_b)
    links = " and ".join(
        f'<a href="{e(learner_url(login))}">{e(name)}</a> ({e(login)})'
        for name, login in zip(names, logins, strict=True)
    )
    review = (
        f'<form class="review" method="post" action="{e(pair_url(slug, *logins).split("?")[0])}/review">'
        f'<input type="hidden" name="course" value="{e(slug)}">'
        '<button type="submit" name="mark" value="fine">Reviewed: fine</button>'
        '<button type="submit" name="mark" value="concern">Reviewed: concern</button></form>'
    )
    sections = "".join(
        f"<h2>{e(s.exercise)}: similarity {s.similarity:.2f}</h2>"
        '<div class="side">'
        + "".join(
            f'<figure><figcaption><a href="{e(submission_url(sub))}">{e(name)}: submission {sub}</a></figcaption>'
            f'<pre aria-label="{e(name)}">{_numbered(source, spans)}</pre></figure>'
            for name, sub, source, spans in (
                (names[0], s.submission_a, s.source_a, s.spans_a),
                (names[1], s.submission_b, s.source_b, s.spans_b),
            )
        )
        + "</div>"
        for s in sides
    )
    body = (
        f"<style>{CSS}</style>"
        f'<p><a href="{e(LIST_PATH + "?" + urlencode({"course": slug}))}">All pairs of {e(title)}</a></p>'
        f"<h1>{e(names[0])} / {e(names[1])}</h1>"
        f"<p>Learners: {links}. Score {pair.score:.2f} over {len(sides)} exercise(s); {_mark(pair.review)}.</p>"
        f'{review}<p class="muted">Marked lines are code the other file shares (after names and layout are '
        "normalised); the starter and code most learners share are not marked.</p>"
        f"{sections}"
    )
    return page(f"Similarity · {names[0]} / {names[1]}", body, viewer, current="Similarity")
