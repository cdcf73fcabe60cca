"""Issue 32's acceptance for exercise versions, through the real CLI, a real server with its
in-process workers and the real ppo-submit (SQLite):

- edit a published pack exercise's check weights, and those of one no set publishes (the default
  course's learners grade it with the version the service first served, verified then), and
  restart: learners are still graded by the verified versions (same points, same starter), and the
  service names each unverified change (its log, `exercises versions`, the dashboard);
- fix the reference, verify, publish the new version and regrade on the running service, with
  no restart: new submissions and the preview grade with the new version, the preview names it,
  and the diff names exactly the submissions that change.

On PostgreSQL the grading is done by a ``ppo-grader worker`` process (procrastinate), started
once with no pack variable and never restarted.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from tests.e2e.installations import REPO, serve
from tests.exercises.packs.conftest import Cli, edit, scaffold
from tests.pg import pg_database, pg_url  # noqa: F401

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
UNCLIPPED = 'import torch\n\n\ndef compute_scaled_diff(x, y, scale=1.0):\n    if y.shape != x.shape:\n        raise ValueError("y must have the shape of x")\n    return scale * (x - y)\n'
CLIPPED = UNCLIPPED.replace("scale * (x - y)", "scale * (x - y).clamp(min=-1.0, max=1.0)")
UNWRITTEN = "def compute_scaled_diff(x, y, scale=1.0):\n    raise NotImplementedError\n"
#: A correct answer to the second exercise of the pack, which no set publishes.
SHIFTED = UNCLIPPED.replace("compute_scaled_diff", "compute_shifted_diff")


def _edit_weights(folder: Path) -> None:
    """The unverified edit: two checks' points change (40 -> 30, 20 -> 30)."""
    edit(folder / "checks.py", '(default scale=1)", 40, core=True)', '(default scale=1)", 30, core=True)')
    edit(folder / "checks.py", '@check("gradient with respect to x", 20)', '@check("gradient with respect to x", 30)')


def _weights(result: dict) -> dict[str, float]:
    return {c["name"]: c["weight"] for c in result["checks"]}


