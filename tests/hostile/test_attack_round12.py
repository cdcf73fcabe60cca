"""Round 12: a white-box red team of the judge's probe-diagnosis visit and the jail's clocks.

A failing submission is run a second time, on the exercise's fixed diagnostic probe set
(``exercises.judge.probe_seed``, ``Judge.probe_run``; ``exercises.scoring.Probes``), to name its
mistake. The attacks drive the real judge and jail (the hostile suite's shared ``jail``
fixture). Sources are in tests/hostile/round12_sources.py.

What worked (strict xfails, severity order):

1. **One grading holds a worker for two wall limits** (low-medium, DoS): the probe visit runs
   under the same limits as the graded visit, so a file that sleeps just under the wall limit on
   its first call and then fails a check is held twice as long as any single verdict can be
   (``LIMITS.wall_seconds`` 3 s: ~5 s per grading), and no knowledge of the probes is needed.
2. **A probe-aware file hides its mistake** (low, forged feedback): the probe inputs are the same
   for every submission of an exercise version and the judge names mistakes only from them, so a
   file that recognises them (a fingerprint of each probe case, learnable a bit per submission
   from the mistakes the report names) behaves correctly there and wrongly on graded inputs: the
   graded failures are reported "No known mistake explains this failure" instead of its mistake.
3. **A probe-aware file gets a mistake it does not make named** (low, forged feedback): the same
   file behaving as another known mistake on the probe inputs has that mistake named on the
   checks its real mistake fails.
4. **The named mistake carries the hidden probe inputs out** (low, hidden-input leak): a file
   that behaves as one mistake or another by a bit of its first input's value has the bit named
   back in the probe visit, whatever the grading seed (the probe set never changes): the
   fingerprint items 2 and 3 need, a bit or more per submission. Wider still: the report's
   ``timings["probe_visit"]`` (shown under the ``full`` feedback policy) is the probe visit's
   duration, which the file sets from the probe inputs (a sleep per bit: 1.5 s told apart).
5. **The job's clocks are the host's** (low, host state): no time namespace, so
   ``CLOCK_MONOTONIC`` and ``CLOCK_BOOTTIME`` in a job read the host's uptime.

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


@pytest.mark.xfail(
    strict=True,
    reason="round 12: a probe-aware file is correct on the fixed probe inputs, "
    "so its graded failures are reported unexplained instead of naming its mistake",
)
def test_a_probe_aware_file_cannot_hide_its_mistake(jail: Jail, plain: Any) -> None:
    report = _grade(jail, S.dispatcher("compute_actor_loss", _mutant("no-clip"), _reference(), _fingerprints(jail)))
    assert report.score == plain.score
    assert NO_CLIP in _ids(report), report.diagnosis


@pytest.mark.xfail(
    strict=True,
    reason="round 12: a probe-aware file behaving as another mistake on the "
    "probe inputs gets that mistake named on the checks its own mistake fails",
)
def test_a_probe_aware_file_cannot_get_another_mistake_named(jail: Jail, plain: Any) -> None:
    source = S.dispatcher("compute_actor_loss", _mutant("no-clip"), _mutant(FORGED), _fingerprints(jail))
    report = _grade(jail, source)
    assert report.score == plain.score
    assert f"{SLUG}/{FORGED}" not in _ids(report), report.diagnosis


FORGED = "one-sided-clip"


def _first_probe_sum(jail: Jail) -> int:
    ex = get_exercise(SLUG)
    cases = ex.build_cases(CaseGen(probe_seed(jail.judge.secret, ex), "cpu"))  # type: ignore[attr-defined]
    first = next(c for c in cases if not c.memory).args[0]
    assert isinstance(first, torch.Tensor)
    return int(abs(float(first.double().sum())) * 1e6)


@pytest.mark.xfail(
    strict=True,
    reason="round 12: the probe inputs are the same for every submission and "
    "mistakes are named only from the learner's outputs on them: the named mistake carries "
    "bits of the hidden probe inputs out, a bit or more per submission, on any grading seed",
)
def test_the_named_mistake_tells_nothing_of_the_hidden_probe_inputs(jail: Jail) -> None:
    value = _first_probe_sum(jail)
    k0 = next(k for k in range(4, 30) if not (value >> k) & 1)
    k1 = next(k for k in range(4, 30) if (value >> k) & 1)
    zero, one = _mutant("no-clip"), _mutant(FORGED)
    r0 = _grade(jail, S.bit_channel("compute_actor_loss", zero, one, k0), seed=21)
    r1 = _grade(jail, S.bit_channel("compute_actor_loss", zero, one, k1), seed=22)
    # the attacker reads the bit: no-clip named where it is 0, one-sided-clip where it is 1
    assert _ids(r0) == _ids(r1), (k0, _ids(r0), k1, _ids(r1))


@pytest.mark.xfail(
    strict=True,
    reason="round 12: the report's timings carry the probe visit's duration, which the file picks "
    "from the hidden probe inputs (and the full policy shows timings): a wide channel for them",
)
def test_the_probe_visits_duration_tells_nothing_of_its_inputs(jail: Jail) -> None:
    value = _first_probe_sum(jail)
    k0 = next(k for k in range(4, 30) if not (value >> k) & 1)
    k1 = next(k for k in range(4, 30) if (value >> k) & 1)
    nap = 1.5
    quiet = _grade(jail, S.timed("compute_actor_loss", _mutant("no-clip"), k0, nap), seed=23)
    slow = _grade(jail, S.timed("compute_actor_loss", _mutant("no-clip"), k1, nap), seed=24)
    told = slow.timings.get("probe_visit", 0.0) - quiet.timings.get("probe_visit", 0.0)
    assert abs(told) < nap / 3, (told, quiet.timings, slow.timings)


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

    def counted(exercise: Any, source: str, regular: list[Any], measured: list[Any]) -> Any:
        visits.append(len(measured))
        return real(exercise, source, regular, measured)

    monkeypatch.setattr(pools, "visit", counted)
    _grade(jail, _reference())
    assert visits == [visits[0]]  # a passing file: the graded visit alone
    visits.clear()
    _grade(jail, _mutant("no-clip"))
    assert len(visits) == 2 and visits[1] == 0  # one probe visit, no measured cases in it
    visits.clear()
    jail.judge.grade_seeds(SLUG, _mutant("no-clip"), [1, 2, 3])  # type: ignore[attr-defined]
    assert len(visits) == 2  # one probe visit for every seed of a sweep


@pytest.mark.xfail(
    strict=True,
    reason="round 12: the probe visit has the graded visit's limits, so a file "
    "sleeping just under the wall limit, then failing, holds a worker for two wall limits",
)
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
    assert report.verdict == "graded"  # the sleep stays under the limit: an ordinary verdict
    # what one verdict can hold a worker for: the honest run's cost plus one wall limit
    assert held <= honest + LIMITS.wall_seconds, (held, honest, report.timings)


@pytest.mark.xfail(
    strict=True, reason="round 12: no time namespace: a job's CLOCK_MONOTONIC and CLOCK_BOOTTIME read the host's uptime"
)
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
