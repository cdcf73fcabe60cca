"""A learner without a terminal: in Debian's headless Chromium (Playwright), against a real
`ppo-grader serve` grading in the real jail, they upload a .py file, then a notebook, then paste
a function on their own dashboard page, and read each verdict on the submission's page, which
reloads by itself when it arrives. Screenshots go to the test's tmp folder."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from exercises.registry import get_exercise
from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS

from .conftest import Kernel, reference_function

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

VERDICT = "#feedback .fb-summary"


def test_a_learner_uploads_on_their_own_page_and_reads_the_verdict_there(kernel: Kernel, tmp_path: Path) -> None:
    assert os.access(CHROMIUM, os.X_OK), "Debian's chromium is needed (apt-get install chromium)"
    from playwright import sync_api

    solution = tmp_path / "actor.py"
    solution.write_text(get_exercise("actor-loss").reference_source)
    notebook = tmp_path / "gae work.ipynb"
    nbformat.write(new_notebook(cells=[
        new_markdown_cell("# GAE"),
        new_code_cell("%matplotlib inline\nimport torch", execution_count=4),
        new_code_cell("def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):\n"
                      "    advantages = torch.zeros_like(rewards)\n"
                      "    return advantages.not_a_method(), values", execution_count=9),
        new_code_cell("for step in range(1000):\n    compute_gae(torch.ones(2, 3), torch.ones(2, 3))",
                      execution_count=10),
    ]), notebook)
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(30_000)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{kernel.server.url}/login")
            page.fill("#token", kernel.token)
            page.click("button[type=submit]")
            page.wait_for_selector("#upload-form")
            own = page.url
            page.screenshot(path=str(tmp_path / "form.png"), full_page=True)

            # 1. A .py file: graded 100, read on the submission's page once it reloads by itself.
            page.set_input_files("#upload-file", str(solution))
            page.click("#upload-form button[type=submit]")
            page.wait_for_url("**/dashboard/submissions/*")
            page.wait_for_selector(f"{VERDICT}:has-text('Score: 100 / 100')", timeout=180_000)
            assert "Verdict: graded" in page.locator(VERDICT).inner_text()
            page.screenshot(path=str(tmp_path / "py.png"), full_page=True)

            # 2. A notebook: only the function and its import were sent; the error is at its cell.
            page.goto(own)
            page.set_input_files("#upload-file", str(notebook))
            page.click("#upload-form button[type=submit]")
            page.wait_for_url("**/dashboard/submissions/*")
            page.wait_for_selector(f"{VERDICT}:has-text('Verdict: graded')", timeout=180_000)
            where = page.locator("#feedback .fb-where").inner_text()
            assert where == "gae work.ipynb: cell 9, line 3, column 12", where
            assert "AttributeError" in page.locator("#feedback").inner_text()
            sent = page.locator("#source").inner_text()
            assert "def compute_gae" in sent and "import torch" in sent
            assert "for step" not in sent and "%matplotlib" not in sent
            page.screenshot(path=str(tmp_path / "ipynb.png"), full_page=True)

            # 3. A pasted function, its exercise found from its name.
            page.goto(own)
            page.fill("#upload-source", reference_function("whiten"))
            page.click("#upload-form button[type=submit]")
            page.wait_for_url("**/dashboard/submissions/*")
            page.wait_for_selector(f"{VERDICT}:has-text('Score: 100 / 100')", timeout=180_000)
            assert get_exercise("whiten").title in page.locator("#submission-facts").inner_text()
            page.screenshot(path=str(tmp_path / "pasted.png"), full_page=True)

            # A bad notebook is refused with ppo-submit's sentence, on a page, with nothing sent.
            page.goto(own)
            broken = tmp_path / "broken.ipynb"
            broken.write_text(reference_function("gae"))
            page.set_input_files("#upload-file", str(broken))
            page.click("#upload-form button[type=submit]")
            page.wait_for_selector("h1:has-text('Not submitted')")
            assert "broken.ipynb is not a notebook: it is not JSON" in page.content()
        finally:
            browser.close()
    assert not [m for m in errors if "Content Security Policy" in m or "Refused" in m], errors
    assert len(kernel.submissions()) == 3
    print(f"screenshots: {tmp_path}")
