"""The regrade pages' markup: one set's diff for instructors, and what a submission's page
says about applied regrades (to its learner too) and an exercise page about stale verdicts."""

from __future__ import annotations

from collections.abc import Sequence

from server.regrades.schemas import ChangePublic, RegradeDiff
from server.regrades.service import StaleLine
from server.submissions.schemas import RegradeNote
from server.web.html import Viewer, e, format_score, page, time_html
from server.web.urls import learner_url, submission_url


def _outcome(verdict: str | None, score: float | None) -> str:
    return f"{verdict} {format_score(score)}" if score is not None else str(verdict or "–")


def _changes(table_id: str, caption: str, changes: Sequence[ChangePublic]) -> str:
    rows = (
        "".join(
            f'<tr><td><a href="{e(submission_url(c.submission))}">#{c.submission}</a></td>'
            f'<td><a href="{e(learner_url(c.learner))}">{e(c.learner)}</a></td>'
            f"<td>{e(_outcome(c.old_verdict, c.old_score))}</td><td>{e(_outcome(c.new_verdict, c.new_score))}</td>"
            f'<td class="num">{e(format_score(c.old_counted_score))}</td><td class="num">{e(format_score(c.new_counted_score))}</td></tr>'
            for c in changes
        )
        or '<tr><td colspan="6" class="muted">None.</td></tr>'
    )
    return (
        f'<table id="{table_id}"><caption>{e(caption)}</caption><thead><tr><th scope="col">Submission</th>'
        '<th scope="col">Learner</th><th scope="col">Before</th><th scope="col">After</th>'
        '<th scope="col" class="num">Counted before</th><th scope="col" class="num">Counted after</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def _shifts(table_id: str, caption: str, head: tuple[str, str, str], rows: Sequence[tuple[str, int, int]]) -> str:
    body = (
        "".join(f'<tr><td>{e(i)}</td><td class="num">{a}</td><td class="num">{b}</td></tr>' for i, a, b in rows)
        or '<tr><td colspan="3" class="muted">None.</td></tr>'
    )
    return (
        f'<table id="{table_id}"><caption>{e(caption)}</caption><thead><tr><th scope="col">{e(head[0])}</th>'
        f'<th scope="col" class="num">{e(head[1])}</th><th scope="col" class="num">{e(head[2])}</th></tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def regrade_page(viewer: Viewer, diff: RegradeDiff) -> str:
    """One set: where it stands, then the diff's tables."""
    r = diff.regrade
    scope = ", ".join(
        part
        for part in (
            f"course {r.course}" if r.course else "every course",
            f"learner {r.learner}" if r.learner else "",
            f"submission #{r.submission}" if r.submission else "",
            "every verdict" if r.all_versions else "stale verdicts",
        )
        if part
    )
    facts = (
        '<table id="regrade-facts"><tbody>'
        f'<tr><th scope="row">Exercise</th><td>{e(r.exercise)} ({e(scope)})</td></tr>'
        f'<tr><th scope="row">State</th><td id="regrade-state">{e(r.state)}: {r.graded} of {r.total} graded</td></tr>'
        f'<tr><th scope="row">Graded with</th><td>exercise version <code>{e(r.content_version)}</code>, '
        f"grader version <code>{e(r.grader_version)}</code></td></tr>"
        f'<tr><th scope="row">Requested</th><td>{time_html(r.created_at, viewer.zone)}</td></tr>'
        + (
            f'<tr><th scope="row">Applied</th><td>{time_html(r.applied_at, viewer.zone)} (keep {e(r.keep)}): {e(r.reason)}</td></tr>'
            if r.applied_at
            else ""
        )
        + "</tbody></table>"
    )
    summary = (
        f'<p id="regrade-counts">Scores that count: <strong>{diff.up}</strong> up, <strong>{diff.down}</strong> down, '
        f"<strong>{diff.same}</strong> the same; {len(diff.changed)} verdict(s) changed."
        + (f" {len(diff.failed)} could not be regraded (internal_error) and stay as they are." if diff.failed else "")
        + "</p>"
    )
    action = (
        ""
        if r.state in ("applied", "cancelled")
        else f'<p class="muted">Learners see none of this. Apply with <code>ppo-grader regrade apply {r.id} --reason "..."</code> '
        f"(or <code>--keep higher</code>), or drop it with <code>ppo-grader regrade cancel {r.id}</code>.</p>"
    )
    learners = (
        "".join(
            f'<tr><td>{e(s.course)}</td><td><a href="{e(learner_url(s.learner))}">{e(s.learner)}</a></td>'
            f'<td class="num">{e(format_score(s.old_score))} → {e(format_score(s.new_score))}</td>'
            f'<td class="num">{s.old_rank} → {s.new_rank}</td></tr>'
            for s in diff.learners
        )
        or '<tr><td colspan="4" class="muted">None.</td></tr>'
    )
    body = (
        f"<h1>Regrade {r.id}</h1>{facts}{summary}{action}"
        + _changes("regrade-largest", "Largest changes", diff.largest)
        + _shifts(
            "regrade-checks",
            "Checks that changed",
            ("Check", "Now failing", "Now passing"),
            [(s.id, s.now_failing, s.now_passing) for s in diff.checks],
        )
        + _shifts(
            "regrade-mistakes",
            "Named mistakes that changed",
            ("Mistake", "Now named", "No longer named"),
            [(s.id, s.now_failing, s.now_passing) for s in diff.mistakes],
        )
        + '<table id="regrade-learners"><caption>Learners whose counted score or board rank changes</caption>'
        '<thead><tr><th scope="col">Course</th><th scope="col">Learner</th><th scope="col" class="num">Counted score</th>'
        f'<th scope="col" class="num">Rank</th></tr></thead><tbody>{learners}</tbody></table>'
        + _changes("regrade-changed", "Every changed verdict", diff.changed)
    )
    return page(f"Regrade {r.id}", body, viewer)


def regrade_notes_html(notes: Sequence[RegradeNote], zone: str) -> str:
    """On a submission's page: each applied regrade, old and new verdict, and the reason."""
    if not notes:
        return ""
    items = "".join(
        f"<li>{time_html(n.applied_at, zone)}: {e(_outcome(n.old_verdict, n.old_score))} → "
        f"{e(_outcome(n.new_verdict, n.new_score))} (counts {e(format_score(n.new_counted_score))}). "
        f"{e(n.reason)}</li>"
        for n in notes
    )
    return f'<section id="regrades"><h2>Regraded</h2><ul>{items}</ul></section>'


def stale_notice(lines: Sequence[StaleLine]) -> str:
    """On an exercise page: how many of its counted verdicts come from an older version."""
    stale = sum(line.stale for line in lines)
    if not stale:
        return ""
    total = sum(line.verdicts for line in lines)
    on_boards = sum(line.stale_on_boards for line in lines)
    slug = lines[0].exercise
    return (
        f'<p id="stale-verdicts" class="notice">{stale} of {total} counted verdicts come from an older version of '
        f"this exercise or of the grader ({on_boards} of them a learner's board score). "
        f"<code>ppo-grader regrade preview --exercise {e(slug)}</code> grades them again without changing anything "
        "until you apply it.</p>"
    )


def unverified_notice(sentences: Sequence[str]) -> str:
    """On an exercise page: the pack folder holds a version no verify passed, and learners are
    graded by the published one (server.catalogue.versions.unverified_changes)."""
    return "".join(f'<p id="unverified-version" class="notice">{e(s)}.</p>' for s in sentences)
