"""``ppo-grader extensions``: ``grant`` a later due date for one learner on one exercise;
``import`` extensions and corrections in bulk from a CSV (``server.courses.bulk``), with
``--dry-run`` to see each row's change first."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from server.cli import common, remote
from server.times import zoned_time

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
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Only say how many earlier submissions it would re-price; nothing is written."),
    ] = False,
) -> None:
    """Give one learner a later due date on one exercise (an earlier hard close moves with it);
    runs against a server with --server."""
    server = remote.target()
    if server is not None:
        from server.courses.schemas import ExtensionPublic

        granted = ExtensionPublic.model_validate(
            server.send(
                "PUT",
                f"/courses/{remote.part(course)}/extensions/{remote.part(user)}/{remote.part(exercise)}",
                {"due_at": common.iso_time(due, "--due").isoformat(), "reason": reason},
                dry_run="true" if dry_run else None,
            )
        )
        moment, zone, count = granted.due_at, granted.time_zone, granted.recomputed
    else:
        from server.courses.service import find_course
        from server.courses.sets import grant_extension, preview_extension

        with common.session() as session:
            where = find_course(session, course)
            moment, zone = common.when(due, where, "--due"), where.time_zone
            if dry_run:
                count = preview_extension(session, where, user, exercise, moment)
            else:
                count = grant_extension(
                    session, where, user, exercise, moment, actor=common.actor(), reason=reason
                ).recomputed
    common.err.print(
        (f"Dry run: {user!r} would hand in" if dry_run else f"{user!r} may hand in")
        + f" {exercise!r} in {course!r} until {zoned_time(moment, zone)}; {_recomputed(count, dry_run)}"
        + ("; nothing changed." if dry_run else "."),
        highlight=False,
        soft_wrap=True,
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


def _recomputed(count: int, dry_run: bool) -> str:
    """What an extension did (or, a dry run, would do) to the submissions already made, in one phrase."""
    if not count:
        return f"no earlier submission {'would change' if dry_run else 'changed'}"
    plural = "s" if count != 1 else ""
    return f"{'would recompute' if dry_run else 'recomputed'} the late penalty of {count} earlier submission{plural}"
