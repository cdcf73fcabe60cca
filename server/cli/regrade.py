"""``ppo-grader regrade``: status, preview, show, apply, cancel, list.

The commands work on the database, like the rest of ``ppo-grader``, and on a
server's API with ``--server`` (``server.cli.remote``): ``show`` prints the diff from the wire
type the API answers (``RegradeDiff``) on both. A preview stores its set; on PostgreSQL with procrastinate its jobs are written in the same transaction, and on the
embedded queue the running service finds them within ``REGRADE_POLL_SECONDS``. Either way the
jobs wait behind every live submission.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Annotated

import typer
from rich.table import Table

from server.cli import common, remote
from server.regrades.schemas import RegradeDiff, RegradePublic, StalePublic
from server.terminal import plain
from server.vocabulary import Keep, RegradeState

app = typer.Typer(help="Regrade stored submissions after a fix: preview, diff, apply or cancel.", no_args_is_help=True)


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _outcome(verdict: str | None, score: float | None) -> str:
    return f"{verdict} {_score(score)}" if score is not None else str(verdict or "-")


def describe(regrade: RegradePublic) -> str:
    """One line: the set, its selection and where it stands (``regrade list``, ``regrade show``)."""
    scope = regrade.exercise + ("" if regrade.all_versions else " (stale verdicts)")
    line = (
        f"Regrade {regrade.id} · {scope} · version {regrade.content_version} · {regrade.state} · "
        f"{regrade.graded} of {regrade.total} graded"
    )
    if regrade.state == RegradeState.APPLIED:
        line += f" · applied (keep {regrade.keep}): {regrade.reason or ''}"
    return line


@app.command("status")
@common.edge
def status(exercise: Annotated[str | None, typer.Option(help="Only this exercise.")] = None) -> None:
    """Counted verdicts per course and exercise that come from an older exercise or grader version;
    runs against a server with --server (an instructor account's token: the courses it teaches)."""
    server = remote.target()
    if server is not None:
        lines = [StalePublic.model_validate(line) for line in server.get("/regrades/stale", exercise=exercise)]
    else:
        lines = _stale_here(exercise)
    table = Table(
        "course",
        "exercise",
        "verdicts",
        "stale",
        "stale on boards",
        "current version",
        title="Stale verdicts (from an older exercise or grader version)",
    )
    for line in lines:
        table.add_row(
            *map(
                plain,
                (
                    line.course,
                    line.exercise,
                    str(line.verdicts),
                    str(line.stale),
                    str(line.stale_on_boards),
                    line.current_version,
                ),
            ),
        )
    common.out.print(table)
    stale = sum(line.stale for line in lines)
    common.err.print(
        f"{stale} stale verdict(s)"
        + (": `ppo-grader regrade preview --exercise SLUG` grades them again." if stale else "."),
        highlight=False,
    )


def _stale_here(exercise: str | None) -> list[StalePublic]:
    """``regrade status`` on this installation's database (every course), as the API answers it."""
    from server.regrades.service import stale_lines

    with common.session() as session:
        return [line.public() for line in stale_lines(session, exercise=exercise)]


@app.command("preview")
@common.edge
def preview(
    exercise: Annotated[str, typer.Option(help="Exercise slug.")],
    course: Annotated[str | None, typer.Option(help="Only this course's submissions.")] = None,
    learner: Annotated[str | None, typer.Option(help="Only this learner's submissions (login name).")] = None,
    submission: Annotated[int | None, typer.Option(help="Only this submission.")] = None,
    all_versions: Annotated[
        bool, typer.Option("--all-versions", help="Every counted verdict, not only stale ones.")
    ] = False,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait until every result is graded, then print the diff.")
    ] = False,
) -> None:
    """Grade stored sources again into a regrade set, behind live submissions; learners see nothing.
    Runs against a server with --server (an instructor account's token; --course is required
    there unless it is an admin's)."""
    server = remote.target()
    if server is not None:
        body = {
            "exercise": exercise,
            "course": course,
            "learner": learner,
            "submission": submission,
            "all_versions": all_versions,
        }
        made = RegradePublic.model_validate(server.send("POST", "/regrades", body))
        set_id, queued, version = made.id, made.total, made.content_version
    else:
        set_id, queued, version = _preview_here(exercise, course, learner, submission, all_versions)
    common.err.print(
        f"Regrade {set_id}: {queued} submission(s) of {exercise!r} queued behind live submissions, "
        f"graded with version {version}. "
        f"`ppo-grader regrade show {set_id}` shows the diff once graded.",
        highlight=False,
        soft_wrap=True,
    )
    print(set_id)
    if wait:
        _wait_ready(set_id)
        _show(set_id, Keep.NEW)


