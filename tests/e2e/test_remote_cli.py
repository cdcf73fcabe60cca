"""The course commands from a laptop: `ppo-grader --server URL` against the real server (a real
`ppo-grader serve` on a port), run from another working directory with no database, prints what
the same command prints on the host, byte for byte, with the same exit code; a read-only token is
refused every write (403, nothing changes), a course-limited one every other course, and a dry
run changes nothing."""

from __future__ import annotations

import getpass
import os
import sqlite3
import subprocess
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from exercises.registry import get_exercise
from tests.cli_forks import run_cli

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: This checkout's code in every subprocess (the server's too: its env inherits this one).
CODE = os.pathsep.join([str(ROOT), str(ROOT / "client")])


def run(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m server.cli ARGS``, a process of its own, forked from one that imported the CLI
    once (tests/cli_forks.py: hundreds of commands here, 0.85 CPU-seconds of imports each)."""
    return run_cli(list(args), {**env, "PYTHONPATH": CODE}, cwd=cwd)


class Both:
    """The same command on the host (its database) and on a laptop (``--server``, a token)."""

    def __init__(self, server, laptop: Path) -> None:  # type: ignore[no-untyped-def]
        self.server = server
        self.laptop = laptop
        self.laptop_env = {k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")}

    def host(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run(self.server.env, *args)

    def ok(self, *args: str) -> str:
        done = self.host(*args)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    def remote(self, token: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**self.laptop_env, "PPO_GRADER_TOKEN": token}
        return run(env, "--server", self.server.url, *args, cwd=self.laptop)

    def same(self, token: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Run on both; stdout byte for byte, stderr but the host's `database:` line, exit codes."""
        here, there = self.host(*args), self.remote(token, *args)
        assert there.stdout == here.stdout, (args, here.stdout, there.stdout, there.stderr)
        assert said(there) == said(here), (args, here.stderr, there.stderr)
        assert there.returncode == here.returncode, (args, here.returncode, there.returncode, there.stderr)
        return here


def words(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join(done.stderr.split())


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if not line.startswith("database: ")]


def refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    """One red line naming the refusal, exit code 2, no traceback."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert all(word in lines[0] for word in words), (words, lines[0])


@dataclass
class Term:
    """Two courses of one instructor, a TA of the first, a late submission, and the tokens."""

    both: Both
    prof: str
    ta: str
    reader: str
    limited: str
    learner: str
    release: str
    due: str
    later: str

    def state(self) -> list[str]:
        """Every row of the server's database (a refused or dry write must leave each as it was):
        stricter than the reads' output, and one query instead of seven commands."""
        path = self.both.server.env["PPO_GRADER_DATABASE_URL"].removeprefix("sqlite:///")
        with closing(sqlite3.connect(path)) as db:
            # The server's own clock requests a similarity run once a due date passed (its sweep
            # ticks every 30 s, so at any moment of this module): that is not the command's write.
            return [line for line in db.iterdump() if not line.startswith('INSERT INTO "similarity_')]


#: The reads compared byte for byte.
READS = [("scores", "list", "rc-a"), ("scores", "list", "rc-a", "--learner", "rc-lena"), ("sets", "list", "rc-a"),
         ("courses", "gradebook", "rc-a"), ("courses", "gradebook", "rc-a", "--format", "canvas"),
         ("courses", "gradebook", "rc-a", "--format", "canvas", "--login-column", "sis-user-id"),
         ("courses", "gradebook", "rc-a", "--format", "moodle")]


#: The corrections, as a TA types them (``--by``: the host has no token to sign with; on a server
#: it must name the token's owner).
CORRECTIONS = [("scores", "override", "rc-a", "rc-lena", "actor-loss", "55", "--reason", "graded by hand",
                "--by", "rc-tina"),
               ("scores", "excuse", "rc-a", "rc-lena", "actor-loss", "--reason", "medical note", "--by", "rc-tina"),
               ("scores", "undo", "rc-a", "rc-lena", "actor-loss", "override", "--by", "rc-tina")]


def audited(server, action: str) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    """The audit log's (actor, target, detail) of ``action``, from the server's database."""
    path = server.env["PPO_GRADER_DATABASE_URL"].removeprefix("sqlite:///")
    with closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT actor, target, detail FROM audit_events WHERE action = ? ORDER BY id",
                          (action,)).fetchall()


