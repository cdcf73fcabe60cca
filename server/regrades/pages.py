"""The regrade pages' markup: a course's sets with the preview form, one set's diff with its
apply and cancel forms (the course's staff: ``server.dashboard.regrades`` serves them), and
what a submission's page says about applied regrades (to its learner too) and an exercise
page about stale verdicts."""

from __future__ import annotations

from collections.abc import Sequence

from server.regrades.apply import REASON_CHARS
from server.regrades.schemas import ChangePublic, RegradeDiff, RegradePublic
from server.regrades.service import StaleLine
from server.submissions.schemas import RegradeNote
from server.web.html import Viewer, e, format_score, page, time_html
from server.web.urls import REGRADES, in_course, learner_url, regrade_url, submission_url

_CSS = (
    "form.regrade{display:grid;grid-template-columns:max-content 1fr;gap:.3rem .8rem;max-width:44rem;margin:1rem 0}"
    "form.regrade button{grid-column:2;justify-self:start}"
    ".notice.error{border-color:#b91c1c;color:#7f1d1d}"
)


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


def _hidden(csrf: str, course: str) -> str:
    return f'<input type="hidden" name="csrf" value="{e(csrf)}"><input type="hidden" name="course" value="{e(course)}">'


def _actions(r: RegradePublic, keep: str, csrf: str | None, course: str | None) -> str:
    """Apply (a ready set: the reason learners read, and which verdict to keep) and cancel
    (a set not yet applied), for the course's staff; the commands for a set over every course."""
    if r.state in ("applied", "cancelled"):
        return ""
    if csrf is None or course is None or r.course != course:
        return (
            f'<p class="muted">Learners see none of this. Apply with <code>ppo-grader regrade apply {r.id} --reason "..."</code> '
            f"(or <code>--keep higher</code>), or drop it with <code>ppo-grader regrade cancel {r.id}</code>.</p>"
        )
    apply = (
        f'<form class="regrade" id="regrade-apply" method="post" action="{e(regrade_url(r.id))}/apply">{_hidden(csrf, course)}'
        f'<label for="regrade-reason">Reason (each learner whose score changes reads it)</label>'
        f'<textarea id="regrade-reason" name="reason" required maxlength="{REASON_CHARS}" rows="2"></textarea>'
        '<label for="regrade-keep">Keep</label><select id="regrade-keep" name="keep">'
        + "".join(
            f'<option value="{v}"{" selected" if v == keep else ""}>{e(label)}</option>'
            for v, label in (("new", "the regraded verdict (new)"), ("higher", "the better of the two (higher)"))
        )
        + '</select><button type="submit">Apply regrade</button></form>'
        if r.state == "ready"
        else f'<p class="muted" id="regrade-grading">Still grading ({r.graded} of {r.total}): '
        f'<a href="{e(regrade_url(r.id, course))}">reload</a> to apply it once every result is graded.</p>'
    )
    cancel = (
        f'<form class="inline" id="regrade-cancel" method="post" action="{e(regrade_url(r.id))}/cancel">{_hidden(csrf, course)}'
        '<button type="submit">Cancel this regrade (nothing changes)</button></form>'
    )
    other = "higher" if keep == "new" else "new"
    return (
        f'<p class="muted">Learners see none of this until it is applied. The diff shows keep <b>{e(keep)}</b>; '
        f'<a id="regrade-keep-other" href="{e(regrade_url(r.id, course, keep=other))}">show it with keep {other}</a>.</p>'
        f"{apply}{cancel}"
    )


def regrade_page(
    viewer: Viewer,
    diff: RegradeDiff,
    *,
    csrf: str | None = None,
    course: str | None = None,
    notice: str = "",
    error: str = "",
) -> str:
    """One set: where it stands, its forms (``csrf``: the course's staff, on the page of the
    set's ``course``), then the diff's tables."""
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
    action = _actions(r, diff.keep.value, csrf, course)
    shown = (f'<p class="notice" role="status">{e(notice)}</p>' if notice else "") + (
        f'<p class="notice error" role="alert">{e(error)}</p>' if error else ""
    )
    back = f'<p><a href="{e(in_course(REGRADES, course))}">All regrades of this course</a></p>' if course else ""
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
        f"<h1>Regrade {r.id}</h1>{shown}{back}{facts}{summary}{action}"
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
    return page(f"Regrade {r.id}", body, viewer, current="Regrades", styles=_CSS)


