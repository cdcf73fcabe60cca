"""Every message a learner reads from the judge and the feedback renderers reads right (issue 34):
the frozen corpus's verdicts (what the judge said about every reference, starter, mutant and the
feedback suite's files), the mistake catalogue's titles and fixes, and the judge's verdict on every
mistake of today's catalogue, laid out by both renderers (``ppo-submit``'s terminal text and the
dashboard's HTML) in full and under the report view's cut.

The grammar list (:data:`FAULTS`) names what went wrong once and must not come back: "Wrong the
...", a case described twice ("on input large input", "on input torch.float32 inputs"), the
combined-mistake sentence on every row, and an exit-code sermon ("Do not call exit()") where the
code never exited (its results could not be read, or its outputs were NaN on a measured case).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from exercises.feedback import for_learner
from exercises.registry import all_exercises
from ppo_submit.render import plain_text, submission_result
from server.courses.feedback_policy import Access, FeedbackPolicy, View, visible_report
from server.courses.source_facts import SourceFacts
from server.submissions.report_page import feedback_html
from server.submissions.schemas import SubmissionPublic

from .corpus import EXPECTED, SEED, entries, graded

#: (what is wrong, the pattern that finds it) in any text a learner reads.
FAULTS: list[tuple[str, re.Pattern[str]]] = [
    ('"Wrong" before an article', re.compile(r"\bWrong (?:the|a|an)\b")),
    ("a case named as input twice", re.compile(r"\binput (?:a |the )?(?:[\w.-]+ )?inputs?\b")),
    ("a doubled word", re.compile(r"\b(the|a|an|on|of|to|is|in)\s+\1\b", re.IGNORECASE)),
    ("a sentence that ends twice", re.compile(r"\w\.\.(?!\.)|\s[.,;:](?:\s|$)")),
]
#: Said only of a process that ended before it wrote results (verdict ``crashed``).
EXIT_SERMON = re.compile(r"exit\(\)|exit code|process exited", re.IGNORECASE)
#: The judge's sentence naming several mistakes at once: said once per report, never per row.
TOGETHER = "This matches known mistakes together"


def faults(text: str) -> list[str]:
    """The grammar faults of ``text``, each with the words that show it."""
    return [f"{what}: {m.group(0)!r}" for what, pattern in FAULTS for m in pattern.finditer(text)]


def _checks_texts(data: dict[str, Any]) -> list[str]:
    texts = [c["message"] for c in data["checks"]]
    feedback = data.get("feedback") or {}
    summary = feedback.get("summary") or {}
    texts += [summary.get("headline") or "", summary.get("next_step") or ""]
    texts += [d["text"] for d in summary.get("details") or []]
    texts += [c.get("headline") or "" for c in feedback.get("root_causes") or []]
    texts += [f"{m.get('title')} {m.get('fix') or ''}" for m in data.get("diagnosis") or []]
    return texts


def _record(data: dict[str, Any], source: str) -> SubmissionPublic:
    """The stored, public form of one graded entry (as the API serves it)."""
    moment = datetime(2026, 12, 1, tzinfo=UTC)
    return SubmissionPublic.model_validate(
        {
            "id": 1, "exercise": "gae", "user": "ann", "status": "done", "verdict": data["verdict"],
            "score": data["score"], "message": data["message"],
            "checks": data["checks"],
            "stdout": "", "stderr": "", "timings": {}, "peak_memory_bytes": None, "cpu_seconds": None,
            "created_at": moment, "started_at": moment, "finished_at": moment, "queue_position": None,
            "filename": "mine.py", "feedback": for_learner(data["feedback"], "mine.py", data["diagnosis"]),
            "course": "default", "late": False, "late_seconds": None, "penalty_percent": 0.0,
            "counted_score": data["score"],
        }
    )


def _rendered(data: dict[str, Any], source: str) -> dict[str, str]:
    """One entry as a learner reads it: terminal and HTML, in full and under the report view."""
    record = _record(data, source)
    cut = visible_report(record, Access(View.REPORT, FeedbackPolicy.parse("tokens:1"), source=SourceFacts(source, "mine.py")))
    out = {}
    for view, shown in (("full", record), ("report", cut)):
        out[f"terminal/{view}"] = plain_text(submission_result(shown.model_dump(mode="json")), 120)  # type: ignore[arg-type]
        out[f"html/{view}"] = re.sub(r"<[^>]+>", " ", feedback_html(shown)).replace("&#x27;", "'").replace("&quot;", '"')
    return out


def _assert_reads_right(name: str, data: dict[str, Any], source: str) -> None:
    bad = [f"{name}: {f}" for text in _checks_texts(data) for f in faults(text)]
    crashed = data["verdict"] == "crashed"
    bad += [f"{name}: exit blamed in a check: {c['message'][:120]!r}" for c in data["checks"]
            if EXIT_SERMON.search(c["message"])]
    if not crashed and EXIT_SERMON.search(data["message"]):
        bad.append(f"{name}: exit blamed in a {data['verdict']} verdict: {data['message'][:120]!r}")
    for where, text in _rendered(data, source).items():
        # the source is the learner's own text: only the judge's and the renderer's words are held to this
        said = text.replace(source, "")
        bad += [f"{name} ({where}): {f}" for f in faults(said) if "doubled word" not in f]
        if said.count(TOGETHER) > 1:
            bad.append(f"{name} ({where}): the combined-mistake sentence {said.count(TOGETHER)} times")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("folder", sorted({e.folder for e in entries()}))
def test_the_frozen_corpus_reads_right(folder: str) -> None:
    """What the judge said about the frozen corpus, as stored (tests/frozen/expected), laid out."""
    said = json.loads((EXPECTED / f"{folder}.json").read_text(encoding="utf-8"))
    for entry in (e for e in entries() if e.folder == folder):
        _assert_reads_right(f"{folder}/{entry.name}", said[entry.name], entry.path.read_text(encoding="utf-8"))


def test_the_mistake_catalogue_reads_right() -> None:
    bad = [f"{m.id}: {f}" for x in all_exercises() for m in x.mistakes for f in faults(f"{m.title}. {m.fix or ''}")]
    assert not bad, "\n".join(bad)


def test_the_grammar_list_finds_what_issue_34_saw() -> None:
    """The list finds each sentence the course walk found (so a pass means something)."""
    seen = [
        "Wrong the entropy loss term on input (x) [case 1, seed 2]: expected 1, got 2.",
        "Your function's results on the large input on input large input: (x) are wrong.",
        "Wrong loss on input torch.float32 inputs: (x): expected 1, got 2.",
    ]
    assert all(faults(text) for text in seen)
    assert EXIT_SERMON.search("Your code ended the process (exit code 0) ... Do not call exit()")
    assert not faults("Wrong loss on torch.float32 inputs: (float32[3, 7]) [case 30, seed 1]: expected 0.3, got 0.1.")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_catalogues_mistakes_graded_today_read_right(judge: Any) -> None:
    """Every mistake of today's catalogue (it may have more than the frozen corpus), graded by the
    real judge, laid out by both renderers."""
    for exercise in all_exercises():
        memory_checks = {c.name for c in exercise.checks if c.needs_memory}
        for mistake in exercise.mistakes:
            source = mistake.source(exercise.function_name)
            data = json.loads(json.dumps(graded(judge.grade(exercise.slug, source, SEED), memory_checks)))
            _assert_reads_right(mistake.id, data, source)


#: actor-loss, right everywhere but on the measured case, where the loss and its gradient are NaN.
NAN_ON_THE_MEASURED_CASE = '''
import torch


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes differ")
    ratio = torch.exp(log_probs_new - log_probs_old)
    loss = -torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * advantages).mean()
    return loss * float("nan") if log_probs_new.numel() > 100_000 else loss
'''


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_nan_outputs_on_the_measured_case_are_named_never_an_exit(judge: Any) -> None:
    """Outputs that go NaN on the large input used to make the grader's result unreadable, and the
    learner was told their code ended the process and not to call exit() (issue 34)."""
    report = judge.grade("actor-loss", NAN_ON_THE_MEASURED_CASE, SEED)
    assert report.verdict == "graded", report.message
    memory = next(c for c in report.checks if "memory" in c.name.lower())
    assert not memory.passed and "NaN or infinite values where the reference's are finite" in memory.message
    assert not EXIT_SERMON.search(memory.message) and "malformed" not in memory.message
    assert all(c.passed for c in report.checks if c is not memory and not c.message.startswith("Not counted yet")), [
        (c.name, c.message[:80]) for c in report.checks if not c.passed]
    data = json.loads(json.dumps(graded(report, {memory.name})))
    _assert_reads_right("nan-on-the-measured-case", data, NAN_ON_THE_MEASURED_CASE)