@pytest.fixture(scope="module")
def term(server, tmp_path_factory: pytest.TempPathFactory) -> Term:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("remote")
    laptop = tmp / "laptop"
    laptop.mkdir()  # another working directory: no data/ folder, no PPO_GRADER_DATABASE_URL
    both = Both(server, laptop)
    now = datetime.now(UTC).replace(microsecond=0)
    prof = both.ok("users", "add", "rc-prof", "--role", "instructor").strip().splitlines()[-1]
    for slug in ("rc-a", "rc-b"):
        both.ok("courses", "create", slug, "--time-zone", "Europe/Paris", "--instructor", "rc-prof")
    roster = tmp / "roster.csv"
    roster.write_text("name,display_name\nrc-lena,Lena L.\nrc-max,Max M.\n")
    rows = both.ok("courses", "enroll", "rc-a", str(roster)).splitlines()[1:]
    tokens = {row.split(",")[0]: row.split(",")[-1] for row in rows}
    ta = both.ok("courses", "staff", "add", "rc-a", "rc-tina", "--role", "ta").strip().splitlines()[-1]
    reader = both.ok("users", "token", "rc-tina", "--read-only").strip()
    limited = both.ok("users", "token", "rc-prof", "--course", "rc-a").strip()
    due = (now - timedelta(hours=2)).isoformat()
    release = (now - timedelta(days=3)).isoformat()
    for slug in ("rc-a", "rc-b"):
        both.ok("sets", "publish", slug, "actor-loss", "--release", release, "--due", due, "--penalty", "10")
    solution = tmp / "solution.py"
    solution.write_text(get_exercise("actor-loss").reference_source)
    sent = server.submit(tokens["rc-lena"], str(solution), "--json", "--yes")  # late by 2h: 90 counts
    assert sent.returncode == 0, sent.stderr
    later = (now + timedelta(days=1)).isoformat()
    return Term(both, prof, ta, reader, limited, tokens["rc-lena"], release, due, later)


def test_a_tas_reads_from_a_laptop_are_the_hosts_byte_for_byte(term: Term) -> None:
    both, ta = term.both, term.ta
    for command in READS:
        done = both.same(ta, *command)
        assert done.returncode == 0 and done.stdout, (command, done.stderr)
    assert "90 (raw 100, late" in both.ok("scores", "list", "rc-a")
    assert both.same(term.prof, "regrade", "list").returncode == 0  # regrades: an instructor account's token
    # A refusal is a refusal on both sides, with the same exit code.
    assert both.same(ta, "courses", "gradebook", "rc-a", "--format", "xlsx").returncode == 2
    assert both.same(ta, "sets", "publish", "rc-a", "actor-loss", "--due", "not a date").returncode == 2
    assert both.remote(ta, "scores", "list", "no-such-course").returncode == 2
    assert both.host("scores", "list", "no-such-course").returncode == 2


def test_a_dry_run_counts_what_would_be_repriced_and_changes_nothing(term: Term) -> None:
    both, ta = term.both, term.ta
    before = term.state()
    dry = both.same(ta, "sets", "publish", "rc-a", "actor-loss", "--release", term.release, "--due", term.due,
                    "--penalty", "20", "--dry-run")
    assert dry.returncode == 0 and "would change the score that counts of 1 submission (1 would" in words(dry)
    dry = both.same(ta, "extensions", "grant", "rc-a", "rc-lena", "actor-loss", "--due", term.later, "--dry-run")
    assert dry.returncode == 0 and "would recompute the late penalty of 1 earlier submission" in words(dry)
    assert term.state() == before


