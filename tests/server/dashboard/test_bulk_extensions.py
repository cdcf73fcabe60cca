"""Extensions and corrections at course scale (``server.dashboard.extensions``, ``server.courses.bulk``)
over real HTTP (uvicorn, ``tests.server.live_server``; SQLite and PostgreSQL), and the audit log
(``server.courses.audit``) they, the CLI and the other staff forms write.

A TA (a learner account enrolled as the course's instructor) pastes or uploads a CSV: the dry
run's rows and counts are what the apply then changes; refused rows say why and block the apply;
a CSV changed after its preview is refused; hostile files get a sentence, never a traceback; a
learner gets 404 for every page and post; the course page lists the audit log to its staff."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from server.app import create_app
from server.cli import app as cli
from server.config import Settings
from server.courses.service import INSTRUCTOR
from server.models import AuditEvent, Extension, Role, ScoreCorrection
from tests.server.conftest import (
    audit_events,
    browser_login,
    enroll_named,
    logged_in,
    served_api,
    user_id_of,
    user_tokens,
    wait_graded,
)
from tests.server.courses.conftest import DUE, HOUR, RELEASE, FakeClock
from tests.server.fakes import FakeGrader
from tests.server.live_server import live_server

COURSE = "winter"
PAGE, PREVIEW, APPLY = "/dashboard/extensions", "/dashboard/extensions/preview", "/dashboard/extensions/apply"


@dataclass
class Site:
    """A served app: its URL, session factory, secret and the users' tokens."""

    url: str
    factory: Any
    secret: bytes
    tokens: dict[str, str]

    def api(self, method: str, path: str, who: str = "prof", **kwargs: Any) -> httpx.Response:
        return served_api(self.url, self.tokens[who], method, path, **kwargs)

    def browser(self, who: str) -> tuple[httpx.Client, str]:
        """A logged-in client (its cookie jar) and its session's form token."""
        return logged_in(self.url, self.tokens[who], self.secret)

    def counted(self) -> dict[tuple[str, str], Any]:
        scores = self.api("GET", f"/courses/{COURSE}/scores").json()["scores"]
        return {(s["learner"], s["exercise"]): ("excused" if s["excused"] else s["counted_score"]) for s in scores}

    def events(self) -> list[tuple[str | None, int | None, str, str]]:
        return audit_events(self.factory)

    def user_id(self, name: str) -> int:
        return user_id_of(self.factory, name)


@pytest.fixture
def site(settings: Settings, grader: FakeGrader) -> Iterator[Site]:
    """winter (Paris): actor-loss due Friday 17:00, 10% per started day, and gae, undated; ann
    submitted actor-loss an hour late (67.5), bob on time (75); tara is a TA; eve is a learner of
    another course."""
    clock = FakeClock()
    settings = settings.model_copy(update={"RATE_LIMIT": "1000/minute"})
    app = create_app(settings, grader.factory, clock=clock)
    with live_server(app) as url:
        factory = app.state.grader.session_factory
        tokens = user_tokens(factory, settings.secret_bytes, (("prof", Role.INSTRUCTOR), ("tara", Role.LEARNER),
                                                              ("ann", Role.LEARNER), ("bob", Role.LEARNER),
                                                              ("eve", Role.LEARNER)))
        s = Site(url, factory, settings.secret_bytes, tokens)
        for slug in (COURSE, "other"):
            assert s.api("POST", "/courses", json={"slug": slug, "title": slug, "time_zone": "Europe/Paris"}).status_code == 201
        enroll_named(factory, [(COURSE, "ann", "learner"), (COURSE, "bob", "learner"), (COURSE, "tara", INSTRUCTOR),
                               ("other", "eve", "learner")])
        rules = {"release_at": RELEASE.isoformat(), "due_at": DUE.isoformat(), "penalty_percent": 10}
        assert s.api("PUT", f"/courses/{COURSE}/exercises/actor-loss", json=rules).status_code == 200
        assert s.api("PUT", f"/courses/{COURSE}/exercises/gae", json={}).status_code == 200
        for who, moment in (("ann", DUE + HOUR), ("bob", DUE - HOUR)):
            clock.now = moment
            sent = s.api("POST", "/submissions", who, json={"exercise": "actor-loss", "source": f"x = {who!r}\n",
                                                            "course": COURSE})
            assert sent.status_code == 202, sent.text
            wait_graded(url, tokens[who], sent.json()["id"])
        assert s.counted()[("ann", "actor-loss")] == 67.5 and s.counted()[("bob", "actor-loss")] == 75
        yield s


