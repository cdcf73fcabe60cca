"""One mistake, one check, one id: rewording them never splits their history (issue 21).

A database holds verdicts of the real judge; then a fault's title and a check's sentence are
reworded in the catalogue (as an instructor editing ``mutants.py`` and ``checks.py`` would);
then more verdicts arrive. The statistics API and the dashboard still count that mistake and
that check once each, under the catalogue's current wording (SQLite and PostgreSQL).
"""

from __future__ import annotations

import dataclasses
from urllib.parse import parse_qs, urlsplit

import pytest

from exercises.registry import get_exercise
from server.app import real_grader
from server.models import CheckResult, Role
from tests.server.dashboard.test_dashboard import charts, table_rows
from tests.server.dashboard.test_web import log_in
from tests.server.conftest import Api, StartApi

EXERCISE = "actor-loss"
MISTAKE = "actor-loss/max-for-min"
CHECK = "actor-loss/values_default"
NEW_TITLE = "max where PPO takes the min (reworded)"
NEW_SENTENCE = "the loss on random inputs, default clip_range (reworded)"


def _grade(api: Api, headers: dict[str, str], source: str) -> dict:  # type: ignore[type-arg]
    answer = api.submit(headers, source=source)
    assert answer.status_code == 202, answer.text
    done = api.wait_done(headers, answer.json()["id"], timeout=240)
    assert done["verdict"] == "graded" and done["score"] < 100, done["message"]
    return done


def _reword(monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """Reword the mistake and the check in the loaded catalogue; return the old wording."""
    exercise = get_exercise(EXERCISE)
    i = next(i for i, m in enumerate(exercise.mistakes) if m.id == MISTAKE)
    j = next(j for j, c in enumerate(exercise.checks) if exercise.check_id(c) == CHECK)
    old = exercise.mistakes[i].title, exercise.checks[j].name
    mistakes, checks = list(exercise.mistakes), list(exercise.checks)
    mistakes[i] = dataclasses.replace(mistakes[i], title=NEW_TITLE)
    checks[j] = dataclasses.replace(checks[j], name=NEW_SENTENCE)
    monkeypatch.setattr(exercise, "mistakes", mistakes)
    monkeypatch.setattr(exercise, "checks", checks)
    return old


@pytest.mark.slow
def test_rewording_a_mistake_and_a_check_does_not_split_their_counts(
        start_api: StartApi, monkeypatch: pytest.MonkeyPatch) -> None:
    api = start_api(grader_factory=real_grader)
    teacher = api.user("teacher", Role.INSTRUCTOR)
    learners = {name: api.user(name) for name in ("ann", "ben", "cat")}
    exercise = get_exercise(EXERCISE)
    wrong = next(m for m in exercise.mistakes if m.id == MISTAKE).source(exercise.function_name)

    before = [_grade(api, learners[name], wrong) for name in ("ann", "ben")]
    old_title, old_sentence = _reword(monkeypatch)
    after = _grade(api, learners["cat"], wrong)

    # What each verdict said stays as it was said; the ids are the same on both sides.
    for done, title, sentence in ((before[0], old_title, old_sentence), (after, NEW_TITLE, NEW_SENTENCE)):
        check = next(c for c in done["checks"] if c["check_id"] == CHECK)
        assert check["name"] == sentence and not check["passed"]
        assert (check["mistake_id"], check["mistake_title"]) == (MISTAKE, title)
    with api.state.session_factory() as session:
        stored = {(r.name, r.mistake_title) for r in session.query(CheckResult).filter_by(check_id=CHECK)}
    assert stored == {(old_sentence, old_title), (NEW_SENTENCE, NEW_TITLE)}

    # The statistics: one entry each, under today's wording, counting all three learners.
    stats = api.client.get(f"/api/v1/exercises/{EXERCISE}/stats", headers=teacher).json()
    named = [m for m in stats["mistakes"] if m["mistake_id"] == MISTAKE]
    assert named == [{"mistake_title": NEW_TITLE, "misconception": NEW_TITLE, "mistake_id": MISTAKE, "learners": 3, "submissions": 3}]
    assert not [m for m in stats["mistakes"] if m["mistake_title"] == old_title]
    checks = [c for c in stats["checks"] if c["check_id"] == CHECK]
    assert [(c["name"], c["runs"], c["failures"]) for c in checks] == [(NEW_SENTENCE, 3, 3)]
    assert old_sentence not in {c["name"] for c in stats["checks"]}

    # The dashboard: the class page, the exercise page's bars and the learners behind the bar.
    log_in(api, teacher)
    klass = api.client.get("/dashboard").text
    assert f"{NEW_TITLE}</a> in " in klass and "held by 3 learners" in klass and old_title not in klass
    page = api.client.get(f"/dashboard/exercises/{EXERCISE}").text
    bars = charts(page)
    mistakes = [(label, value) for label, value, _ in bars["chart-mistakes"]]
    assert (NEW_TITLE, 3) in mistakes and old_title not in dict(mistakes)
    check_bars = {label: value for label, value, _ in bars["chart-checks"]}
    assert check_bars[NEW_SENTENCE] == 1.0 and old_sentence not in check_bars
    href = next(h for label, _, h in bars["chart-mistakes"] if label == NEW_TITLE)
    assert href is not None and parse_qs(urlsplit(href).query) == {"mistake": [MISTAKE], "course": ["default"]}
    holders = api.client.get(href)
    assert holders.status_code == 200 and f"<h1>{NEW_TITLE}</h1>" in holders.text
    assert sorted(row[1] for row in table_rows(holders.text, "holders")) == ["ann", "ben", "cat"]