def test_a_read_only_token_is_refused_every_write_and_a_course_limited_one_other_courses(term: Term) -> None:
    both, later = term.both, term.later
    before = term.state()
    assert both.same(term.reader, "sets", "list", "rc-a").returncode == 0
    for write in (("sets", "publish", "rc-a", "actor-loss", "--due", later),
                  ("sets", "publish", "rc-a", "actor-loss", "--due", later, "--dry-run"),
                  ("extensions", "grant", "rc-a", "rc-lena", "actor-loss", "--due", later),
                  ("extensions", "grant", "rc-a", "rc-lena", "actor-loss", "--due", later, "--dry-run"),
                  *CORRECTIONS, *(write + ("--dry-run",) for write in CORRECTIONS),
                  ("sets", "remove", "rc-a", "actor-loss"), ("sets", "remove", "rc-a", "actor-loss", "--dry-run"),
                  ("courses", "staff", "add", "rc-a", "rc-zed", "--dry-run"),
                  ("courses", "staff", "remove", "rc-a", "rc-tina", "--dry-run"),
                  ("sets", "hold", "rc-a", "actor-loss"), ("sets", "release", "rc-a", "actor-loss", "--dry-run"),
                  ("regrade", "apply", "1", "--reason", "r", "--dry-run"), ("regrade", "cancel", "1", "--dry-run")):
        refused(both.remote(term.reader, *write), "403", "read-only")
    assert both.same(term.limited, "sets", "list", "rc-a").returncode == 0
    for other in (("sets", "list", "rc-b"), ("scores", "list", "rc-b"), ("courses", "gradebook", "rc-b"),
                  ("sets", "publish", "rc-b", "actor-loss", "--due", later),
                  ("extensions", "grant", "rc-b", "rc-lena", "actor-loss", "--due", later),
                  ("sets", "hold", "rc-b", "actor-loss", "--dry-run"),
                  ("courses", "staff", "remove", "rc-b", "rc-prof", "--dry-run")):
        refused(both.remote(term.limited, *other), "403", "rc-a")
    # A learner's token is no staff token.
    refused(both.remote(term.learner, "sets", "list", "rc-a"), "403")
    refused(both.remote(term.learner, "courses", "gradebook", "rc-a"), "403")
    unsigned = [write[:-2] for write in CORRECTIONS]  # the token's owner signs (a learner's: refused)
    for write in (*unsigned, ("sets", "remove", "rc-a", "actor-loss", "--dry-run"),
                  ("sets", "hold", "rc-a", "actor-loss", "--dry-run"), ("sets", "release", "rc-a", "actor-loss")):
        refused(both.remote(term.learner, *write), "403", "rc-a")
    refused(both.remote(term.learner, "courses", "staff", "add", "rc-a", "rc-zed", "--dry-run"), "403")
    refused(both.remote(term.learner, "courses", "staff", "remove", "rc-a", "rc-tina", "--dry-run"), "403")
    refused(both.remote(term.learner, "regrade", "cancel", "1", "--dry-run"), "403")
    refused(both.remote(term.limited, *unsigned[0][:2], "rc-b", *unsigned[0][3:]), "403", "rc-a")
    assert term.state() == before