def regrades_page(
    viewer: Viewer,
    course: str,
    sets: Sequence[RegradePublic],
    stale: Sequence[StaleLine],
    exercises: Sequence[tuple[str, str]],
    csrf: str,
    *,
    error: str = "",
    sent: dict[str, str] | None = None,
) -> str:
    """A course's regrade sets, newest first, its stale verdicts per exercise, and the form that
    grades stored submissions again into a new set (``sent``: the refused form's fields, kept)."""
    sent = sent or {}
    rows = (
        "".join(
            f'<tr data-regrade="{r.id}" data-state="{e(r.state)}"><td><a href="{e(regrade_url(r.id, course))}">{r.id}</a></td>'
            f"<td>{e(r.exercise)}</td><td>{e(r.learner or 'every learner')}"
            f"{e(f', submission #{r.submission}') if r.submission else ''}</td>"
            f"<td>{'every verdict' if r.all_versions else 'stale verdicts'}</td>"
            f'<td>{e(r.state)}</td><td class="num">{r.graded} of {r.total}</td>'
            f"<td>{time_html(r.created_at, viewer.zone)}</td><td>{e(r.reason or '')}</td></tr>"
            for r in sets
        )
        or '<tr><td colspan="8" class="muted">No regrade in this course yet.</td></tr>'
    )
    table = (
        '<table id="regrades"><thead><tr><th scope="col">Set</th><th scope="col">Exercise</th><th scope="col">Who</th>'
        '<th scope="col">Verdicts</th><th scope="col">State</th><th scope="col" class="num">Graded</th>'
        f'<th scope="col">Requested</th><th scope="col">Reason</th></tr></thead><tbody>{rows}</tbody></table>'
    )
    stale_rows = "".join(
        f'<tr data-exercise="{e(line.exercise)}"><td>{e(line.exercise)}</td><td class="num">{line.verdicts}</td>'
        f'<td class="num">{line.stale}</td><td class="num">{line.stale_on_boards}</td></tr>'
        for line in stale
    )
    stale_table = (
        '<table id="regrade-stale"><caption>Counted verdicts from an older exercise or grader version</caption>'
        '<thead><tr><th scope="col">Exercise</th><th scope="col" class="num">Counted verdicts</th>'
        '<th scope="col" class="num">Stale</th><th scope="col" class="num">Stale board scores</th></tr></thead>'
        f"<tbody>{stale_rows}</tbody></table>"
        if stale
        else ""
    )
    chosen = sent.get("exercise", "")
    options = "".join(
        f'<option value="{e(slug)}"{" selected" if slug == chosen else ""}>{e(title)} ({e(slug)})</option>'
        for slug, title in exercises
    )
    form = (
        f'<form class="regrade" id="regrade-preview" method="post" action="{REGRADES}">{_hidden(csrf, course)}'
        f'<label for="rp-exercise">Exercise</label><select id="rp-exercise" name="exercise" required>{options}</select>'
        '<label for="rp-learner">Only this learner (login, optional)</label>'
        f'<input id="rp-learner" name="learner" maxlength="64" value="{e(sent.get("learner", ""))}">'
        '<label for="rp-submission">Only this submission (id, optional)</label>'
        f'<input id="rp-submission" name="submission" inputmode="numeric" maxlength="10" value="{e(sent.get("submission", ""))}">'
        '<label for="rp-all">Every counted verdict</label>'
        f'<span><input type="checkbox" id="rp-all" name="all_versions" value="1"{" checked" if sent.get("all_versions") else ""}> '
        "not only the stale ones</span>"
        '<button type="submit">Preview regrade</button></form>'
    )
    shown = f'<p class="notice error" role="alert">{e(error)}</p>' if error else ""
    body = (
        f"<h1>Regrades</h1>{shown}"
        '<p class="muted">A preview grades the stored submissions again, behind live ones; learners see nothing of it '
        "until it is applied, with a reason they read beside their score.</p>"
        f"{form}{stale_table}{table}"
    )
    return page("Regrades", body, viewer, current="Regrades", styles=_CSS)


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
        f"<code>ppo-grader regrade preview --exercise {e(slug)}</code>, or the Regrades page's preview form, grades "
        "them again without changing anything until you apply it.</p>"
    )


def unverified_notice(sentences: Sequence[str]) -> str:
    """On an exercise page: the pack folder holds a version no verify passed, and learners are
    graded by the published one (server.catalogue.versions.unverified_changes)."""
    return "".join(f'<p id="unverified-version" class="notice">{e(s)}.</p>' for s in sentences)
