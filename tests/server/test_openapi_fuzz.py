"""The OpenAPI schema is complete, and a property-based fuzz run against it (schemathesis)
finds no server error (5xx) on any route, as an instructor and anonymously."""

from __future__ import annotations

import os
import pytest

from server.models import Role
from tests.server.conftest import Api

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402


def test_every_route_documents_its_errors_and_a_response_model(api: Api) -> None:
    schema = api.client.get("/api/v1/openapi.json").json()
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            responses = operation["responses"]
            ok = [code for code in responses if code.startswith("2")]
            assert ok, (method, path)
            for code in ok:
                content = responses[code].get("content", {})
                assert any(c.get("schema") for c in content.values()), (method, path, code)
            if path.startswith("/api/v1/health") or path == "/metrics":
                continue
            assert "401" in responses, (method, path)
            for code, response in responses.items():
                if code.startswith(("4", "5")) and code != "422":
                    ref = response["content"]["application/json"]["schema"]["$ref"]
                    assert ref.endswith("/ErrorBody"), (method, path, code)


@pytest.mark.slow
@pytest.mark.parametrize("role", [Role.INSTRUCTOR, None])
def test_schemathesis_finds_no_server_error(api: Api, role: Role | None) -> None:
    headers = api.user("fuzzer", Role.INSTRUCTOR) if role else {}
    raw = api.client.get("/api/v1/openapi.json").json()
    schema = schemathesis.openapi.from_dict(raw)
    failures: list[str] = []

    # Anonymous, most cases stop at the 401 before any parameter is read: fewer of them find as much.
    examples = int(os.environ.get("PPO_FUZZ_EXAMPLES", "25")) // (1 if role else 2)
    for operation in schema.get_all_operations():
        op = operation.ok()
        if op.path in {"/metrics"}:
            continue

        @given(case=op.as_strategy())
        @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def run(case: schemathesis.Case) -> None:
            kwargs = case.as_transport_kwargs(base_url="http://testserver", headers=headers)
            kwargs.pop("base_url", None)
            response = api.client.request(**kwargs)
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:200]}")

        run()
    assert not failures, "\n".join(failures[:10])