def test_a_tas_writes_from_a_laptop_say_what_the_host_says(term: Term) -> None:
    both, ta, later = term.both, term.ta, term.later
    publish = ("sets", "publish", "rc-a", "actor-loss", "--release", term.release, "--due", term.due,
               "--penalty", "20")
    there = both.remote(ta, *publish)
    assert there.returncode == 0, there.stderr
    here = both.host(*publish)
    assert said(there) == said(here) and said(here)[0].startswith("Published 'actor-loss' in 'rc-a': opens ")
    assert "20% off per day late" in both.ok("sets", "list", "rc-a")
    assert "80 (raw 100, late" in both.ok("scores", "list", "rc-a", "--learner", "rc-lena")
    grant = ("extensions", "grant", "rc-a", "rc-max", "actor-loss", "--due", later)
    there, here = both.remote(ta, *grant), both.host(*grant)
    assert there.returncode == here.returncode == 0 and said(there) == said(here), (there.stderr, here.stderr)
    granted = both.remote(ta, "extensions", "grant", "rc-a", "rc-lena", "actor-loss", "--due", later)
    assert granted.returncode == 0 and "recomputed the late penalty of 1 earlier submission" in words(granted)
    assert "100 (extended to" in both.ok("scores", "list", "rc-a", "--learner", "rc-lena")
    for command in READS:
        both.same(ta, *command)


