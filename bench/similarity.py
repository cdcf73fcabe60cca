"""Time of one similarity run for a course of 200 learners x 11 exercises (target: < 60 s).

Fills a fresh database (SQLite; PostgreSQL too when it is reachable) with the synthetic
course of ``bench/similarity_corpus.py``: per learner and exercise a best submission and,
for one learner in three, a later latest one (a small edit), so the run compares up to
two files per learner; 3 planted copies. Then runs the job body the queues run
(``run_similarity``: read every file, normalise, fingerprint, compare, aggregate, store the
capped pairs with their spans) and checks that the planted pairs rank first.

    .venv/bin/python bench/similarity.py --learners 200 --write
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import select  # noqa: E402

from bench.report import write_section  # noqa: E402
from bench.similarity_corpus import synthetic_course  # noqa: E402
from exercises.registry import all_exercises
from server.courses.service import LEARNER, create_course  # noqa: E402
from server.db import make_engine, make_session_factory, transaction  # noqa: E402
from server.migrations import upgrade_to_head  # noqa: E402
from server.models import BestScore, Course, Enrollment, SimilarityPair, Submission, User  # noqa: E402
from server.similarity.service import run_similarity, request_run  # noqa: E402
from server.courses.sets import publish  # noqa: E402

TITLE = "Similarity: one run over 200 learners x 11 exercises"
PG_ADMIN = os.environ.get("PPO_GRADER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def fill(url: str, learners: int) -> tuple[int, set[tuple[int, int]], int]:
    """The course's id, the planted pairs (user ids), and how many submissions were stored."""
    engine = make_engine(url)
    upgrade_to_head(engine)
    sessions = make_session_factory(engine)
    course = synthetic_course(learners)
    stored = 0
    with transaction(sessions) as session:
        where = create_course(session, "bench", "bench")
        users = [User(name=f"learner{l.index:03d}", display_name=f"Learner {l.index}", role="learner") for l in course]
        session.add_all(users)
        session.flush()
        session.add_all(Enrollment(course_id=where.id, user_id=u.id, role=LEARNER) for u in users)
        slugs = sorted(course[0].files)
        for slug in slugs:
            publish(session, where, slug)
        for learner, user in zip(course, users, strict=True):
            for slug in slugs:
                text = learner.files[slug]
                best = Submission(user_id=user.id, course_id=where.id, exercise=slug, source=text,
                                  source_sha256=hashlib.sha256(text.encode()).hexdigest(), status="done",
                                  verdict="graded", score=100.0, counted_score=100.0)
                session.add(best)
                stored += 1
                if learner.index % 3 == 0:
                    edited = text + "\n# tidied up\nassert True\n"
                    session.add(Submission(user_id=user.id, course_id=where.id, exercise=slug, source=edited,
                                           source_sha256=hashlib.sha256(edited.encode()).hexdigest(), status="done",
                                           verdict="graded", score=90.0, counted_score=90.0))
                    stored += 1
                session.flush()
                session.add(BestScore(course_id=where.id, user_id=user.id, exercise=slug, best_score=100.0, attempts=1,
                                      best_submission_id=best.id, counted_score=100.0, counted_submission_id=best.id))
        planted = {
            (users[l.copy_of].id, users[l.index].id) for l in course if l.copy_of is not None  # type: ignore[index]
        }
        course_id = where.id
    engine.dispose()
    return course_id, planted, stored


def timed_run(url: str, course_id: int, planted: set[tuple[int, int]], processes: int) -> tuple[float, int, bool]:
    """Seconds for one run, pairs found, whether the planted pairs are the top 3."""
    engine = make_engine(url)
    sessions = make_session_factory(engine)
    with transaction(sessions) as session:
        run, _ = request_run(session, session.get(Course, course_id))  # type: ignore[arg-type]
        run_id = run.id
    began = time.perf_counter()
    status = run_similarity(sessions, run_id, processes=processes)
    seconds = time.perf_counter() - began
    assert status == "done", status
    with sessions() as session:
        pairs = list(session.scalars(select(SimilarityPair).where(SimilarityPair.run_id == run_id).order_by(SimilarityPair.score.desc())))
        from server.models import SimilarityRun

        found = session.get(SimilarityRun, run_id).summary["pairs_found"]  # type: ignore[union-attr]
    engine.dispose()
    top = {(p.learner_a_id, p.learner_b_id) for p in pairs[:3]}
    return seconds, int(found), top == planted


def _postgres_url() -> tuple[str, str] | None:
    try:
        import psycopg

        name = f"ppo_grader_bench_sim_{os.getpid()}"
        with psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return "postgresql+psycopg://" + PG_ADMIN.split("://", 1)[1].rsplit("/", 1)[0] + f"/{name}", name
    except Exception:  # noqa: BLE001 - unreachable: SQLite only
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=200)
    parser.add_argument("--processes", default="1,2", help="process counts of the run, comma-separated")
    parser.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    args = parser.parse_args()
    counts = [int(n) for n in args.processes.split(",")]
    load = os.getloadavg()
    rows = ["| database | processes | learners x exercises | submissions | pairs found | planted pairs top 3 | run seconds |", "|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        targets = [("SQLite", f"sqlite:///{tmp}/bench.db", None)]
        pg = _postgres_url()
        if pg is not None:
            targets.append(("PostgreSQL", pg[0], pg[1]))
        for label, url, pg_name in targets:
            course_id, planted, stored = fill(url, args.learners)
            for processes in counts:
                seconds, found, ok = timed_run(url, course_id, planted, processes)
                rows.append(f"| {label} | {processes} | {args.learners} x {len(all_exercises())} | {stored} | {found} | {'yes' if ok else 'NO'} | {seconds:.1f} |")
                print(rows[-1], flush=True)
            if pg_name is not None:
                import psycopg

                with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')
    body = "\n".join(rows) + (
        f"\n\nLoad average at the start: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} (2 cores, shared with other "
        "engineers' test runs). The synthetic course is the worst case for the pair count: every learner shares "
        "helpers with about one in ten others, so nearly every pair is compared and found."
    )
    print(body)
    if args.write:
        flags = "" if counts == [1, 2] else f" --processes {args.processes}"
        write_section(TITLE, f"python bench/similarity.py --learners {args.learners}{flags} --write", body)


if __name__ == "__main__":
    main()
