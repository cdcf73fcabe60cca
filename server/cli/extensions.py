"""``ppo-grader extensions``: ``grant`` a later due date for one learner on one exercise;
``import`` extensions and corrections in bulk from a CSV (``server.courses.bulk``), with
``--dry-run`` to see each row's change first."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from server.cli import common

if TYPE_CHECKING:
    from server.courses.bulk import BulkPlan

app = typer.Typer(
    help="Extensions: a later due date for one learner on one exercise; extensions and corrections from a CSV.",
    no_args_is_help=True,
)


@app.command("grant")
@common.edge
def extensions_grant(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    user: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    due: Annotated[
        str, typer.Option(help="The learner's new due date (ISO; course's zone unless an offset is given).")
    ],
    reason: Annotated[str, typer.Option(help="Why (kept with the extension and in the audit log).")] = "",
) -> None:
    """Give one learner a later due date on one exercise (an earlier hard close moves with it)."""
    from server.courses.service import course_time, find_course
    from server.courses.sets import grant_extension

    with common.session() as session:
        where = find_course(session, course)
        granted = grant_extension(
            session, where, user, exercise, common.when(due, where, "--due"), actor=common.actor(), reason=reason
        )
        when = course_time(granted.extension.due_at, where)
    common.err.print(
        f"{user!r} may hand in {exercise!r} in {course!r} until {when}; {_recomputed(granted.recomputed)}.",
        highlight=False,
    )


@app.command("import")
@common.edge
def extensions_import(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    file: Annotated[
        Path,
        typer.Argument(help="CSV: learner,exercise,due,score,reason[,action] (a header row, then one action a row)."),
    ],
    action: Annotated[
        str | None,
        typer.Option(
            help="The action of rows without an action column: extend, undo-extend, override, excuse, "
            "undo-override, undo-excuse (default: extend with a due column, override with a score column)."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what each row would change; change nothing.")
    ] = False,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="The staff account making the changes (the learner reads it). Default: the owner of PPO_GRADER_TOKEN.",
        ),
    ] = None,
) -> None:
    """Apply extensions and corrections from a CSV, all or nothing: each row is checked, a refused
    row is listed with why (exit code 1, and nothing is applied)."""
    from server.courses.bulk import MAX_CSV_BYTES, read_csv, run
    from server.courses.service import find_course
    from server.courses.staff import correction_author

    with file.open("rb") as handle:
        data = handle.read(MAX_CSV_BYTES + 1)
    rows = read_csv(data, action)
    with common.session() as session:
        where = find_course(session, course)
        author = correction_author(session, where, by, common.settings().secret_bytes)
        plan = run(session, where, rows, author, apply=not dry_run)
    _print(plan, dry_run)
    if plan.refused:
        raise typer.Exit(1)


def _print(plan: BulkPlan, dry_run: bool) -> None:
    from server.terminal import columns

    table = columns(
        ("line", "learner", "exercise", "action", "change", "counted before", "after", "refused"),
        (
            (
                r.row.line,
                r.row.learner,
                r.row.exercise,
                r.row.action,
                r.change or "-",
                r.before or "-",
                r.after or "-",
                r.refused or "",
            )
            for r in plan.results
        ),
        title=f"{plan.course}: {len(plan.results)} rows",
    )
    common.out.print(table, markup=False, highlight=False, soft_wrap=True)
    ok = len(plan.results) - len(plan.refused)
    if plan.refused:
        summary = (
            f"{len(plan.refused)} row(s) refused (listed above); nothing applied. "
            "Fix or remove them and run the import again."
        )
    elif dry_run:
        summary = f"Dry run: {ok} row(s) would apply, {plan.changed} counted score(s) would change; nothing changed."
    else:
        summary = f"Applied {ok} row(s); {plan.changed} counted score(s) changed (digest {plan.digest[:12]})."
    common.err.print(summary, markup=False, highlight=False)


def _recomputed(count: int) -> str:
    """What an extension did to the submissions already made, in one phrase."""
    if not count:
        return "no earlier submission changed"
    return f"recomputed the late penalty of {count} earlier submission{'s' if count != 1 else ''}"
