"""Round 12: a white-box red team of the judge's probe-diagnosis visit and the jail's clocks.

A failing submission is run a second time, on the exercise's fixed diagnostic probe set
(``exercises.judge.probe_seed``, ``Judge.probe_run``; ``exercises.scoring.Probes``), to name its
mistake. The attacks drive the real judge and jail (the hostile suite's shared ``jail``
fixture). Sources are in tests/hostile/round12_sources.py.

What worked, and how each is closed (fix12; they were strict xfails, severity order):

1. **One grading holds a worker for two wall limits** (low-medium, DoS): the probe visit ran
   under the same limits as the graded visit, so a file that sleeps just under the wall limit on
   its first call and then fails a check was held twice as long as any single verdict can be.
   Now the probe visit gets what the graded visit's job left of the wall and CPU limits, and is
   not made with less than a quarter of either left (``exercises.judge.probe_limits``).
2. **A probe-aware file hides its mistake** (low, forged feedback): the probe inputs are the same
   for every submission of an exercise version and the judge named mistakes only from them, so a
   file that recognises them (a fingerprint of each probe case) behaving correctly there had its
   graded failures reported "No known mistake explains this failure". Now a file the probes find
   no failure in has the graded run's own diagnosis (``exercises.scoring.on_failed``).
3. **A probe-aware file gets a mistake it does not make named** (low, forged feedback): now every
   probe-named mistake is searched on the graded run's outputs too, and one they show on no
   failed check is dropped; the checks it was named on get the graded run's own diagnosis.
4. **The named mistake carries the hidden probe inputs out** (low, hidden-input leak): a file
   behaving as one mistake or another by a bit of its first input had the probe input's bit
   named back. With 2 and 3 the names follow the graded outputs: on grading seeds whose own bit
   is the same, files reading different probe bits get the same names on the same checks.
   Wider still: the report's ``timings["probe_visit"]`` (shown under the ``full`` feedback policy)
   is the probe visit's duration, which the file sets from the probe inputs; it is now a
   staff-only timing (``server.courses.feedback_policy.STAFF_ONLY_TIMINGS``) no learner view shows.
5. **The job's clocks are the host's** (low, host state): no time namespace, so
   ``CLOCK_MONOTONIC`` and ``CLOCK_BOOTTIME`` in a job read the host's uptime. Now each job's
   manager makes a time namespace of its own whose clocks start at about 0
   (``sandbox.isolation``; bubblewrap has no option for one, the nested namespaces need none).

What holds (passing tests): no probe-aware trick moves a score or a verdict (the graded visit
decides them); a probe visit that crashes only drops the diagnosis (said so in the messages);
one grading makes at most one probe visit, none for a passing file, and a seed sweep one for
all its seeds; the similarity normaliser stays linear on 64 KiB files of adjacent, continued,
bracketed and commented literals and on deep nesting (within 10x an honest file's cost).

Seen, not an attack: 20 of actor-loss's 25 regular cases (its fixed edge cases) have the same
inputs on every grading seed and in the probe set, so a fingerprint meant to recognise the probe
visit must use the seeded cases only (``_fingerprints`` drops the fixed ones).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import torch

from exercises.corpus import _faulty
from exercises.framework import CaseGen
from exercises.judge import mix_seed, probe_seed
from exercises.mistakes import faulty_source
from exercises.registry import get_exercise
from server.similarity.fingerprints import fingerprint
from server.similarity.normalize import normalize
from tests.hostile import round12_sources as S
from tests.hostile.conftest import LIMITS, Jail, run_f

pytestmark = pytest.mark.slow

SLUG = "actor-loss"
NO_CLIP = f"{SLUG}/no-clip"


def _ids(report: Any) -> list[str]:
    return [d["mistake_id"] for d in report.diagnosis]


def _sums(seed: int) -> set[float]:
    cases = get_exercise(SLUG).build_cases(CaseGen(seed, "cpu"))
    return {
        round(float(c.args[0].double().sum()), 6)
        for c in cases
        if not c.memory and c.args and isinstance(c.args[0], torch.Tensor) and c.args[0].is_floating_point()
    }


def _fingerprints(jail: Jail) -> set[float]:
    """What an attacker learned of the probe inputs: the first tensor's sum of each probe case
    whose inputs depend on the seed (the exercise's fixed edge cases are the same in every run)."""
    secret = jail.judge.secret  # type: ignore[attr-defined]
    fixed = _sums(mix_seed(secret, SLUG, 1)) & _sums(mix_seed(secret, SLUG, 2))
    found = _sums(probe_seed(secret, get_exercise(SLUG))) - fixed
    assert found and not found & _sums(mix_seed(secret, SLUG, 11))
    return found


def _mutant(*faults: str) -> str:
    ex = get_exercise(SLUG)
    return faulty_source(_faulty(ex), list(faults), ex.function_name)


def _reference() -> str:
    return (Path(get_exercise(SLUG).folder) / "reference.py").read_text()


@pytest.fixture(scope="module")
def plain(jail: Jail) -> Any:
    """The honest failing file (no clipping) and its report: the baseline of every attack."""
    return jail.judge.grade(SLUG, _mutant("no-clip"), 11)  # type: ignore[attr-defined]


def _grade(jail: Jail, source: str, seed: int = 11) -> Any:
    return jail.judge.grade(SLUG, source, seed)  # type: ignore[attr-defined]


def test_the_honest_failing_file_gets_its_mistake_named(plain: Any) -> None:
    assert plain.verdict == "graded" and plain.score is not None and plain.score < 100
    assert NO_CLIP in _ids(plain)


def test_a_probe_aware_file_cannot_hide_its_mistake(jail: Jail, plain: Any) -> None:
    report = _grade(jail, S.dispatcher("compute_actor_loss", _mutant("no-clip"), _reference(), _fingerprints(jail)))
    assert report.score == plain.score
    assert NO_CLIP in _ids(report), report.diagnosis


def test_a_probe_aware_file_cannot_get_another_mistake_named(jail: Jail, plain: Any) -> None:
    source = S.dispatcher("compute_actor_loss", _mutant("no-clip"), _mutant(FORGED), _fingerprints(jail))
    report = _grade(jail, source)
    assert report.score == plain.score
    assert f"{SLUG}/{FORGED}" not in _ids(report), report.diagnosis


FORGED = "one-sided-clip"


def _first_sum(seed: int) -> int:
    cases = get_exercise(SLUG).build_cases(CaseGen(seed, "cpu"))
    first = next(c for c in cases if not c.memory).args[0]
    assert isinstance(first, torch.Tensor)
    return int(abs(float(first.double().sum())) * 1e6)


def _first_probe_sum(jail: Jail) -> int:
    return _first_sum(probe_seed(jail.judge.secret, get_exercise(SLUG)))  # type: ignore[attr-defined]


def _graded_seed(jail: Jail, bit: int, value: int, skip: set[int]) -> int:
    """A grading seed whose first input has ``value`` at ``bit`` (the attacker's graded visit)."""
    secret = jail.judge.secret  # type: ignore[attr-defined]
    return next(s for s in range(21, 200) if s not in skip and (_first_sum(mix_seed(secret, SLUG, s)) >> bit) & 1 == value)


@pytest.mark.parametrize("graded_bit", [0, 1])
def test_the_named_mistake_tells_nothing_of_the_hidden_probe_inputs(jail: Jail, graded_bit: int) -> None:
    """Round 12's bit channel, on grading seeds whose own bit is the same for both files while the
    probe inputs' bits differ: the names (and the checks they are given on) follow the graded
    outputs, which the judge checks every probe-named mistake against, not the probe inputs."""
    value = _first_probe_sum(jail)
    k0 = next(k for k in range(4, 30) if not (value >> k) & 1)
    k1 = next(k for k in range(4, 30) if (value >> k) & 1)
    s0 = _graded_seed(jail, k0, graded_bit, set())
    s1 = _graded_seed(jail, k1, graded_bit, {s0})
    zero, one = _mutant("no-clip"), _mutant(FORGED)
    r0 = _grade(jail, S.bit_channel("compute_actor_loss", zero, one, k0), seed=s0)
    r1 = _grade(jail, S.bit_channel("compute_actor_loss", zero, one, k1), seed=s1)
    # the attacker would read the probe input's bit: no-clip named where it is 0, one-sided-clip where it is 1
    assert _ids(r0) == _ids(r1), (k0, s0, _ids(r0), k1, s1, _ids(r1))
    assert [d["checks"] for d in r0.diagnosis] == [d["checks"] for d in r1.diagnosis], (r0.diagnosis, r1.diagnosis)


def _timings_seen(report: Any, access: Any) -> dict[str, float]:
    """The report's timings as stored and shown to ``access`` (the server's one visibility rule)."""
    from datetime import UTC, datetime

    from server.courses.feedback_policy import visible_report
    from server.grading.sanitize import clean_timings
    from server.submissions.schemas import SubmissionPublic

    now = datetime(2026, 12, 8, tzinfo=UTC)
    record = SubmissionPublic(
        id=1, exercise=SLUG, user="ann", status="done", verdict=report.verdict, score=report.score, message="",
        checks=[], stdout="", stderr="", timings=clean_timings(report.timings), peak_memory_bytes=None,
        cpu_seconds=None, created_at=now, started_at=now, finished_at=now, queue_position=None, course="rlhf-a",
        late=False, late_seconds=None, penalty_percent=0, counted_score=report.score, regrades=[],
    )
    return dict(visible_report(record, access).timings)


def test_the_probe_visits_duration_tells_nothing_of_its_inputs(jail: Jail) -> None:
    """Round 12: the probe visit's duration is set by the file from the hidden probe inputs. It is
    a staff-only timing: no learner view shows it, ``full`` included (staff still see it)."""
    from server.courses.feedback_policy import EVERYTHING, LEARNER_FULL

    value = _first_probe_sum(jail)
    k0 = next(k for k in range(4, 30) if not (value >> k) & 1)
    k1 = next(k for k in range(4, 30) if (value >> k) & 1)
    nap = 1.5
    quiet = _grade(jail, S.timed("compute_actor_loss", _mutant("no-clip"), k0, nap), seed=23)
    slow = _grade(jail, S.timed("compute_actor_loss", _mutant("no-clip"), k1, nap), seed=24)
    shown = [_timings_seen(r, LEARNER_FULL) for r in (quiet, slow)]
    told = shown[1].get("probe_visit", 0.0) - shown[0].get("probe_visit", 0.0)
    assert abs(told) < nap / 3, (told, shown)
    assert not any({"probe_visit", "diagnosis"} & set(t) for t in shown), shown
    staff = _timings_seen(slow, EVERYTHING)
    assert "probe_visit" in staff  # staff see what the probe visit took


def test_no_probe_trick_moves_a_score_or_a_verdict(jail: Jail, plain: Any) -> None:
    fps = _fingerprints(jail)
    crash = "def compute_actor_loss(*args, **kwargs):\n    import os\n    os._exit(3)\n"
    for probe in (_reference(), _mutant(FORGED), crash):
        report = _grade(jail, S.dispatcher("compute_actor_loss", _mutant("no-clip"), probe, fps))
        assert (report.verdict, report.score) == (plain.verdict, plain.score)
        assert [c.passed for c in report.checks] == [c.passed for c in plain.checks]
    # the crash only in the probe visit: diagnosis dropped, and said so
    assert report.diagnosis == [] or all(d["mistake_id"] != NO_CLIP for d in report.diagnosis)
    assert any("Diagnosis skipped" in c.message for c in report.checks if not c.passed)


def test_one_grading_makes_at_most_one_probe_visit(jail: Jail, monkeypatch: pytest.MonkeyPatch) -> None:
    pools = jail.judge.pools  # type: ignore[attr-defined]
    visits: list[int] = []
    real = pools.visit

    def counted(exercise: Any, source: str, regular: list[Any], measured: list[Any], **limits: Any) -> Any:
        visits.append(len(measured))
        return real(exercise, source, regular, measured, **limits)

    monkeypatch.setattr(pools, "visit", counted)
    _grade(jail, _reference())
    assert visits == [visits[0]]  # a passing file: the graded visit alone
    visits.clear()
    _grade(jail, _mutant("no-clip"))
    assert len(visits) == 2 and visits[1] == 0  # one probe visit, no measured cases in it
    visits.clear()
    jail.judge.grade_seeds(SLUG, _mutant("no-clip"), [1, 2, 3])  # type: ignore[attr-defined]
    assert len(visits) == 2  # one probe visit for every seed of a sweep


def test_one_grading_holds_a_worker_no_longer_than_one_verdict_can(jail: Jail, plain: Any) -> None:
    t0 = time.monotonic()
    baseline = _grade(jail, _mutant("no-clip"))
    honest = time.monotonic() - t0
    assert NO_CLIP in _ids(baseline)
    nap = LIMITS.wall_seconds * 0.8
    source = S.dispatcher("compute_actor_loss", _mutant("no-clip"), _mutant("no-clip"), set(), sleep=nap)
    t0 = time.monotonic()
    report = _grade(jail, source)
    held = time.monotonic() - t0
    print(f"honest failing file {honest:.2f} s; sleeper {held:.2f} s (wall limit {LIMITS.wall_seconds} s)")
    assert report.verdict == "graded"  # the sleep stays under the limit: an ordinary verdict
    # what one verdict can hold a worker for: the honest run's cost plus one wall limit
    assert held <= honest + LIMITS.wall_seconds, (held, honest, report.timings)


def test_a_jobs_clocks_do_not_read_the_hosts_uptime(jail: Jail) -> None:
    result = run_f(jail.judge.pools.learners, S.CLOCKS)  # type: ignore[attr-defined]
    line = next(x for x in result.stdout.splitlines() if x.startswith("CLOCKS"))
    mono, boot = (float(v) for v in line.split()[1:])
    host_mono, host_boot = time.clock_gettime(time.CLOCK_MONOTONIC), time.clock_gettime(time.CLOCK_BOOTTIME)
    assert abs(mono - host_mono) > 60 and abs(boot - host_boot) > 60, (mono, host_mono, boot, host_boot)


def _normalising_seconds(source: str) -> float:
    t0 = time.process_time()
    fingerprint(normalize(source))
    return time.process_time() - t0


def test_the_similarity_normaliser_stays_linear_on_hostile_files() -> None:
    size = 64 * 1024
    honest = _normalising_seconds(("def f(a, b):\n    return a + b * 2 - a / 3\n" * 2000)[:size])
    hostile = {
        "literals then an attribute": ("x = 1\n" + "'' " * (size // 3) + ".x\n")[:size],
        "continued literals": ("'' \\\n" * (size // 5))[:size],
        "docstrings": ("''\n" * (size // 3))[:size],
        "literal statements": ("'';" * (size // 3))[:size],
        "literals in brackets": ("(\n" + "''\n" * (size // 3) + ")\n")[:size],
        "commented literals": ("''#\n" * (size // 4))[:size],
        "deep nesting": ("(" * 30000 + ")" * 30000)[:size],
    }
    for name, source in hostile.items():
        assert _normalising_seconds(source) <= 10 * honest + 0.05, name