def _submit(url: str, token: str, env: dict[str, str], file: Path, course: str | None = "rlhf-a") -> dict:
    course_env = {"PPO_GRADER_COURSE": course} if course else {}
    done = subprocess.run(
        [str(BIN / "ppo-submit"), str(file), "--json"],
        env={**env, "PPO_GRADER_URL": url, "PPO_GRADER_TOKEN": token, **course_env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout)


def _clip_the_exercise(folder: Path) -> None:
    """The fix: the spec now clips the difference to [-1, 1]; reference, fault, self-test, known answer follow."""
    edit(folder / "reference.py", "    return scale * (x - y)\n", "    return scale * torch.clamp(x - y, -1.0, 1.0)\n")
    edit(folder / "faulty.py", "    return scale * diff\n", "    return scale * torch.clamp(diff, -1.0, 1.0)\n")
    edit(folder / "starter.py", "torch.tensor([1.0, 0.0])), got", "torch.tensor([0.5, 0.0])), got")
    edit(folder / "spec.py", 'expect="torch.tensor([1.0, 0.0])"', 'expect="torch.tensor([0.5, 0.0])"')


@contextmanager
def _worker(env: dict[str, str], log: Path, procrastinate: bool) -> Iterator[None]:
    """A `ppo-grader worker` (procrastinate) for the whole test, or nothing (in-process workers)."""
    if not procrastinate:
        yield
        return
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "server.cli", "worker"], env=env, stdout=out, stderr=out)
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.timeout(900)  # two servers, a worker, a dozen CLI runs and nine jail gradings on a shared machine
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_service_grades_with_the_published_version_and_a_new_one_needs_no_restart(
    cli: Cli, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    pack = tmp_path / "course-pack"
    folder = scaffold(cli, pack, "scaled-diff")
    unpublished = scaffold(cli, pack, "shifted-diff")  # graded in the default course, no set publishes it
    if backend == "postgres":
        cli.env.update(PPO_GRADER_DATABASE_URL=request.getfixturevalue("pg_url"), PPO_GRADER_QUEUE="procrastinate")
    env = {**cli.env, "PYTHONPATH": os.environ.get("PYTHONPATH", os.pathsep.join([str(REPO), str(REPO / "client")])), "PPO_GRADER_REGRADE_POLL_SECONDS": "0.5"}
    files = {}
    for name, text in (("ada", UNCLIPPED), ("bo", CLIPPED), ("cy", UNWRITTEN), ("dee", SHIFTED)):
        files[name] = tmp_path / f"{name}.py"
        files[name].write_text(text)
    roster = tmp_path / "roster.csv"
    roster.write_text("name,display_name\nada,Ada\nbo,Bo\ncy,Cy\n")

    workers = ExitStack()
    request.addfinalizer(workers.close)
    with serve(REPO, env, tmp_path, "--pack", str(pack)) as served:
        # Seen for the first time: serve puts each pack exercise's folder through the gate.
        for slug in ("scaled-diff", "shifted-diff"):
            assert re.search(rf"exercise {slug}: first served at content version \w+ \(verified now\)", served.stderr)
        # Started once the service has migrated the database; it lives through the restart below.
        workers.enter_context(_worker(env, tmp_path / "worker.log", backend == "postgres"))
        assert cli("exercises", "verify", "scaled-diff", "--seeds", "2").returncode == 0
        assert served.token
        staff = served.token
        assert cli("courses", "create", "rlhf-a", "--instructor", "instructor").returncode == 0
        enrolled = cli("courses", "enroll", "rlhf-a", str(roster))
        assert enrolled.returncode == 0, enrolled.stderr
        tokens = {row["name"]: row["token"] for row in csv.DictReader(io.StringIO(enrolled.stdout))}
        dee = cli("users", "add", "dee")  # a learner of the default course (enrolled nowhere)
        assert dee.returncode == 0, dee.stderr
        tokens["dee"] = dee.stdout.strip()
        published = cli("sets", "publish", "rlhf-a", "scaled-diff")
        assert published.returncode == 0, published.stderr
        v1 = re.search(r"graded with version (\w+)", published.stderr).group(1)  # type: ignore[union-attr]
        first = {name: _submit(served.url, tokens[name], env, files[name]) for name in ("ada", "bo", "cy")}
        assert first["ada"]["score"] == 100 and first["bo"]["score"] < 100 and not first["cy"]["score"]
        weights = _weights(first["ada"])
        first["dee"] = _submit(served.url, tokens["dee"], env, files["dee"], course=None)
        assert first["dee"]["score"] == 100
        dee_weights = _weights(first["dee"])
        listed = cli("exercises", "versions", "shifted-diff")
        served_v = re.search(r"^  (\w+) .*serves: default .*\(served where no set pins a version\)", listed.stdout, re.M)
        assert served_v, listed.stdout

    # An edit of both exercises' check weights, not verified, and a restart.
    _edit_weights(folder)
    _edit_weights(unpublished)
    with serve(REPO, env, tmp_path) as served:
        assert "first served at" not in served.stderr  # seen before: the folders' edits are not adopted
        again = _submit(served.url, tokens["ada"], env, files["ada"])
        assert _weights(again) == weights  # the verified version's points
        assert again["score"] == 100
        dee_again = _submit(served.url, tokens["dee"], env, files["dee"], course=None)
        assert _weights(dee_again) == dee_weights and dee_again["score"] == 100
        starter = httpx.get(
            f"{served.url}/api/v1/exercises/shifted-diff", headers={"Authorization": f"Bearer {tokens['dee']}"}
        ).json()
        assert {c["name"]: c["weight"] for c in starter["checks"]} == dee_weights  # the starter announces them
        assert "is not verified; learners are graded by the published version " + v1 in served.stderr
        said = (
            "is not verified; learners are graded by the served version "
            f"{served_v.group(1)}, the verified version the service first served"
        )
        assert "exercise shifted-diff: the pack folder holds content version" in served.stderr
        assert said in served.stderr, served.stderr
        listed = cli("exercises", "versions", "scaled-diff")
        assert listed.returncode == 0, listed.stderr
        assert re.search(rf"{v1}\s.*passed.*rlhf-a", listed.stdout), listed.stdout
        assert "is not verified: nothing a learner sees changes" in " ".join(listed.stdout.split())
        listed = cli("exercises", "versions", "shifted-diff")
        assert re.search(rf"^  {served_v.group(1)} .*passed.*serves: default", listed.stdout, re.M), listed.stdout
        assert re.search(r"^  \w+  verify never .*serves: -  \(the pack folder's\)", listed.stdout, re.M)
        assert "is not verified: nothing a learner sees changes" in " ".join(listed.stdout.split())
        with httpx.Client(base_url=served.url) as browser:  # the dashboard, logged in as staff
            assert browser.post("/login", data={"token": staff}).status_code in (200, 303)
            page = browser.get("/dashboard/exercises/scaled-diff", params={"course": "rlhf-a"})
            assert page.status_code == 200
            assert f"is not verified; learners are graded by the published version {v1}" in page.text
            page = browser.get("/dashboard/exercises/shifted-diff", params={"course": "default"})
            assert page.status_code == 200
            assert said in page.text

        # The fix, verified and published while the service runs.
        edit(folder / "checks.py", '(default scale=1)", 30, core=True)', '(default scale=1)", 40, core=True)')
        edit(
            folder / "checks.py", '@check("gradient with respect to x", 30)', '@check("gradient with respect to x", 20)'
        )
        _clip_the_exercise(folder)
        verified = cli("exercises", "verify", "scaled-diff", "--seeds", "2")
        assert verified.returncode == 0, verified.stdout
        published = cli("sets", "publish", "rlhf-a", "scaled-diff")
        assert published.returncode == 0, published.stderr
        v2 = re.search(r"graded with version (\w+)", published.stderr).group(1)  # type: ignore[union-attr]
        assert v2 != v1
        now = _submit(served.url, tokens["bo"], env, files["bo"])
        assert now["score"] == 100  # no restart: the running workers grade with the new version

        preview = cli("regrade", "preview", "--exercise", "scaled-diff", "--course", "rlhf-a", "--wait")
        assert preview.returncode == 0, preview.stderr
        assert f"graded with version {v2}" in preview.stderr and f"version {v2}" in preview.stdout
        changed = {
            int(m)
            for m in re.findall(
                r"^│\s*(\d+)\s*│", preview.stdout.split("Changed verdicts")[1].split("Largest")[0], re.M
            )
        }
        # ada's two (graded by the first version), bo's first; not cy's unwritten file (0 under both),
        # nor bo's second, graded by the new version already.
        assert changed == {first["ada"]["id"], again["id"], first["bo"]["id"]}, preview.stdout
