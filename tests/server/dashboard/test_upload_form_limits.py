"""Review 4, findings 1 to 4 (issue 31), through the running app (its lifespan, its worker,
its database): the upload form's body is read only once the sender is known, is parsed as
it arrives with its limits enforced while parsing, every code cap comes before any parse,
and building a notebook's module costs work linear in the notebook. Each test counts work
(bytes the app pulled from the body, parts parsed, ``ast.parse`` and ``symtable`` calls),
never time."""

from __future__ import annotations

import ast
import symtable
from collections.abc import Callable, Iterator
from typing import Any

import nbformat
import pytest
from fastapi.testclient import TestClient
from nbformat.v4 import new_code_cell, new_notebook

from server.app import create_app
from server.config import Settings
from server.dashboard import upload
from tests.server.conftest import Api, StartApi
from tests.server.dashboard.test_upload import FUNCTION, form_of, logged_in, message, send, stored
from tests.server.fakes import FakeGrader

BOUNDARY = "review4"


class CountingApp:
    """The app behind a shim that counts the body bytes the app pulls (``receive``)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.body_bytes = 0
        self.state = app.state  # the tests' helpers read the app's state through the client

    async def __call__(self, scope: Any, receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
        async def counted() -> Any:
            message = await receive()
            if message.get("type") == "http.request":
                self.body_bytes += len(message.get("body", b""))
            return message

        await self.app(scope, counted, send)


@pytest.fixture
def counted(settings: Settings, grader: FakeGrader) -> Iterator[tuple[Api, CountingApp]]:
    app = CountingApp(create_app(settings, grader.factory))
    with TestClient(app, raise_server_exceptions=False) as client:  # type: ignore[arg-type]
        yield Api(client, app.app.state.grader), app


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times ``ast.parse`` and ``symtable.symtable`` run (in this process: the app's)."""
    counts = {"ast": 0, "symtable": 0}
    real_parse, real_table = ast.parse, symtable.symtable

    def parse(*args: Any, **kwargs: Any) -> Any:
        counts["ast"] += 1
        return real_parse(*args, **kwargs)

    def table(*args: Any, **kwargs: Any) -> Any:
        counts["symtable"] += 1
        return real_table(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", parse)
    monkeypatch.setattr(symtable, "symtable", table)
    return counts


def nested_body(parts: int = 800, newlines: int = 300_000) -> bytes:
    """The attack of finding 1: ``multipart/mixed`` parts nested ``parts`` deep, then newlines."""
    out = [f"--{BOUNDARY}\r\n".encode()]
    for depth in range(parts):
        out.append(f'Content-Type: multipart/mixed; boundary="b{depth}"\r\n\r\n--b{depth}\r\n'.encode())
    out.append(b"Content-Disposition: form-data; name=\"source\"\r\n\r\n" + b"\n" * newlines)
    out.extend(f"\r\n--b{depth}--".encode() for depth in reversed(range(parts)))
    out.append(f"\r\n--{BOUNDARY}--\r\n".encode())
    return b"".join(out)


def post_raw(api: Api, body: bytes, csrf: str = "") -> Any:
    return api.client.post(
        "/dashboard/submit",
        params={"csrf": csrf} if csrf else None,
        content=body,
        headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
        follow_redirects=False,
    )


def notebook(*cells: str) -> bytes:
    return nbformat.writes(new_notebook(cells=[new_code_cell(c) for c in cells])).encode()


# --------------------------------------------------------------------------- finding 1


def test_an_anonymous_upload_is_answered_without_reading_its_body(counted: tuple[Api, CountingApp]) -> None:
    api, app = counted
    body = nested_body()
    assert len(body) > 300_000
    bodies, parts = upload.WORK.bodies, upload.WORK.parts
    response = post_raw(api, body)
    assert response.status_code == 200 and 'action="/login"' in response.text  # the login form
    assert app.body_bytes == 0, f"the app read {app.body_bytes} bytes of an anonymous body"
    assert (upload.WORK.bodies, upload.WORK.parts) == (bodies, parts)
    # a stranger's form token, a session's cookie but another site's Origin: the same, refused unread
    logged_in(api)
    csrf = form_of(api)["csrf"]
    app.body_bytes = 0  # the login form's body was read, as it should be
    assert post_raw(api, body, csrf="x" * 43).status_code == 403
    refused = api.client.post("/dashboard/submit", params={"csrf": csrf}, content=body, follow_redirects=False,
                              headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
                                       "Origin": "https://evil.example"})
    assert refused.status_code == 403
    assert app.body_bytes == 0
    assert api.client.get("/api/v1/health").status_code == 200