def _preview_here(
    exercise: str, course: str | None, learner: str | None, submission: int | None, all_versions: bool
) -> tuple[int, int, str]:
    """``regrade preview`` on this installation's database: the set's id, how many submissions
    it queued, the version it grades with."""
    from server.courses.service import find_course
    from server.grading.procrastinate_backend import ProcrastinateQueue
    from server.regrades.service import create_preview
    from server.users.service import managed_user

    settings = common.settings()
    # procrastinate: the jobs are written in the set's transaction; in-process: the service's
    # workers find the queued results within REGRADE_POLL_SECONDS
    defer = ProcrastinateQueue(settings).defer_regrade if settings.QUEUE == "procrastinate" else None
    with common.session() as session:
        regrade, ids = create_preview(
            session,
            exercise=exercise,
            course=find_course(session, course) if course else None,
            learner=managed_user(session, None, learner) if learner else None,
            submission_id=submission,
            all_versions=all_versions,
            defer=defer,
        )
        return regrade.id, len(ids), regrade.content_version


@app.command("show")
@common.edge
def show(
    set_id: Annotated[int, typer.Argument(metavar="ID", help="Regrade set id.")],
    keep: Annotated[Keep, typer.Option(help="Diff as an apply with this rule would leave it.")] = Keep.NEW,
) -> None:
    """The diff: scores up, down, same; the largest changes; checks and mistakes that moved; learners
    whose score or rank moves. Runs against a server with --server (an instructor account's token)."""
    _show(set_id, keep)


#: ``--dry-run`` of an apply or a cancel.
_DRY_RUN = typer.Option("--dry-run", help="Only check it and say what it would do; nothing is written.")


@app.command("apply")
@common.edge
def apply(
    set_id: Annotated[int, typer.Argument(metavar="ID", help="Regrade set id.")],
    reason: Annotated[str, typer.Option(help="Shown to each learner whose score changes.")],
    keep: Annotated[Keep, typer.Option(help="new: the regraded verdict; higher: the better of the two.")] = Keep.NEW,
    dry_run: Annotated[bool, _DRY_RUN] = False,
) -> None:
    """Make a ready set live in one transaction: counted scores, boards and gradebooks follow;
    runs against a server with --server (an instructor account's token)."""
    if not reason.strip():
        raise typer.BadParameter("say why (learners whose score changes read it)", param_hint="--reason")
    server = remote.target()
    if server is not None:
        from server.regrades.schemas import RegradeDiff

        answer = RegradeDiff.model_validate(
            server.send(
                "POST",
                f"/regrades/{set_id}/apply",
                {"reason": reason, "keep": keep.value},
                dry_run="true" if dry_run else None,
            )
        )
        applied, moved = answer.replaced, len(answer.learners)
    else:
        from server.db import rolled_back
        from server.regrades.apply import apply_set
        from server.regrades.service import readable_set
        from server.regrades.views import replaced

        with common.session() as session:
            regrade = readable_set(session, set_id, None)
            with rolled_back(session) if dry_run else nullcontext():
                diff = apply_set(session, regrade, keep=keep, reason=reason, actor=common.actor())
            applied, moved = replaced(diff, keep), len(diff.learners)
    if dry_run:
        common.err.print(
            f"Dry run: applying regrade {set_id} would replace {applied} verdict(s) (old ones kept as superseded), "
            f"{moved} learner(s)' counted score or rank would move; nothing changed.",
            highlight=False,
        )
        return
    common.err.print(
        f"Applied regrade {set_id}: {applied} verdict(s) replaced (old ones kept as superseded), "
        f"{moved} learner(s)' counted score or rank moved.",
        highlight=False,
    )


@app.command("cancel")
@common.edge
def cancel(
    set_id: Annotated[int, typer.Argument(metavar="ID", help="Regrade set id.")],
    dry_run: Annotated[bool, _DRY_RUN] = False,
) -> None:
    """Drop a set that was not applied; nothing learners see changes. Runs against a server
    with --server (an instructor account's token)."""
    server = remote.target()
    if server is not None:
        server.send("POST", f"/regrades/{set_id}/cancel", {}, dry_run="true" if dry_run else None)
    else:
        from server.db import rolled_back
        from server.regrades.service import cancel as cancel_set
        from server.regrades.service import readable_set

        with common.session() as session:
            regrade = readable_set(session, set_id, None)
            with rolled_back(session) if dry_run else nullcontext():
                cancel_set(session, regrade, actor=common.actor())
    common.err.print(
        f"Dry run: regrade {set_id} would be cancelled; nothing changed."
        if dry_run
        else f"Cancelled regrade {set_id}; nothing changed.",
        highlight=False,
    )