def _post(client: httpx.Client, path: str, csrf: str, text: str = "", *, file: bytes | None = None,
          **fields: str) -> httpx.Response:
    data = {"csrf": csrf, "course": COURSE, "csv": text, **fields}
    files = {"file": ("rows.csv", file or b"", "text/csv")}
    if file is None:
        files = {"unused": ("", b"", "application/octet-stream")}  # multipart, as the browser sends it
    return client.post(path, data=data, files=files)


def _plan(html: str) -> tuple[dict[str, int], list[tuple[int, str, str]], str | None]:
    """The summary counts, each row as (line, change or refusal, before → after), the digest."""
    summary = re.search(r'id="plan-summary" data-rows="(\d+)" data-refused="(\d+)" data-changed="(\d+)"', html)
    assert summary is not None, html
    counts = dict(zip(("rows", "refused", "changed"), map(int, summary.groups()), strict=True))
    rows = []
    for line, cells in re.findall(r'<tr class="(?:ok|refused)" data-line="(\d+)">(.*?)</tr>', html):
        why = re.search(r'class="why">Refused: (.*?)</td>', cells)
        change = re.search(r'class="change">(.*?)</td><td class="scores">(.*?)</td>', cells)
        rows.append((int(line), unescape(why.group(1)) if why else unescape(change.group(1)),  # type: ignore[union-attr]
                     "" if why else unescape(change.group(2))))  # type: ignore[union-attr]
    digest = re.search(r'name="digest" value="([0-9a-f]{64})"', html)
    return counts, rows, digest.group(1) if digest else None


GOOD = (
    "learner,exercise,action,due,score,reason\n"
    "ann,actor-loss,extend,2026-12-14 09:00,,ill for a week\n"
    "bob,actor-loss,override,,90,graded by hand\n"
    "bob,gae,excuse,,,medical certificate\n"
)


def test_the_dry_run_counts_are_what_the_apply_changes(site: Site) -> None:
    client, csrf = site.browser("tara")
    before = site.counted()
    shown = _post(client, PREVIEW, csrf, GOOD)
    assert shown.status_code == 200, shown.text
    counts, rows, digest = _plan(shown.text)
    assert counts == {"rows": 3, "refused": 0, "changed": 3} and digest is not None
    assert f'href="{PAGE}?course={COURSE}" aria-current="page">Extensions</a>' in shown.text  # the staff's header
    assert rows[0][0] == 2 and rows[0][1].startswith("due 2026-12-11 17:00") and "→ 2026-12-14 09:00" in rows[0][1]
    assert [r[2] for r in rows] == ["67.5 → 75", "75 → 90", "— → excused"]
    assert site.counted() == before and site.events()[-1][2] == "set.publish"  # a dry run changes nothing

    applied = _post(client, APPLY, csrf, GOOD, digest=digest)
    assert applied.status_code == 303, applied.text
    after = site.counted()
    assert after[("ann", "actor-loss")] == 75 and after[("bob", "actor-loss")] == 90 and after[("bob", "gae")] == "excused"
    moved = {k for k in after if after[k] != before.get(k)}
    assert len(moved) == counts["changed"]
    overview = client.get(applied.headers["location"])
    assert "Applied 3 rows; 3 counted scores changed." in overview.text
    assert "ill for a week" in overview.text and "graded by hand" in overview.text  # who, when, why
    tara = site.user_id("tara")
    assert site.events()[-4:] == [
        ("tara", tara, "extension.grant", "ann/actor-loss"),
        ("tara", tara, "score.override", "bob/actor-loss"),
        ("tara", tara, "score.excuse", "bob/gae"),
        ("tara", tara, "bulk.import", "3 rows"),
    ]
    with site.factory() as session:
        extension = session.scalar(select(Extension))
        assert extension is not None and (extension.granted_by, extension.reason) == ("tara", "ill for a week")

    klass = client.get("/dashboard", params={"course": COURSE}).text  # the course page's audit log
    logged = re.findall(r'<tr data-action="([^"]+)">', klass)
    assert logged[:4] == ["bulk.import", "score.excuse", "score.override", "extension.grant"]
    assert 'id="audit-count" data-total="6"' in klass  # and the fixture's two publishes


