"""The error shape in the OpenAPI schema: ``responses=errors(401, 404)`` on a route; and a
renamed wire field's old name, kept for one release (:class:`RenamedFields`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

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


class RenamedFields(BaseModel):
    """A wire type some of whose fields were renamed: each old name stays for one release,
    marked deprecated in the OpenAPI schema (:func:`old_name`), and always carries the new
    field's value (docs/api.md lists them, and the release that drops them).

    ``renamed`` maps old name to new. Out: the old key is written from the new field's value at
    serialization, so a copy that changes the new field (``model_copy(update=...)``, as the
    feedback policy's views do) can never leave the old one saying something else. In: a body
    or a stored record that has only the old key (an older client, a row stored before the
    rename) fills the new field."""

    renamed: ClassVar[Mapping[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _old_names_in(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and any(old in data and new not in data for old, new in cls.renamed.items()):
            data = dict(data)
            for old, new in cls.renamed.items():
                if old in data and new not in data:
                    data[new] = data[old]
        return data

    # No return annotation on purpose: pydantic then documents the fields (an annotation would
    # replace the schema of every renamed type with the annotation's).
    @model_serializer(mode="wrap")
    def _old_names_out(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        out = handler(self)
        if isinstance(out, dict):
            for old, new in self.renamed.items():
                if new in out:
                    out[old] = out[new]
        return out


def old_name(new: str) -> Any:
    """The field of a renamed field's old name (in a :class:`RenamedFields` type, listed in its
    ``renamed``): deprecated, the same value as ``new``."""
    return Field(
        default=None,
        deprecated=True,
        description=f"Deprecated: the old name of `{new}`, with the same value; removed in the next release.",
    )
