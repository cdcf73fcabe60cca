"""Admin commands on a course of 200 learners: each `ppo-grader` command that reads the database,
timed as a real subprocess (what an instructor waits for at the terminal).

Builds a fresh SQLite database with the real commands (`migrate`, `courses create`, a roster of
200 learners through `courses enroll`, `sets publish` of every exercise), bulk-inserts their
finished submissions (about three per learner and exercise, four check rows per graded one,
some late) with ``best_scores`` backfilled as the migrations do, adds extensions and
corrections through the commands, then runs each read command ``--repeats`` times and prints
the median and fastest wall time, and the process's own CPU time (user + system, from
``os.wait4``: what the command cost, whatever else the machine was doing). The 1-minute load
average before and after is printed beside the figures: on a shared machine the wall times
follow it, the CPU times much less.

    .venv/bin/python bench/admin.py --write

Each command runs as ``python -c "from server.cli import app; app()" ARGS`` with this checkout
first on ``sys.path`` (the ``ppo-grader`` console script's own entry point, ``server.cli:app``,
without depending on which checkout the venv's script was installed from).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import insert, select, text  # noqa: E402

from bench.report import write_section  # noqa: E402
from server.db import make_engine  # noqa: E402
from server.courses.best_scores import backfill_best_scores  # noqa: E402
from server.models import CheckResult, Course, Submission, User  # noqa: E402

TITLE = "Admin commands (200 learners)"
COURSE = "bench-a"
BUDGET_S = 1.0
CHECKS = ["value", "gradient", "clip", "shapes"]
VERDICTS = ["graded"] * 85 + ["runtime_error"] * 6 + ["time_limit"] * 4 + ["syntax_error"] * 4 + ["internal_error"]
LAUNCH = "import sys; from server.cli import app; sys.argv[0] = 'ppo-grader'; app()"


class Cli:
    """Runs ``ppo-grader`` subprocesses on one database, timing each."""

    def __init__(self, database: str, cwd: Path) -> None:
        self.env = {
            **os.environ,
            "PPO_GRADER_DATABASE_URL": database,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "client")]),
            "COLUMNS": "200",
        }
        self.env.pop("PPO_GRADER_TOKEN", None)
        self.cwd = cwd

    def run(self, *args: str, ok: tuple[int, ...] = (0,)) -> tuple[str, float, float]:
        """(stdout, wall seconds, CPU seconds of the child) of one command."""
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, *args],
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = child.communicate(timeout=600)
        wall = time.perf_counter() - start
        # communicate() reaped it: its rusage is the children's since the last check.
        cpu = _children_cpu()
        if child.returncode not in ok:
            raise SystemExit(f"ppo-grader {' '.join(args)} exited {child.returncode}:\n{err[-2000:]}")
        return out, wall, cpu


_LAST_CHILDREN = [0.0]


def _children_cpu() -> float:
    usage = os.times()
    total = usage.children_user + usage.children_system
    spent, _LAST_CHILDREN[0] = total - _LAST_CHILDREN[0], total
    return spent


def build(cli: Cli, url: str, learners: int, seed: int, exercise_count: int | None) -> dict[str, object]:
    """The course, through the commands where a course team would use them; the submissions in
    bulk. ``exercise_count``: the catalogue's first N exercises (None: all of them)."""
    from server.catalogue.service import list_exercises

    exercises = [e.slug for e in list_exercises()][:exercise_count]
    cli.run("migrate")
    cli.run("users", "add", "prof", "--role", "instructor")
    cli.run("courses", "create", COURSE, "--title", "Bench A", "--time-zone", "Europe/Paris", "--instructor", "prof")
    roster = cli.cwd / "roster.csv"
    roster.write_text("name,display_name\n" + "".join(f"l{i:03d}@uni.edu,Learner {i}\n" for i in range(learners)))
    _, enroll_s, _ = cli.run("courses", "enroll", COURSE, str(roster))
    now = datetime.now(UTC).replace(microsecond=0)
    due = now - timedelta(days=2)
    for slug in exercises:
        cli.run(
            "sets",
            "publish",
            COURSE,
            slug,
            "--release",
            (now - timedelta(days=30)).isoformat(),
            "--due",
            due.isoformat(),
            "--penalty",
            "10",
        )
    fill_s = _fill(url, exercises, due, seed)
    for i in range(0, learners, 20):  # a few extensions and corrections, as a term has them
        cli.run("extensions", "grant", COURSE, f"l{i:03d}@uni.edu", exercises[0], "--due", now.isoformat())
        cli.run(
            "scores",
            "override",
            COURSE,
            f"l{i + 1:03d}@uni.edu",
            exercises[1],
            "95",
            "--reason",
            "by hand",
            "--by",
            "prof",
        )
        cli.run("scores", "excuse", COURSE, f"l{i + 2:03d}@uni.edu", exercises[2], "--reason", "ill", "--by", "prof")
    return {"exercises": exercises, "fill_s": fill_s, "enroll_s": enroll_s}