def test_refused_rows_say_why_and_nothing_is_applied(site: Site) -> None:
    client, csrf = site.browser("tara")
    text = (
        "learner,exercise,due,score,reason\n"
        "nobody,actor-loss,2026-12-14 09:00,,x\n"  # 2
        "eve,actor-loss,2026-12-14 09:00,,x\n"  # 3: another course's learner
        "prof,actor-loss,2026-12-14 09:00,,x\n"  # 4: staff
        "ann,actor-loss,next friday,,x\n"  # 5
        "ann,dpo-loss,2026-12-14 09:00,,x\n"  # 6: not published here
        "ann,actor-loss,2026-12-10 09:00,,x\n"  # 7: before the due date
        "ann,actor-loss,2026-12-14 09:00,,fine\n"  # 8: good
    )
    shown = _post(client, PREVIEW, csrf, text)
    assert shown.status_code == 422
    counts, rows, digest = _plan(shown.text)
    assert counts["refused"] == 6 and digest is None and 'id="apply-form"' not in shown.text
    why = dict((line, text) for line, text, _ in rows)
    assert "Unknown learner 'nobody'" in why[2]
    assert "'eve' is not a learner of 'winter'" in why[3] and "'prof' is not a learner" in why[4]
    assert "Bad date 'next friday'" in why[5] and "'dpo-loss' is not an exercise of 'winter'" in why[6]
    assert "must be later than the due date" in why[7] and why[8].startswith("due ")

    scores = _post(client, PREVIEW, csrf, "learner,exercise,score,reason\nbob,actor-loss,150,x\nbob,actor-loss,abc,x\n")
    _, rows, _ = _plan(scores.text)
    assert all("Score out of range" in r[1] for r in rows)
    before = site.counted()
    forced = _post(client, APPLY, csrf, text, digest="0" * 64)
    assert forced.status_code == 409 and "a row is refused" in forced.text
    assert site.counted() == before and site.events()[-1][2] == "set.publish"


def test_a_csv_changed_after_its_dry_run_is_not_applied(site: Site) -> None:
    client, csrf = site.browser("tara")
    _, _, digest = _plan(_post(client, PREVIEW, csrf, GOOD).text)
    changed = GOOD.replace(",90,", ",100,")
    before = site.counted()
    refused = _post(client, APPLY, csrf, changed, digest=digest or "")
    assert refused.status_code == 409 and "changed since its dry run" in refused.text
    assert site.counted() == before and not any(e[2] == "bulk.import" for e in site.events())
    counts, rows, new_digest = _plan(refused.text)  # the dry run of it now, to confirm again
    assert rows[1][2] == "75 → 100" and new_digest not in (None, digest)
    # the same CSV, but a score it touches changed since the preview: refused as well
    _, _, digest = _plan(_post(client, PREVIEW, csrf, GOOD).text)
    assert site.api("PUT", f"/courses/{COURSE}/scores/bob/actor-loss/override",
                    json={"score": 50, "reason": "meanwhile"}).status_code in (200, 201)
    assert _post(client, APPLY, csrf, GOOD, digest=digest or "").status_code == 409
    assert site.counted()[("ann", "actor-loss")] == 67.5