@app.command("list")
@common.edge
def list_() -> None:
    """The newest regrade sets and where each stands; runs against a server with --server (the
    sets of the courses its token's owner teaches)."""
    server = remote.target()
    if server is not None:
        sets = [RegradePublic.model_validate(one) for one in server.get("/regrades")]
    else:
        from server.regrades.service import list_sets
        from server.regrades.views import regrade_public

        with common.session() as session:
            sets = [regrade_public(session, r) for r in list_sets(session, None)]
    lines = [describe(r) for r in sets]
    common.out.print(plain("\n".join(lines)) if lines else "no regrade yet", highlight=False, soft_wrap=True)


def _wait_ready(set_id: int, poll: float = 1.0) -> None:
    server = remote.target()
    while True:
        if server is not None:
            state = RegradePublic.model_validate(server.get(f"/regrades/{set_id}", keep=Keep.NEW.value)["regrade"])
            regrade_state, done, total = state.state, state.graded, state.total
        else:
            from server.regrades.service import progress, readable_set

            with common.session() as session:
                regrade_state = RegradeState(readable_set(session, set_id, None).state)
                done, total = progress(session, set_id)
        if regrade_state != RegradeState.GRADING:
            return
        common.err.print(f"  {done} of {total} graded...", highlight=False)
        time.sleep(poll)


def diff_lines(diff: RegradeDiff) -> Iterator[Table | str]:
    """The diff as tables (the CLI's ``show``), from what ``GET /regrades/{id}`` answers."""
    yield describe(diff.regrade)
    yield (
        f"Scores: {diff.up} up, {diff.down} down, {diff.same} same; "
        f"{len(diff.changed)} verdict(s) changed"
        + (f"; {len(diff.failed)} could not be regraded (internal_error, left as they are)" if diff.failed else "")
    )
    changed = Table(
        "submission", "learner", "before", "after", "counted before", "counted after", title="Changed verdicts"
    )
    for c in diff.changed:
        changed.add_row(
            *map(
                plain,
                (
                    str(c.submission),
                    c.learner,
                    _outcome(c.old_verdict, c.old_score),
                    _outcome(c.new_verdict, c.new_score),
                    _score(c.old_counted_score),
                    _score(c.new_counted_score),
                ),
            ),
        )
    yield changed
    largest = Table("submission", "learner", "change", title="Largest changes (score that counts)")
    for c in diff.largest:
        # the change of the score that counts (a verdict without a score counts 0), as Change.delta
        delta = (c.new_counted_score or 0.0) - (c.old_counted_score or 0.0)
        largest.add_row(*map(plain, (str(c.submission), c.learner, f"{delta:+g}")))
    yield largest
    checks = Table("check", "now failing", "now passing", title="Checks that changed")
    for shift in diff.checks:
        checks.add_row(
            *map(
                plain,
                (
                    shift.id,
                    str(shift.now_failing),
                    str(shift.now_passing),
                ),
            )
        )
    yield checks
    mistakes = Table("named mistake", "now named", "no longer named", title="Named mistakes that changed")
    for shift in diff.mistakes:
        mistakes.add_row(
            *map(
                plain,
                (
                    shift.id,
                    str(shift.now_failing),
                    str(shift.now_passing),
                ),
            )
        )
    yield mistakes
    learners = Table(
        "course",
        "learner",
        "counted score",
        "rank",
        title=plain(f"Learners whose counted score or board rank changes (keep {diff.keep})"),
    )
    for moved in diff.learners:
        learners.add_row(
            *map(
                plain,
                (
                    moved.course,
                    moved.learner,
                    f"{_score(moved.old_score)} -> {_score(moved.new_score)}",
                    f"{moved.old_rank} -> {moved.new_rank}",
                ),
            ),
        )
    yield learners


def _show(set_id: int, keep: Keep) -> None:
    server = remote.target()
    if server is not None:
        diff = RegradeDiff.model_validate(server.get(f"/regrades/{set_id}", keep=keep.value))
    else:
        from server.regrades.service import readable_set
        from server.regrades.views import diff_public

        with common.session() as session:
            diff = diff_public(session, readable_set(session, set_id, None), keep)
    for part in diff_lines(diff):
        common.out.print(part) if isinstance(part, Table) else common.out.print(
            plain(part), highlight=False, soft_wrap=True
        )
