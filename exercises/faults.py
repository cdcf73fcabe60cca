"""Known mistakes as switches of a fault-parametrised reference (an error model).

Each exercise's ``faulty.py`` holds its reference written once more with a keyword-only
``faults`` argument: every switch in it is one catalogued misconception, and the function
with ``faults=()`` is the reference. A single mutant is the reference with one switch on;
a learner who made two or three mistakes behaves like the reference with two or three
switches on, which is what diagnosis searches (after the error models of Singh et al.,
PLDI 2013, and the conceptual mutants of Prasad et al., 2024).

``faulty.py`` is self-contained (torch, ``torch.nn.functional`` and math only), so a
mutant's source, submitted through the real jail, is that file plus a wrapper with the
exercise's own function name and signature.
"""

from __future__ import annotations

import functools
import inspect
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from exercises.framework import Mutant


@dataclass(frozen=True)
class Fault:
    """One catalogued mistake: a switch of the exercise's faulty reference.

    ``explains``: ids of the checks this mistake can make fail (and the only checks it may be
    named on). ``site``: faults at the same site of the code exclude each other (a learner
    writes one thing there), so combinations take at most one per site.
    """

    id: str
    title: str
    fix: str
    explains: tuple[str, ...]
    site: str = ""


def fault(id: str, title: str, *, fix: str, explains: Iterable[str], site: str = "") -> Fault:
    """Declare a fault (see :class:`Fault`)."""
    return Fault(id=id, title=title, fix=fix, explains=tuple(explains), site=site or id)


def with_faults(faulty: Callable[..., Any], faults: Iterable[str]) -> Callable[..., Any]:
    """The faulty reference with these switches on, callable like the learner's function."""
    return functools.partial(faulty, faults=frozenset(faults))


def fault_mutants(faulty: Callable[..., Any], faults: list[Fault]) -> list[Mutant]:
    """One single-fault mutant per switch."""
    names = inspect.signature(faulty).parameters
    if "faults" not in names:
        raise ValueError(f"{faulty.__name__} has no faults= parameter")
    return [
        Mutant(name=f.id.replace("-", "_"), misconception=f.title, fn=with_faults(faulty, [f.id]), fix=f.fix,
               explains=f.explains, fault=f.id, faulty=faulty, site=f.site)
        for f in faults
    ]


def faulty_source(faulty: Callable[..., Any], faults: Iterable[str], function_name: str) -> str:
    """A submittable module: the faulty reference's file and a wrapper named ``function_name``."""
    module = sys.modules[faulty.__module__]
    text = inspect.getsource(module)
    sig = inspect.signature(faulty)
    params = [p for name, p in sig.parameters.items() if name != "faults"]
    header = ", ".join(str(p) for p in params)
    call = ", ".join(f"{p.name}={p.name}" if p.kind is p.KEYWORD_ONLY else p.name for p in params)
    switches = sorted(set(faults))
    return (f"{text}\n\ndef {function_name}({header}):\n"
            f"    return {faulty.__name__}({call}, faults=frozenset({switches!r}))\n")