def test_an_uploaded_file_and_hostile_ones(site: Site) -> None:
    client, csrf = site.browser("tara")
    uploaded = _post(client, PREVIEW, csrf, file=b"\xef\xbb\xbflearner,exercise,due\nann,actor-loss,2026-12-14T09:00\n")
    assert uploaded.status_code == 200 and _plan(uploaded.text)[0]["changed"] == 1  # BOM, no action: extend
    cases = [
        (b"learner,exercise,due\nann,actor-loss,2026-12-14 09:00,caf\xe9\n", 422, "not UTF-8"),
        (b"learner,exercise,due\n" + b"ann,actor-loss,2026-12-14\n" * 2001, 422, "more than 2000 rows"),
        (b"learner,exercise,due\n" + b"x" * (300 * 1024), 413, "over 256 KiB"),
        (b"learner,exercise,when\nann,gae,x\n", 422, "Unknown column 'when'"),
        (b"learner,exercise\x00\n", 422, "NUL"),
        (b'learner,exercise,reason\nann,gae,"never closed\n', 422, "cannot be read at line"),
        (b"", 422, "empty"),
    ]
    for body, status, words in cases:
        answer = _post(client, PREVIEW, csrf, file=body)
        assert answer.status_code == status and words in unescape(answer.text), (words, answer.text[-600:])
        assert "Traceback" not in answer.text
    pasted_too_much = _post(client, PREVIEW, csrf, "a" * (600 * 1024))
    assert pasted_too_much.status_code == 413
    not_multipart = client.post(PREVIEW, data={"csrf": csrf, "course": COURSE, "csv": GOOD})
    assert not_multipart.status_code == 400 and "as the page sends it" in not_multipart.text
    wrong_kind = _post(client, PREVIEW, csrf, GOOD, kind="delete-everything")
    assert wrong_kind.status_code == 422 and "The action is one of" in unescape(wrong_kind.text)


def test_learners_and_other_sites_are_refused(site: Site) -> None:
    ann, ann_csrf = site.browser("ann")
    assert ann.get(PAGE, params={"course": COURSE}).status_code == 404
    for path in (PREVIEW, APPLY):
        assert _post(ann, path, ann_csrf, GOOD, digest="0" * 64).status_code == 404
    assert ann.get("/dashboard", params={"course": COURSE}).status_code == 303  # to their own page, no log
    tara, csrf = site.browser("tara")
    assert _post(tara, PREVIEW, "forged", GOOD).status_code == 403
    assert tara.get("/dashboard", params={"course": COURSE, "audit_page": "x"}).status_code == 400
    assert 'id="audit-log"' in tara.get("/dashboard", params={"course": COURSE, "audit_page": "7"}).text  # the last
    other_site = tara.post(PREVIEW, data={"csrf": csrf, "course": COURSE, "csv": GOOD},
                           files={"file": ("x.csv", b"", "text/csv")}, headers={"Origin": "https://evil.example"})
    assert other_site.status_code == 403
    assert _post(tara, PREVIEW, csrf, GOOD, course="other").status_code == 404  # a course tara does not teach
    assert site.events()[-1][2] == "set.publish"