def test_server_is_refused_for_the_commands_that_need_the_host(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    both = Both(server, tmp_path)
    for command in (("users", "list"), ("submissions", "export", "rc-a"), ("courses", "list"),
                    ("courses", "real-names", "rc-a", "on")):
        done = both.remote("any-token", *command)
        refused(done, "does not run against a server", "scores list", "sets publish")
    assert both.remote("t", "scores", "list", "--help").returncode == 0  # help runs anywhere
    env = {**both.laptop_env}  # --server and no token
    refused(run(env, "--server", server.url, "sets", "list", "rc-a", cwd=tmp_path), "PPO_GRADER_TOKEN")
    refused(run({**env, "PPO_GRADER_TOKEN": "t"}, "--server", "ftp://x", "sets", "list", "rc-a", cwd=tmp_path),
            "http")


def test_the_environment_names_the_server_for_the_commands_that_run_there(term: Term) -> None:
    both = term.both
    env = {**both.laptop_env, "PPO_GRADER_URL": both.server.url, "PPO_GRADER_TOKEN": term.ta}
    there = run(env, "sets", "list", "rc-a", cwd=both.laptop)
    assert there.returncode == 0 and there.stdout == both.ok("sets", "list", "rc-a"), there.stderr
    # The others stay on this installation's database (none here: refused, never made).
    alone = run(env, "users", "list", cwd=both.laptop)
    assert alone.returncode == 2 and "does not run against a server" not in alone.stderr, alone.stderr
    assert not (both.laptop / "data").exists()


def test_a_tas_corrections_from_a_laptop_say_what_the_host_says(term: Term) -> None:
    both, ta = term.both, term.ta
    override, excuse, undo = CORRECTIONS
    lena = ("scores", "list", "rc-a", "--learner", "rc-lena")
    before = both.ok(*lena)
    dry = both.same(ta, *override, "--dry-run")
    assert dry.returncode == 0 and "would make it 55 (override by rc-tina: graded by hand" in words(dry)
    assert both.ok(*lena) == before and not audited(both.server, "score.override")
    for write in (override, excuse):  # on the laptop, then the same again on the host: the same words
        there, here = both.remote(ta, *write), both.host(*write)
        assert there.returncode == here.returncode == 0 and said(there) == said(here), (there.stderr, here.stderr)
    assert "now excused (by rc-tina: medical note)" in words(there)
    assert [actor for actor, _, _ in audited(both.server, "score.override")] == ["rc-tina", "rc-tina"]
    dry = both.same(ta, *undo, "--dry-run")
    assert dry.returncode == 0 and "Dry run: taking back the override" in words(dry)
    taken = both.remote(ta, *undo)
    assert taken.returncode == 0 and "Took back the override" in words(taken), taken.stderr
    again = both.same(ta, *undo)  # nothing in force any more: the same refusal on both
    assert again.returncode == 2 and "has no override in force" in words(again)
    assert both.remote(ta, "scores", "undo", "rc-a", "rc-lena", "actor-loss", "excuse", "--by", "rc-tina").returncode == 0
    assert both.ok(*lena) == before
    # On a server the token's owner signs: --by may name no one else; a learner is no one to correct.
    refused(both.remote(ta, *override[:-1], "rc-prof"), "signed by the owner", "rc-tina")
    refused(both.remote(ta, "scores", "excuse", "rc-a", "rc-max-not", "actor-loss", "--reason", "x"), "404")
    assert both.host("scores", "excuse", "rc-a", "rc-max-not", "actor-loss", "--reason", "x",
                     "--by", "rc-tina").returncode == 2


def test_a_ta_takes_an_exercise_out_of_the_set_from_a_laptop(term: Term) -> None:
    both, ta = term.both, term.ta
    listed = both.ok("sets", "list", "rc-a")
    both.ok("sets", "publish", "rc-a", "gae")
    dry = both.same(ta, "sets", "remove", "rc-a", "gae", "--dry-run")
    assert dry.returncode == 0 and "'gae' would be taken out of 'rc-a'" in words(dry)
    assert "gae: " in both.ok("sets", "list", "rc-a")
    there = both.remote(ta, "sets", "remove", "rc-a", "gae")
    assert there.returncode == 0 and both.ok("sets", "list", "rc-a") == listed, there.stderr
    both.ok("sets", "publish", "rc-a", "gae")
    here = both.host("sets", "remove", "rc-a", "gae")
    assert here.returncode == 0 and said(here) == said(there) == ["Removed 'gae' from 'rc-a'."]
    assert audited(both.server, "set.unpublish")[0][0] == "rc-tina"
    gone = both.remote(ta, "sets", "remove", "rc-a", "gae", "--dry-run")  # not in the set any more
    refused(gone, "404", "not published")
    assert both.host("sets", "remove", "rc-a", "gae", "--dry-run").returncode == 2


def test_an_instructor_adds_staff_from_a_laptop_and_a_ta_may_not(term: Term) -> None:
    both, prof = term.both, term.prof
    add = ("courses", "staff", "add", "rc-a", "rc-ted")
    dry = both.same(prof, *add, "--dry-run")
    assert dry.returncode == 0 and not dry.stdout, dry.stderr
    assert "'rc-ted' would become a TA of 'rc-a' (a new account, its token shown once); nothing" in words(dry)
    refused(both.remote(term.ta, *add), "403", "instructor")  # a TA may not change staff
    assert not audited(both.server, "staff.add")[1:]  # only the fixture's TA so far
    made = both.remote(prof, *add)
    assert made.returncode == 0 and said(made) == ["'rc-ted' is now a TA of 'rc-a'. Token (shown once):"], made.stderr
    ted = made.stdout.strip()
    assert both.remote(ted, "sets", "list", "rc-a").stdout == both.ok("sets", "list", "rc-a")  # staff of rc-a now
    again = both.same(prof, *add)  # the account exists: no token
    assert again.returncode == 0 and not again.stdout and said(again) == ["'rc-ted' is now a TA of 'rc-a'."]
    raised = both.remote(prof, *add, "--role", "instructor")
    assert raised.returncode == 0 and "(their account is now an instructor account)." in words(raised)
    assert [(actor, target) for actor, target, _ in audited(both.server, "staff.add")][1:] == [
        ("rc-prof", "rc-ted"), ("cli:" + getpass.getuser(), "rc-ted"), ("rc-prof", "rc-ted"), ("rc-prof", "rc-ted")]
    # ... and takes them off again: a TA may not; the last instructor stays.
    remove = ("courses", "staff", "remove", "rc-a", "rc-ted")
    dry = both.same(prof, *remove, "--dry-run")
    assert dry.returncode == 0 and said(dry) == ["Dry run: 'rc-ted' would no longer be an instructor of 'rc-a'; nothing "
                                                 "changed."], dry.stderr
    refused(both.remote(term.ta, *remove), "403", "instructor")
    refused(both.remote(term.ta, *remove, "--dry-run"), "403", "instructor")
    assert not audited(both.server, "staff.remove")
    there = both.remote(prof, *remove)
    assert there.returncode == 0 and said(there) == ["'rc-ted' is no longer an instructor of 'rc-a'."], there.stderr
    refused(both.remote(ted, "sets", "list", "rc-a"), "404")  # no longer in rc-a
    both.ok(*add)  # back on the host, and off again there: the same words
    here = both.host(*remove)
    assert here.returncode == 0 and said(here) == said(there), here.stderr
    refused(both.remote(prof, *remove), "404", "not staff of 'rc-a'")
    assert both.host(*remove).returncode == 2
    refused(both.remote(prof, "courses", "staff", "remove", "rc-a", "rc-prof", "--dry-run"), "422", "last instructor")
    assert both.host("courses", "staff", "remove", "rc-a", "rc-prof", "--dry-run").returncode == 2
    assert [(actor, target, detail) for actor, target, detail in audited(both.server, "staff.remove")] == [
        ("rc-prof", "rc-ted", "instructor"), ("cli:" + getpass.getuser(), "rc-ted", "instructor")]


def test_a_ta_holds_and_releases_the_scores_from_a_laptop(term: Term) -> None:
    both, ta = term.both, term.ta
    hold, release = ("sets", "hold", "rc-a", "actor-loss"), ("sets", "release", "rc-a", "actor-loss")
    before = both.ok("sets", "list", "rc-a")
    assert "actor-loss: " in before and "feedback: full" in before
    dry = both.same(ta, *hold, "--dry-run")
    assert dry.returncode == 0 and said(dry) == ["Dry run: the scores of 'actor-loss' in 'rc-a' would be held until each "
                                                 "learner's due date (1 submission); nothing changed."], dry.stderr
    refused(both.remote(ta, *release, "--dry-run"), "422", "not held back")
    assert both.host(*release, "--dry-run").returncode == 2
    assert both.ok("sets", "list", "rc-a") == before and not audited(both.server, "scores.hold")
    there = both.remote(ta, *hold)
    assert said(there) == ["Held the scores of 'actor-loss' in 'rc-a' until each learner's due date (1 submission); "
                           "feedback: hidden-until-due."], there.stderr
    assert "feedback: hidden-until-due" in both.same(ta, "sets", "list", "rc-a").stdout
    dry = both.same(ta, *release, "--dry-run")
    assert dry.returncode == 0 and "would be released (1 submission); nothing changed." in words(dry)
    released = both.remote(ta, *release)
    assert released.returncode == 0 and both.ok("sets", "list", "rc-a") == before, released.stderr
    for write, done in ((hold, there), (release, released)):  # the host says what the laptop said
        here = both.host(*write)
        assert here.returncode == 0 and said(here) == said(done), (here.stderr, done.stderr)
    host = "cli:" + getpass.getuser()
    assert [(actor, target) for actor, target, _ in audited(both.server, "scores.hold") + audited(both.server,
            "scores.release")] == [("rc-tina", "actor-loss"), (host, "actor-loss"), ("rc-tina", "actor-loss"),
                                   (host, "actor-loss")]


def test_an_instructor_applies_and_cancels_regrades_from_a_laptop(term: Term) -> None:
    both, prof = term.both, term.prof
    graded = both.remote(prof, "regrade", "preview", "--exercise", "actor-loss", "--course", "rc-a",
                         "--all-versions", "--wait")
    assert graded.returncode == 0, graded.stderr
    ready, _, diff = graded.stdout.partition("\n")
    assert words(graded).startswith(f"Regrade {ready}: 1 submission(s) of 'actor-loss' queued behind live")
    shown = both.same(prof, "regrade", "show", ready)  # the diff, byte for byte, as --wait printed it
    assert shown.returncode == 0 and shown.stdout == diff and "1 same; 0 verdict(s) changed" in diff, shown.stdout
    waiting = both.ok("regrade", "preview", "--exercise", "actor-loss", "--course", "rc-a", "--all-versions").strip()
    dry = both.same(prof, "regrade", "apply", ready, "--reason", "fixed the grader", "--dry-run")
    assert dry.returncode == 0 and f"Dry run: applying regrade {ready} would replace 0 verdict(s)" in words(dry)
    dry = both.same(prof, "regrade", "cancel", waiting, "--dry-run")
    assert dry.returncode == 0 and f"regrade {waiting} would be cancelled; nothing changed." in words(dry)
    refused(both.remote(term.ta, "regrade", "cancel", waiting, "--dry-run"), "403", "instructor")  # a TA's account
    assert not audited(both.server, "regrade.apply") and not audited(both.server, "regrade.cancel")
    applied = both.remote(prof, "regrade", "apply", ready, "--reason", "fixed the grader")
    assert words(applied) == (f"Applied regrade {ready}: 0 verdict(s) replaced (old ones kept as superseded), 0 "
                              "learner(s)' counted score or rank moved."), applied.stderr
    cancelled = both.remote(prof, "regrade", "cancel", waiting)
    assert said(cancelled) == [f"Cancelled regrade {waiting}; nothing changed."], cancelled.stderr
    assert [actor for actor, _, _ in audited(both.server, "regrade.apply") + audited(both.server, "regrade.cancel")] \
        == ["rc-prof", "rc-prof"]
    refused(both.remote(prof, "regrade", "apply", ready, "--reason", "again", "--dry-run"), "409", "applied already")
    assert both.host("regrade", "apply", ready, "--reason", "again", "--dry-run").returncode == 2
    assert f"Regrade {ready} · actor-loss · version" in both.same(prof, "regrade", "list").stdout
    # The stale verdicts: an admin's token reads every course, as the host does, byte for byte;
    # an instructor's the courses they teach; a TA's learner account none.
    root = both.ok("users", "add", "rc-root", "--role", "admin").strip().splitlines()[-1]
    for command in (("regrade", "status"), ("regrade", "status", "--exercise", "actor-loss")):
        shown = both.same(root, *command)
        assert shown.returncode == 0 and "Stale verdicts" in shown.stdout and "stale verdict(s)" in words(shown)
    mine = both.remote(prof, "regrade", "status", "--exercise", "actor-loss")
    assert mine.returncode == 0 and "rc-a" in mine.stdout and "actor-loss" in mine.stdout, mine.stderr
    refused(both.remote(term.ta, "regrade", "status"), "403", "instructor")


def test_an_instructors_similarity_from_a_laptop_is_the_hosts(term: Term) -> None:
    both, prof = term.both, term.prof
    fresh = both.remote(prof, "similarity", "rc-a", "--refresh")  # asked of the server, waited for
    assert fresh.returncode == 0 and said(fresh)[0] == "Comparing the submissions of 'rc-a'...", fresh.stderr
    assert fresh.stdout.lstrip().startswith("rc-a · run ") and "Nothing here changes a score." in words(fresh)
    run = fresh.stdout.split(" · run ")[1].split()[0]
    for command in (("similarity", "rc-a"), ("similarity", "rc-a", "--exercise", "actor-loss", "--top", "3")):
        shown = both.same(prof, *command)  # the same newest run, table and summary, byte for byte
        assert shown.returncode == 0 and f" · run {run} of " in shown.stdout, (shown.stdout, shown.stderr)
    refused(both.remote(term.ta, "similarity", "rc-a"), "403", "instructor")  # a TA's account
    reader = both.ok("users", "token", "rc-prof", "--read-only").strip()
    assert both.same(reader, "similarity", "rc-a").returncode == 0
    refused(both.remote(reader, "similarity", "rc-a", "--refresh"), "403", "read-only")  # asking for a run writes
    refused(both.remote(term.learner, "similarity", "rc-a"), "403")
    refused(both.remote(term.limited, "similarity", "rc-b"), "403", "rc-a")
    refused(both.remote(prof, "similarity", "no-such-course"), "404")
    assert both.host("similarity", "no-such-course").returncode == 2
