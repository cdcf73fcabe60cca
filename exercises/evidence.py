"""What a check read: the cases, and which parts of their outcomes (read-tracking evidence).

A check sees the learner's outcomes through :func:`seen`, a view that records in an
:class:`Evidence` every part it touches: the output (whole, or one item of a returned tuple
or dict), the gradients (all, or one argument's), tensor metadata fields, the inputs after
the call, the detachment probes, the exception. Diagnosis then compares a candidate mistake
with the learner on exactly that evidence, so a mistake is named only where the failed check
looks (:func:`exercises.diagnosis.same_behaviour` reads the aspect names written here).

Aspect names: "output", "output:<item>", "grads", "grads:<argument>", "meta:<field>",
"inputs_after", "probes", "error"; a check may declare more (``Check.reads``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_values
    from collections.abc import Iterator

    from exercises.framework import Outcome


@dataclass
class Evidence:
    """What one check read of one run: the case ids, and the parts of their outcomes."""

    cases: set[str] = field(default_factory=set)
    aspects: set[str] = field(default_factory=set)


_ASPECT_OF = {
    "output": "output",
    "grads": "grads",
    "inputs_after": "inputs_after",
    "probes": "probes",
    "error": "error",
    "raised": "error",
    "missing": "error",
}


def seen(outcome: Outcome, evidence: Evidence) -> Outcome:
    """``outcome`` as a check sees it: every part read is recorded in ``evidence.aspects``."""
    return _Seen(outcome, evidence.aspects)  # type: ignore[return-value]


class _SeenMeta(dict[str, Any]):
    """Per-tensor metadata whose read keys are recorded as aspects ("meta:requires_grad", ...)."""

    def __init__(self, meta: dict[str, Any], aspects: set[str]) -> None:
        super().__init__({k: _SeenFields(v, aspects) if isinstance(v, dict) else v for k, v in meta.items()})


class _SeenKeys(dict[str, Any]):
    """A dict of per-argument tensors (grads) recording which keys a check reads ("grads:0")."""

    def __init__(self, items: dict[str, Any], aspects: set[str], prefix: str) -> None:
        super().__init__(items)
        self._aspects = aspects
        self._prefix = prefix

    def get(self, key: str, default: Any = None) -> Any:
        self._aspects.add(f"{self._prefix}:{key}")
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self._aspects.add(f"{self._prefix}:{key}")
        return super().__getitem__(key)

    def _all(self) -> None:
        self._aspects.add(self._prefix)

    def items(self) -> dict_items[str, Any]:
        self._all()
        return super().items()

    def values(self) -> dict_values[str, Any]:
        self._all()
        return super().values()

    def __iter__(self) -> Iterator[str]:
        self._all()
        return super().__iter__()


def _seen_items(value: Any, aspects: set[str]) -> Any:
    """A returned tuple, list or dict (same type to isinstance) recording which items a check
    reads ("output:0", "output:actor"); iterating over it reads them all ("output")."""

    base = type(value)

    class Seen(base):  # type: ignore[valid-type, misc]
        def __getitem__(self, key: Any) -> Any:
            aspects.add(f"output:{key}")
            return base.__getitem__(self, key)

        def __iter__(self) -> Iterator[Any]:
            aspects.add("output")
            return base.__iter__(self)

        def get(self, key: Any, default: Any = None) -> Any:  # dicts only
            aspects.add(f"output:{key}")
            return base.get(self, key, default)

        def items(self) -> Any:  # dicts only
            aspects.add("output")
            return base.items(self)

        def values(self) -> Any:  # dicts only
            aspects.add("output")
            return base.values(self)

    Seen.__name__ = Seen.__qualname__ = base.__name__
    return Seen(value) if base is not dict else Seen(value.items())


class _SeenFields(dict[str, Any]):
    def __init__(self, fields: dict[str, Any], aspects: set[str]) -> None:
        super().__init__(fields)
        self._aspects = aspects

    def get(self, key: str, default: Any = None) -> Any:
        self._aspects.add(f"meta:{key}")
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self._aspects.add(f"meta:{key}")
        return super().__getitem__(key)


class _Seen:
    """An :class:`~exercises.framework.Outcome` seen by a check: records which of its parts
    the check reads, so diagnosis compares only what the check is about (values, gradients,
    inputs after)."""

    __slots__ = ("_aspects", "_outcome")

    def __init__(self, outcome: Outcome, aspects: set[str]) -> None:
        self._outcome = outcome
        self._aspects = aspects

    def __getattr__(self, name: str) -> Any:
        if name == "meta":
            return _SeenMeta(self._outcome.meta, self._aspects)
        if name == "grads":
            return _SeenKeys(self._outcome.grads, self._aspects, "grads")
        if name == "output":
            value = self._outcome.output
            if type(value) in (tuple, list, dict):
                return _seen_items(value, self._aspects)
            self._aspects.add("output")
            return value
        aspect = _ASPECT_OF.get(name)
        if aspect is not None:
            self._aspects.add(aspect)
        return getattr(self._outcome, name)
