"""``/api/v1/docs``: the API's Swagger UI, served whole by this server, so it works where the
browser has no internet (a classroom network, an air-gapped cluster).

FastAPI's default page loads Swagger UI's script and style from a CDN, and is blank without
one. The assets come instead from the ``fastapi-offline`` package (pinned in pyproject.toml):
a maintained, MIT-licensed wheel that ships Swagger UI's own ``swagger-ui-bundle.js`` and
``swagger-ui.css`` (5.32 in 1.7.7) as package data and depends on FastAPI alone. It is used
for its files only: the page itself is FastAPI's ``get_swagger_ui_html`` pointed at them, with
Swagger UI's online validator badge turned off (it would call validator.swagger.io). Vendoring
the files into this repository instead would put 1.7 MB of minified JavaScript under review
and leave its upgrades to us; an unmaintained bundle (``swagger-ui-bundle`` ships 4.15, of 2022)
would age. ``tests/server/test_api_docs.py`` fetches the page and every asset it names from a
real server and checks that nothing points elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

#: The folder of Swagger UI's files inside the installed package.
ASSETS = Path(fastapi_offline.__file__).parent / "static"
SERVED = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon.png")


def install_docs(app: FastAPI, prefix: str) -> None:
    """``GET {prefix}/docs`` (the page) and ``{prefix}/docs/assets/...`` (its files) on ``app``,
    which must have been made with ``docs_url=None``."""
    assets = f"{prefix}/docs/assets"
    app.mount(assets, StaticFiles(directory=ASSETS), name="api-docs-assets")

    @app.get(f"{prefix}/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or f"{prefix}/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{assets}/swagger-ui.css",
            swagger_favicon_url=f"{assets}/favicon.png",
            swagger_ui_parameters={"validatorUrl": None},
        )