def test_a_nested_multipart_part_is_refused_at_the_first_part(counted: tuple[Api, CountingApp]) -> None:
    api, _ = counted
    headers = logged_in(api)
    parts = upload.WORK.parts
    response = post_raw(api, nested_body(newlines=30_000), csrf=form_of(api)["csrf"])
    assert response.status_code == 400
    assert "multipart inside multipart" in message(response) and "Traceback" not in response.text
    assert upload.WORK.parts - parts == 1, "the parser went on past the nested part"
    assert stored(api, headers) == []


def test_too_many_parts_and_oversized_headers_are_refused_while_parsing(counted: tuple[Api, CountingApp]) -> None:
    api, _ = counted
    logged_in(api)
    csrf = form_of(api)["csrf"]
    many = b"".join(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\nx\r\n'.encode()
                    for i in range(10_000)) + f"--{BOUNDARY}--\r\n".encode()
    parts = upload.WORK.parts
    response = post_raw(api, many, csrf=csrf)
    assert response.status_code == 400 and "Send the form from your dashboard page" in message(response)
    assert upload.WORK.parts - parts == upload.MAX_PARTS + 1
    long_header = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{"n" * 100_000}"\r\n\r\nx\r\n--{BOUNDARY}--\r\n'
    assert post_raw(api, long_header.encode(), csrf=csrf).status_code == 400


# --------------------------------------------------------------------------- finding 2


def test_a_2_mib_python_file_and_pasted_code_are_refused_before_any_parse(api: Api, parses: dict[str, int]) -> None:
    headers = logged_in(api)
    fields = form_of(api)
    big = b"a\n" * (1 << 20)  # 2 MiB of names: a syntax tree of a million nodes
    response = send(api, fields, ("big.py", big))
    assert response.status_code == 413 and "the limit is 65536 bytes" in message(response), message(response)
    response = send(api, {**fields, "source": big.decode()})
    assert response.status_code == 413 and "The pasted code is over 65536 bytes" in message(response)
    assert parses == {"ast": 0, "symtable": 0}
    assert stored(api, headers) == []


def test_a_notebooks_huge_cell_and_too_much_code_in_all_are_refused_before_any_parse(
    api: Api, parses: dict[str, int]
) -> None:
    headers = logged_in(api)
    response = send(api, form_of(api), ("big.ipynb", notebook(FUNCTION, "a\n" * (1 << 19))))
    assert response.status_code == 413
    assert "code cell 2 of big.ipynb has 1048576 bytes of code; the limit is 65536 bytes" in message(response)
    cells = [f"# {i}\n" + "a = 1\n" * 10_000 for i in range(5)]  # 60 KB each, 300 KB in all
    response = send(api, form_of(api), ("many.ipynb", notebook(FUNCTION, *cells)))
    assert response.status_code == 413 and "The code cells of many.ipynb have more than 262144 bytes" in message(response)
    assert parses == {"ast": 0, "symtable": 0}
    assert stored(api, headers) == []


# --------------------------------------------------------------------------- findings 3 and 4


def undefined_names(count: int) -> str:
    body = "\n".join(f"    x{i} = u{i}" for i in range(count))
    return f"def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\n{body}\n    return 0\n"


def test_a_function_reading_2000_undefined_names_costs_one_parse(api: Api, parses: dict[str, int]) -> None:
    headers = logged_in(api)
    for count in (1000, 2000):
        before = dict(parses)
        response = send(api, form_of(api), ("names.ipynb", notebook("import torch", undefined_names(count))))
        # one parse of each cell (the scan), one of the function (its reads' places), one table
        assert parses["ast"] - before["ast"] <= 3, parses
        assert parses["symtable"] - before["symtable"] <= 1, parses
        assert response.status_code == 400
        text = message(response)
        assert "compute_actor_loss uses `u0` (code cell 2, line 2)" in text, text
        assert f"and {count - 21} more" in text  # the sentence stays short
    assert stored(api, headers) == []


def test_12000_submodule_imports_are_scanned_in_linear_work(
    settings: Settings, start_api: StartApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    from notebook_format import bindings

    examined = {"pieces": 0}
    real = bindings._plain_imports

    def plain_imports(pieces: Any, name: str) -> bool:
        examined["pieces"] += len(pieces)
        return real(pieces, name)

    monkeypatch.setattr(bindings, "_plain_imports", plain_imports)
    # caps raised, so the notebook is read and built; what it builds is over the source cap
    api = start_api(settings.model_copy(update={"MAX_SOURCE_BYTES": 256 * 1024}))
    headers = logged_in(api)
    lines = 12_000
    imports = "\n".join(f"import a.b{i}" for i in range(lines))
    function = FUNCTION.replace("return CLIP", "return a.b0")
    response = send(api, form_of(api), ("imports.ipynb", notebook(imports, function)))
    assert response.status_code == 413, message(response)  # the module: 12,000 imports, ~490 KB
    assert examined["pieces"] <= 2 * lines, f"{examined['pieces']} import statements re-examined for {lines}"
    assert stored(api, headers) == []
