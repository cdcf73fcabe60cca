"""The error shape in the OpenAPI schema: ``responses=errors(401, 404)`` on a route."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

_DESCRIPTIONS = {
    400: "Bad request",
    401: "Missing, unknown or revoked token (`NotAuthenticated`)",
    403: "The caller's role may not do this (`NotAllowed`)",
    404: "Not found, or not yours to read",
    409: "Conflict",
    413: "Body too large",
    422: "Invalid input (`ValidationError` and domain errors)",
    429: "Too many requests (`RateLimited`, `TooManyQueued`); see `Retry-After`",
    503: "The server is stopping (`ShuttingDown`); ask again after `Retry-After`",
}


class ErrorBody(BaseModel):
    """Every error: ``{"error": Name, "detail": text}`` (validation errors add ``errors``)."""

    error: str
    detail: str


def errors(*codes: int, notes: dict[int, str] | None = None) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries with the error shape for these status codes; ``notes``
    replaces the generic description of a code with the route's own error names."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        description = (notes or {}).get(code) or _DESCRIPTIONS.get(code, "Error")
        entry: dict[str, Any] = {"model": ErrorBody, "description": description}
        if code in (429, 503):
            entry["headers"] = {"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}}
        out[code] = entry
    return out


_VALIDATION_BODY = {
    "title": "ValidationErrorBody",
    "type": "object",
    "required": ["error", "detail"],
    "properties": {
        "error": {"type": "string", "const": "ValidationError"},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["loc", "msg", "type"],
                "properties": {
                    "loc": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                    "msg": {"type": "string"},
                    "type": {"type": "string"},
                },
            },
        },
    },
}


def use_error_shape_for_validation(schema: dict[str, Any]) -> dict[str, Any]:
    """Document FastAPI's automatic 422 responses with the shape our handler really sends.

    FastAPI adds ``HTTPValidationError`` (``{"detail": [...]}``) to every route that takes
    parameters; the app's handler answers ``{"error": "ValidationError", "detail", "errors"}``.
    """
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["ValidationErrorBody"] = _VALIDATION_BODY
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/ValidationErrorBody"}}}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            response = operation.get("responses", {}).get("422")
            if response is not None:
                response["content"] = body
                if response.get("description") == "Validation Error":  # FastAPI's own, not a route's note
                    response["description"] = _DESCRIPTIONS[422]
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    return schema