def _fill(url: str, exercises: list[str], due: datetime, seed: int) -> float:
    """About three finished submissions per learner and exercise, some late, with check rows."""
    start = time.perf_counter()
    rng = random.Random(seed)
    engine = make_engine(url)
    with engine.begin() as conn:
        course_id = conn.execute(select(Course.id).where(Course.slug == COURSE)).scalar_one()
        users = [r[0] for r in conn.execute(select(User.id).where(User.name.like("l%@uni.edu")))]
        subs, checks, sid = [], [], conn.execute(text("SELECT COALESCE(MAX(id), 0) FROM submissions")).scalar_one()
        for user_id in users:
            for slug in exercises:
                for _ in range(rng.choice((1, 2, 3, 3, 4, 5))):
                    sid += 1
                    verdict = rng.choice(VERDICTS)
                    graded = verdict == "graded"
                    passed = [rng.random() < 0.75 for _ in CHECKS] if graded else []
                    created = due - timedelta(hours=rng.uniform(-30, 200))
                    late = int((created - due).total_seconds()) if created > due else None
                    penalty = 10.0 * (1 + (late or 0) // 86400) if late else 0.0
                    raw = 25.0 * sum(passed) if graded else None
                    counted = None if raw is None else raw * (1 - penalty / 100)
                    subs.append(
                        {
                            "id": sid,
                            "user_id": user_id,
                            "course_id": course_id,
                            "exercise": slug,
                            "source": "def f():\n    return 1\n",
                            "source_sha256": "0" * 64,
                            "status": "done",
                            "verdict": verdict,
                            "score": raw,
                            "counted_score": counted,
                            "board_score": counted,
                            "late_seconds": late,
                            "penalty_percent": penalty,
                            "message": "",
                            "stdout": "",
                            "stderr": "",
                            "timings": {},
                            "attempts": 1,
                            "peak_memory_bytes": rng.randint(10**6, 10**8),
                            "cpu_seconds": rng.uniform(0.05, 2.0),
                            "created_at": created,
                            "finished_at": created + timedelta(seconds=3),
                        }
                    )
                    for position, (name, ok) in enumerate(zip(CHECKS, passed, strict=False)):
                        checks.append(
                            {
                                "submission_id": sid,
                                "name": name,
                                "check_id": f"{slug}/{name}",
                                "weight": 25.0,
                                "passed": ok,
                                "message": "",
                                "position": position,
                                "mistake_title": None if ok or rng.random() < 0.5 else f"{name}-mistake",
                            }
                        )
        conn.execute(insert(Submission), subs)
        conn.execute(insert(CheckResult), checks)
        backfill_best_scores(conn)
    with engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE")
    engine.dispose()
    print(f"filled {len(subs):,} submissions, {len(checks):,} check rows", file=sys.stderr)
    return time.perf_counter() - start


def commands(exercises: list[str], out: Path, learners: int) -> list[tuple[str, ...]]:
    """Every admin command that reads the database (``similarity`` reads the run made beforehand)."""
    learner = f"l{min(7, learners - 1):03d}@uni.edu"
    return [
        ("users", "list"),
        ("courses", "list"),
        ("sets", "list", COURSE),
        ("exercises", "list"),
        ("exercises", "versions", exercises[0]),
        ("courses", "gradebook", COURSE),
        ("courses", "gradebook", COURSE, "--format", "canvas"),
        ("courses", "gradebook", COURSE, "--format", "moodle"),
        ("scores", "list", COURSE),
        ("scores", "list", COURSE, "--learner", learner),
        ("similarity", COURSE),
        ("regrade", "list"),
        ("submissions", "export", COURSE, "--out", str(out / "export.zip")),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--exercises", type=int, default=None, help="publish the catalogue's first N (default: all)")
    parser.add_argument("--warm-ups", type=int, default=1, help="untimed runs of each command before the timed ones")
    parser.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    args = parser.parse_args()
    if args.learners < 3 or args.repeats < 1 or (args.exercises is not None and args.exercises < 3):
        parser.error(
            "--learners and --exercises are at least 3 (the corrections need three of each), --repeats at least 1"
        )

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        url = f"sqlite:///{folder}/admin.db"
        cli = Cli(url, folder)
        built = build(cli, url, args.learners, args.seed, args.exercises)
        exercises = built["exercises"]
        assert isinstance(exercises, list)
        cli.run("similarity", COURSE, "--refresh")  # the run the timed `similarity` reads
        rows = list(csv.DictReader(io.StringIO(cli.run("courses", "gradebook", COURSE)[0])))
        assert len(rows) == args.learners * len(exercises), len(rows)
        load_before = os.getloadavg()
        results = []
        for command in commands(exercises, folder, args.learners):
            for _ in range(args.warm_ups):
                cli.run(*command)  # warm the page cache: every figure is a warm start
            runs = [cli.run(*command)[1:] for _ in range(args.repeats)]
            walls, cpus = [w for w, _ in runs], [c for _, c in runs]
            results.append((command, statistics.median(walls), min(walls), statistics.median(cpus)))
            print(f"{' '.join(command):60s} {results[-1][1]:.2f} s", file=sys.stderr)
        load_after = os.getloadavg()
        import_cpu = statistics.median(
            [cli.run("--help")[2] for _ in range(args.repeats)]
        )  # starting Python and loading every sub-app (a read command loads one, and the database's)

    def shown(command: tuple[str, ...]) -> str:
        return "ppo-grader " + " ".join("OUT.zip" if c.endswith("export.zip") else c for c in command)

    table = [
        f"| `{shown(c)}` | {median:.2f} | {fastest:.2f} | {cpu:.2f} | {'yes' if median < BUDGET_S else 'no'} |"
        for c, median, fastest, cpu in results
    ]
    body = "\n".join(
        [
            f"A course of {args.learners} learners (logins like `l007@uni.edu`) with all {len(exercises)} exercises "
            f"published, about three finished submissions per learner and exercise (four check rows per graded "
            f"one, some late with a 10% per day penalty), a few extensions, overrides and excuses; SQLite. The "
            "roster, the set and the corrections went through the commands; the submissions were bulk-inserted "
            f"({built['fill_s']:.1f} s) with `best_scores` backfilled as the migrations do. Each command ran "
            f"{args.repeats} times after one warm-up, as a real subprocess; wall seconds (median, fastest) and the "
            "command's own CPU seconds (median). `ppo-grader --help` (start Python, load every sub-app to list "
            "them) costs "
            f"{import_cpu:.2f} s of CPU. Load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} "
            "after, on 2 shared cores: wall times follow the load, CPU times much less. "
            f"Roster import of {args.learners} new learners (`courses enroll`, a write): {built['enroll_s']:.1f} s.",
            "",
            f"| command | median (s) | fastest (s) | CPU (s) | under {BUDGET_S:g} s |",
            "|---|---:|---:|---:|:---:|",
            *table,
        ]
    )
    print(body)
    if args.write:
        write_section(TITLE, ".venv/bin/python bench/admin.py --write", body)


if __name__ == "__main__":
    main()
