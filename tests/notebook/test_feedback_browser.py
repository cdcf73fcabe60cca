"""The notebook's HTML feedback, read by eye: a real kernel submits to the real server, nbconvert
exports the executed notebook to HTML in JupyterLab's light and dark themes, Debian's headless
Chromium (Playwright) renders it, and Tesseract OCR reads the screenshots' text back.

Text the OCR can read on both themes is text a learner can read on both: a colour that
vanished on the dark theme (dark grey on black) would fail here. Screenshots go to the
test's tmp folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from nbconvert import HTMLExporter

from exercises.registry import get_exercise
from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS

from .conftest import Kernel

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def ocr(image: Path) -> str:
    """The text Tesseract reads in ``image``, lower-cased, on one line."""
    done = subprocess.run(["tesseract", str(image), "stdout", "--psm", "4"], capture_output=True, text=True,
                          timeout=120, check=True)
    return " ".join(done.stdout.lower().split())


def squashed(text: str) -> str:
    """Letters and digits only: what OCR is sure to agree on (it reads "·" and "`" its own way)."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def test_chromium_shows_the_feedback_readably_in_light_and_dark_themes(kernel: Kernel, tmp_path: Path) -> None:
    assert os.access(CHROMIUM, os.X_OK), "Debian's chromium is needed (apt-get install chromium)"
    assert shutil.which("tesseract"), "Debian's tesseract-ocr is needed (apt-get install tesseract-ocr)"
    from playwright import sync_api

    actor = get_exercise("actor-loss")
    mistaken = next(m for m in actor.mistakes if m.key == "max-for-min").source(actor.function_name)
    run = kernel.cells(
        mistaken,
        "from ppo_submit import notebook\nnotebook.submit(compute_actor_loss)",
        "import torch\n\n"
        "def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):\n"
        "    return rewards.cumsum_backwards(1), values",
        "notebook.submit(compute_gae)",
    )
    assert run.errors() == []
    mistake_text, error_text = run.text(2), run.text(4)
    assert "Mistakes found (1):" in mistake_text and "cell 3, line 4" in error_text, (mistake_text, error_text)
    title = mistake_text.split("1. ", 1)[1].splitlines()[0].strip()
    path = kernel.write(run, "feedback.ipynb")

    shots: dict[str, dict[str, str]] = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for theme in ("light", "dark"):
                body, _ = HTMLExporter(template_name="lab", theme=theme).from_filename(str(path))
                page_file = tmp_path / f"feedback-{theme}.html"
                page_file.write_text(body)
                page = browser.new_page(viewport={"width": 1100, "height": 900}, device_scale_factor=2)
                page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                           else route.abort())  # no network: the template's CDN scripts are not needed
                page.goto(page_file.as_uri())
                outputs = page.locator(".ppo-feedback")
                assert outputs.count() == 2
                shots[theme] = {}
                for index, name in enumerate(("mistake", "error")):
                    shot = tmp_path / f"{name}-{theme}.png"
                    outputs.nth(index).screenshot(path=str(shot))
                    shots[theme][name] = ocr(shot)
                page.close()
        finally:
            browser.close()

    for theme, read in shots.items():
        mistake, error = read["mistake"], read["error"]
        assert "verdict: graded" in mistake, (theme, mistake)
        assert squashed("Mistakes found (1)") in squashed(mistake), (theme, mistake)
        assert squashed(title) in squashed(mistake), (theme, title, mistake)
        assert squashed("Check Points Result") in squashed(mistake), (theme, mistake)
        assert "attributeerror" in error, (theme, error)
        assert squashed("notebook.ipynb: cell 3, line 4") in squashed(error), (theme, error)
        assert squashed("return rewards.cumsum_backwards(1), values") in squashed(error), (theme, error)
        assert "next:" in error, (theme, error)
    print(f"screenshots: {tmp_path}")
