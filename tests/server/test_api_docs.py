"""``/api/v1/docs`` works without internet: the page and every file it names come from this
server (a real uvicorn over real HTTP), and nothing in them points at another host."""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlparse

import httpx
import pytest

from server.app import create_app
from server.config import Settings
from tests.server.fakes import FakeGrader
from tests.server.live_server import live_server


def test_the_docs_page_and_every_asset_it_names_come_from_this_server(settings: Settings) -> None:
    # a deadline, not a measure: the first /openapi.json builds the whole schema, seconds on a
    # loaded machine (httpx's default 5 s ran out in CI at load 7)
    with live_server(create_app(settings, FakeGrader().factory)) as base, httpx.Client(base_url=base, timeout=120) as http:
        page = http.get("/api/v1/docs")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        html = page.text
        named = re.findall(r'(?:src|href)="([^"]+)"', html) + re.findall(r"url: ?'([^']+)'", html)
        assert {urlparse(u).path.rsplit("/", 1)[-1] for u in named} >= {
            "swagger-ui-bundle.js", "swagger-ui.css", "favicon.png", "openapi.json"}
        for url in named:
            assert not urlparse(url).netloc, f"the docs page names another host: {url}"
            answer = http.get(urljoin(base + "/api/v1/docs", url))
            assert answer.status_code == 200, (url, answer.status_code)
            assert len(answer.content) > 100, url
            if url.endswith(".css"):  # a stylesheet may name fonts and images in turn
                for inner in re.findall(r"url\(([^)]+)\)", answer.text):
                    assert inner.strip("'\"").startswith("data:"), f"the stylesheet names {inner[:80]}"
        assert '"validatorUrl": null' in html  # no badge from validator.swagger.io
        assert http.get("/api/v1/openapi.json").json()["info"]["title"] == "ppo-grader"
        assert http.get("/api/v1/docs/assets/../../../etc/passwd").status_code == 404


@pytest.mark.slow
def test_chromium_renders_the_docs_with_every_other_host_unreachable(settings: Settings) -> None:
    """What a reader without internet sees: the operations listed, not a blank page."""
    from playwright import sync_api

    from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS

    with live_server(create_app(settings, FakeGrader().factory)) as base, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page()
            elsewhere: list[str] = []

            def only_here(route: sync_api.Route) -> None:
                if route.request.url.startswith(base):
                    route.continue_()
                else:
                    elsewhere.append(route.request.url)
                    route.abort()

            page.route("**/*", only_here)
            page.goto(f"{base}/api/v1/docs")
            page.wait_for_selector(".opblock-summary-path", timeout=30_000)
            assert "ppo-grader" in page.inner_text(".info .title")
            assert page.locator(".opblock").count() > 20
            assert elsewhere == []
        finally:
            browser.close()
