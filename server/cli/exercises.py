"""``ppo-grader exercises``: list, versions, new, verify (the gate before learners see an exercise)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from server.cli import common
from server.terminal import plain

if TYPE_CHECKING:
    from exercises.verify import Verification

app = typer.Typer(help="Inspect the exercise catalog.", no_args_is_help=True)


@app.command("list")
@common.edge
def exercises_list() -> None:
    """List the exercises this server grades (the packs recorded in its database), as their
    specs name them; `exercises verify` runs them."""
    from server.catalog.service import catalogue_index

    common.served_packs_if_any()
    table = Table("order", "slug", "function", "title")
    for exercise in catalogue_index():  # the specs read, not run: no torch (unless a spec must be run)
        table.add_row(*map(plain, (str(exercise.order), exercise.slug, exercise.function, exercise.title)))
    common.out.print(table)


@app.command("versions")
@common.edge
def exercises_versions(slug: Annotated[str, typer.Argument(help="The exercise's slug.")]) -> None:
    """An exercise's versions: stored and verified ones, the pack folder's, and which course's
    set serves which (learners are graded by the version their set pins or, where it pins none,
    by the served version: nothing else)."""
    from exercises.packs import BUILTIN
    from server.catalog.service import catalogue_index
    from server.catalog.versions import versions_of

    with common.session() as session:
        # The folder's version is a hash of its files: the index names the folder, nothing is run.
        # None: known only from its stored versions (its pack is not visible here).
        exercise = next((e for e in catalogue_index() if e.slug == slug), None)
        lines = versions_of(session, exercise, slug)
    if not lines:
        common.fail(f"no exercise {slug!r} here and no stored version of it; `ppo-grader exercises list`")
    # One line per version (a table would cut the hashes at 80 columns): newest first.
    print(f"{slug}: {len(lines)} version(s), newest first")
    for line in lines:
        print(
            f"  {line.version}  verify {line.verified}"
            + (f" {line.verified_at}" if line.verified != "never" else "")
            + f"  grader {line.grader_version}  {'stored' if line.stored else 'not stored'}"
            + f"  serves: {', '.join(line.serves) or '-'}"
            + ("  (the pack folder's)" if line.in_folder else "")
            + ("  (served where no set pins a version)" if line.served else "")
        )
    serving = any(o.serves for o in lines)
    for line in lines:
        if line.in_folder and line.verified != "passed" and serving:
            common.out.print(
                f"{slug}: the pack folder's version {line.version} is not verified: nothing a learner sees "
                "changes until it passes `exercises verify` and is published",
                highlight=False,
                soft_wrap=True,
            )
    if not serving and exercise is not None and exercise.pack != BUILTIN:
        common.out.print(
            f"{slug}: no verified version of it serves learners: nothing grades it until one passes `exercises verify`",
            highlight=False,
            soft_wrap=True,
        )


@app.command("new")
@common.edge
def exercises_new(
    slug: Annotated[str, typer.Argument(help="The new exercise's slug (lower-case words joined by hyphens).")],
    pack: Annotated[Path, typer.Option("--pack", help="The pack folder to write it into (created if needed).")],
) -> None:
    """Write a working exercise (spec, starter, reference, faulty reference, checks) to change."""
    from exercises.scaffold import ScaffoldError, new_exercise, next_step

    try:
        folder = new_exercise(slug, pack)
    except ScaffoldError as exc:
        common.fail(str(exc))
    common.err.print(plain(next_step(folder, pack)), highlight=False, soft_wrap=True)


@app.command("verify")
@common.edge
def exercises_verify(
    slug: Annotated[str | None, typer.Argument(help="Only this exercise (default: all, or all of --pack).")] = None,
    pack: Annotated[Path | None, typer.Option("--pack", help="Verify the exercises of this pack folder.")] = None,
    seeds: Annotated[int, typer.Option(min=1, max=100, help="Seeds graded per source (the gate asks for 20).")] = 20,
) -> None:
    """The gate before learners see an exercise: grade its reference, starter, a zeros stub and
    every fault through the real jail on every seed, check its starter and cases; print a table
    per exercise, record the result by content version (``sets publish`` needs a pass), and exit
    1 when anything fails."""
    from exercises import registry
    from exercises.judge import Judge
    from exercises.packs import path_pack
    from exercises.verify import SEEDS, verify_exercise
    from server.catalog.verification import record_verification
    from server.grading.grader import sandbox_limits
    from server.location import is_initialised, locate

    settings = common.settings()
    common.served_packs_if_any()
    extra = path_pack(pack) if pack is not None else None
    catalogue = registry.load([extra] if extra else [])
    chosen = [e for e in catalogue if extra is None or e.pack == extra.name]
    if slug is not None:
        chosen = [e for e in chosen if e.slug == slug]
        if not chosen:
            common.fail(
                f"no exercise {slug!r}" + (f" in pack {pack}" if pack else "") + "; `ppo-grader exercises list`"
            )
    judge = Judge(secret=settings.secret_bytes, limits=sandbox_limits(settings), pool_size=1)
    results = []
    try:
        for ex in chosen:
            result = verify_exercise(judge, ex, SEEDS[:seeds] if seeds <= len(SEEDS) else range(1, seeds + 1))
            results.append((ex, result))
            _print_verification(result)
    finally:
        judge.close()
    where = locate()
    if common.INIT["init"] or is_initialised(where.url) or where.recorded:  # a recorded one that is gone: one red line
        with common.session() as session:
            for ex, result in results:
                record_verification(session, ex, result)
    else:  # an author's laptop: the gate still answers, but `sets publish` reads the server's record
        common.err.print(
            f"not recorded: no ppo-grader database at {where.shown} (from {where.source}); `sets publish` "
            "needs the record in the server's database (run verify where it finds it, or pass --init)",
            highlight=False,
            soft_wrap=True,
        )
    failed = [r.slug for _, r in results if not r.ok]
    common.out.print(
        f"{len(results) - len(failed)} of {len(results)} exercise(s) pass verify"
        + (f"; failing: {', '.join(failed)}" if failed else ""),
        highlight=False,
        soft_wrap=True,
    )
    if failed:
        raise typer.Exit(1)


def _print_verification(result: Verification) -> None:
    """One exercise's table, then each problem on a line of its own (never cut mid-sentence)."""
    table = Table("criterion", "result", title=plain(f"{result.slug} (pack {result.pack})"), title_justify="left")
    for c in result.criteria:
        table.add_row(plain(c.name), "[green]ok[/green]" if c.ok else f"[red]FAIL[/red] ({len(c.found)})")
    common.out.print(table)
    for problem in result.problems():
        common.out.print(f"  [red]x[/red] {plain(result.slug)}: {plain(problem)}", highlight=False, soft_wrap=True)