def test_the_cli_import_and_the_page_forms_write_the_audit_log(site: Site, env: Settings,
                                                                tmp_path: Any) -> None:
    csv_file = tmp_path / "rows.csv"
    csv_file.write_text(GOOD + "nobody,gae,,,x\n")
    runner = CliRunner()
    refused = runner.invoke(cli, ["extensions", "import", COURSE, str(csv_file), "--dry-run", "--by", "tara"])
    assert refused.exit_code == 1 and "Unknown learner 'nobody'" in refused.stdout and "nothing applied" in refused.stderr
    csv_file.write_text(GOOD)
    before = site.counted()
    dry = runner.invoke(cli, ["extensions", "import", COURSE, str(csv_file), "--dry-run", "--by", "tara"])
    assert dry.exit_code == 0, dry.output
    assert "67.5" in dry.stdout and "3 counted score(s) would change" in dry.stderr and site.counted() == before
    done = runner.invoke(cli, ["extensions", "import", COURSE, str(csv_file), "--by", "prof"])
    assert done.exit_code == 0, done.output
    assert site.counted()[("bob", "actor-loss")] == 90
    prof = site.user_id("prof")
    assert [e[2] for e in site.events()[-4:]] == ["extension.grant", "score.override", "score.excuse", "bulk.import"]
    assert {(e[0], e[1]) for e in site.events()[-4:]} == {("prof", prof)}
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"learner,exercise\n\xff\n")
    unreadable = runner.invoke(cli, ["extensions", "import", COURSE, str(bad)])
    assert unreadable.exit_code == 2 and "not UTF-8" in unreadable.stderr and "Traceback" not in unreadable.output

    # the single forms of the learner page write it too, with who did it
    client, csrf = site.browser("tara")
    form = {"csrf": csrf, "course": COURSE, "learner": "ann", "exercise": "actor-loss", "reason": "again"}
    assert client.post("/dashboard/corrections", data={**form, "action": "undo-extend"}).status_code == 303
    assert client.post("/dashboard/corrections", data={**form, "action": "override", "score": "80"}).status_code == 303
    tara = site.user_id("tara")
    assert site.events()[-2:] == [("tara", tara, "extension.remove", "ann/actor-loss"),
                                  ("tara", tara, "score.override", "ann/actor-loss")]
    with site.factory() as session:
        assert session.scalar(select(ScoreCorrection.made_by).order_by(ScoreCorrection.id.desc())) == "tara"

    # a set edited on the assignments page, a TA added and a set published at the terminal
    edit = {"csrf": csrf, "course": COURSE, "exercise": "gae", "action": "publish", "release": "", "due": "",
            "close": "", "penalty": "0", "per": "day", "attempts": "3", "feedback": "full", "version": ""}
    assert client.post("/dashboard/assignments", data=edit).status_code == 303
    added = runner.invoke(cli, ["courses", "staff", "add", COURSE, "tim", "--role", "ta"])
    assert added.exit_code == 0, added.output
    published = runner.invoke(cli, ["sets", "publish", COURSE, "whiten"])
    assert published.exit_code == 0, published.output
    [(_, _, edited, _), (by, by_id, staff, tim), (cli_by, _, publish, whiten)] = site.events()[-3:]
    assert (edited, staff, tim, publish, whiten) == ("set.edit", "staff.add", "tim", "set.publish", "whiten")
    assert by.startswith("cli:") and by_id is None and cli_by == by  # the host's user, no account
    with site.factory() as session:
        [detail] = session.scalars(select(AuditEvent.detail).where(AuditEvent.action == "set.edit")).all()
    assert "attempts 3" in detail and "0 counted scores changed" in detail


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_ta_bulk_extends_from_an_uploaded_file_in_chromium(site: Site, tmp_path: Any) -> None:
    """Debian's headless Chromium: the file input, the dry run, the confirmation's hidden CSV
    (CR LF line ends and a quoted comma come back exactly, or the digest would refuse it)."""
    import os
    import shutil

    from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS

    assert os.access(CHROMIUM, os.X_OK) and shutil.which("chromium"), "Debian's chromium is needed (apt-get install chromium)"
    from playwright import sync_api

    rows = tmp_path / "extend.csv"
    rows.write_bytes(b'learner,exercise,due,reason\r\nann,actor-loss,2026-12-14 09:00,"ill, a week"\r\n'
                     b"bob,actor-loss,2026-12-15 09:00,travel\r\n")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser_login(browser, f"{site.url}/dashboard?course={COURSE}", site.tokens["tara"])
            page.click("nav a:has-text('Extensions')")
            page.wait_for_selector("#bulk-form")
            page.set_input_files("#b-file", str(rows))
            page.click("#bulk-form button[type=submit]")
            summary = page.wait_for_selector("#plan-summary")
            assert (summary.get_attribute("data-refused"), summary.get_attribute("data-changed")) == ("0", "1")
            page.screenshot(path=str(tmp_path / "dry-run.png"), full_page=True)
            page.click("#apply-form button[type=submit]")
            done = page.wait_for_selector("#bulk-done")
            assert "Applied 2 rows; 1 counted scores changed." in done.inner_text()
            assert "ill, a week" in page.inner_text("#ledger")
            page.screenshot(path=str(tmp_path / "extensions.png"), full_page=True)
            if os.environ.get("KEEP_SHOTS"):
                shutil.copy(tmp_path / "dry-run.png", os.environ["KEEP_SHOTS"])
        finally:
            browser.close()
    assert site.counted()[("ann", "actor-loss")] == 75  # on time now; bob was already
