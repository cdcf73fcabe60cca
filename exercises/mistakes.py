"""Known mistakes: one :class:`Mistake` per catalogued error a learner makes, and how to declare one.

Most mistakes are switches of a fault-parametrised reference (an error model): each
exercise's ``faulty.py`` holds its reference written once more with a keyword-only ``faults``
argument, every switch in it one catalogued mistake, and the function with
``faults=()`` is the reference. A single mistake is the reference with one switch on; a
learner who made two or three mistakes behaves like the reference with two or three switches
on, which is what diagnosis searches (after the error models of Singh et al., PLDI 2013, and
the conceptual mutants of Prasad et al., 2024). A few mistakes are hand-written functions
(``@mutant``), such as the memory mistakes: right values, wrong cost.

``faulty.py`` is self-contained (torch, ``torch.nn.functional`` and math only), so a mistake's
source, submitted through the real jail, is that file plus a wrapper with the exercise's own
function name and signature.

An exercise's ``mutants.py`` declares its mistakes with :func:`fault` (then
:func:`fault_mutants`) and :func:`mutant`, under ids local to the exercise; the registry
prefixes the exercise's slug when it loads them, so every loaded mistake's id is
``"<slug>/<key>"`` (``gae/bootstrap-from-padding``): the id the diagnosis, the reports, the
database, the statistics and the dashboard share. Titles and fixes are display text.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class MistakeKind(StrEnum):
    """How a mistake is written, which decides how diagnosis may use it."""

    #: A switch of the exercise's faulty reference: combines with other switches.
    SWITCH = "switch"
    #: A hand-written wrong solution: tried alone.
    FUNCTION = "function"
    #: Right values, wrong cost (hand-written): named only by a memory check, from its measured peak.
    MEMORY = "memory"


@dataclass(frozen=True, eq=False)
class Mistake:
    """One catalogued mistake of one exercise.

    ``explains``: ids of the checks this mistake can make fail (and the only checks it may be
    named on). ``site``: mistakes at the same site of the code exclude each other (a learner
    writes one thing there), so combinations take at most one per site. ``fn`` is the wrong
    solution, callable like the learner's function; ``faulty`` the faulty reference a switch
    belongs to.
    """

    id: str
    title: str
    fix: str
    explains: tuple[str, ...]
    site: str
    kind: MistakeKind
    fn: Callable[..., Any] | None = None
    faulty: Callable[..., Any] | None = None
    #: What every learner's form of this mistake shares, beyond its switch's exact behaviour
    #: (one of :data:`SIGNATURES`; "" when only the exact behaviour names it).
    signature: str = ""
    #: Named only where it matches every case a failed check reads, never from part of them
    #: (diagnosis's case-by-case support): for a family whose variants differ from each other and
    #: from uncatalogued forms only in a region of the input (the detached-branch family), a
    #: match on a few cases is not evidence.
    exact_only: bool = False
    #: The id of the mistake this switch is another form of ("" : none): the same misconception
    #: written so that it behaves differently (its ties round another way, say). Diagnosis names
    #: that mistake when this form matches, so a learner gets one name whichever form was written.
    form_of: str = ""

    @property
    def key(self) -> str:
        """The id without the exercise's slug: the faulty reference's switch, for a switch."""
        return self.id.rsplit("/", 1)[-1]

    @property
    def is_switch(self) -> bool:
        return self.kind is MistakeKind.SWITCH

    @property
    def is_memory(self) -> bool:
        return self.kind is MistakeKind.MEMORY

    def in_exercise(self, slug: str) -> Mistake:
        """This mistake under its full id ``"<slug>/<key>"`` (the registry calls it once)."""
        if "/" in self.id:
            raise ValueError(f"mistake {self.id!r} is already bound to an exercise")
        return dataclasses.replace(
            self, id=f"{slug}/{self.id}", form_of=f"{slug}/{self.form_of}" if self.form_of else ""
        )

    @property
    def named_id(self) -> str:
        """The id diagnosis names when this mistake matches: its own, or the mistake it is a form of."""
        return self.form_of or self.id

    def source(self, function_name: str) -> str:
        """A submittable module whose ``function_name`` is this mistake."""
        if self.faulty is not None and self.is_switch:
            return faulty_source(self.faulty, (self.key,), function_name)
        assert self.fn is not None, f"mistake {self.id} has no function"
        return mutant_source(self.fn, function_name)


#: Signatures a mistake may declare: "edits-inputs" (an input differs after the call, however
#: it was edited), "no-value-error" (no ValueError where the contract asks for one, whatever
#: happens instead: a broadcast, another exception, a result), "wrong-dtype" (a returned
#: tensor's dtype is not the reference's, whichever dtype it is).
SIGNATURES = ("edits-inputs", "no-value-error", "wrong-dtype")


def fault(
    id: str,
    title: str,
    *,
    fix: str,
    explains: Iterable[str],
    site: str = "",
    signature: str = "",
    exact_only: bool = False,
    form_of: str = "",
) -> Mistake:
    """Declare a switch ``id`` of the exercise's faulty reference (bound to it by :func:`fault_mutants`)."""
    if signature and signature not in SIGNATURES:
        raise ValueError(f"unknown signature {signature!r} (one of {SIGNATURES})")
    return Mistake(
        id=id,
        title=title,
        fix=fix,
        explains=tuple(explains),
        site=site or id,
        kind=MistakeKind.SWITCH,
        signature=signature,
        exact_only=exact_only,
        form_of=form_of,
    )


def wrong_dtype_fault(explains: Iterable[str] = ("dtype_device",)) -> Mistake:
    """The ``wrong-dtype`` switch every exercise with tensor results declares alike: a result
    not in the inputs' dtype (recognised by its signature, whatever the form)."""
    return fault(
        "wrong-dtype",
        "result not in the inputs' dtype: a float64 or bfloat16 input gets a float32 (or float64) result, "
        "from a .float() or a wider working copy never cast back",
        fix="Return results in the inputs' dtype: compute in it, or cast back with .to(x.dtype) on every path.",
        explains=explains,
        site="dtype",
        signature="wrong-dtype",
    )


def inplace_edit_fault(argument: str) -> Mistake:
    """The ``inplace-edit`` switch: the input ``argument`` is changed in place."""
    return fault(
        "inplace-edit",
        f"in-place edit of an input: {argument} is changed in place, changing the caller's tensor",
        fix="Compute into new tensors (x = x - y), never sub_(), mul_(), masked_fill_() or += on an argument.",
        explains=("no_inplace",),
        site="inplace",
        signature="edits-inputs",
    )


#: The keys of the detached-branch family (:func:`detached_branch_faults`), one per branch.
DETACHED_BRANCHES = ("detached-clipped-branch", "detached-unclipped-branch")


def detached_branch_faults(
    *,
    pick: str,
    clipped: str,
    unclipped: str,
    argument: str,
    explains: Iterable[str],
    form: str = "",
    form_note: str = "",
) -> list[Mistake]:
    """The detached-branch family: one branch of a clipped ``torch.min``/``torch.max`` built
    from a detached ``argument``, declared alike by every exercise with a clipped objective.

    The values stay right; only the gradient changes, and in a pattern specific to the branch:
    inside the clip range the two branches tie and ``torch.{pick}`` splits the gradient between
    them, so the detached branch's half is lost; where the detached branch alone wins, all of
    it is. Each switch is matched on its exact gradients, on every case of a check
    (``exact_only``): a name is given only where the learner's gradient is that variant's, not
    where a few cases agree (a ``torch.where`` sending the ties to the detached branch agrees
    with it outside the clip range only).

    ``form`` declares the family once more for another way of writing the clipped term whose
    ties round differently (keys ``"<branch>-<form>"``, same site, so one of them at most):
    critic-loss's ``old + clamp(values - old, -c, c)`` is a rounding step off ``values`` inside
    the range (the max then picks one branch per element), ``clamp(values, old - c, old + c)``
    is ``values`` exactly (the max splits the gradient). ``form_note`` says which, in the titles.
    Each such switch is a form of its branch's mistake (``form_of``): both forms get one name.
    """
    where = {"min": "minimum", "max": "maximum"}[pick]
    keys = [f"{key}-{form}" if form else key for key in DETACHED_BRANCHES]
    note = f" ({form_note})" if form_note else ""
    branch_grad = "branch-grad"  # one site: a learner detaching both branches made another mistake
    explained = tuple(explains)
    return [
        fault(
            keys[0],
            f"a detached branch of the {pick}: the clipped term {clipped} is built from a detached {argument}{note}, "
            f"so inside the clip range, where the two terms tie and torch.{pick} splits the gradient between "
            "them, half of the gradient is lost",
            fix=f"Build both terms of the {pick} from the same undetached {argument}: no .detach() inside the clamp; "
            "clamp already gives zero gradient outside the range.",
            explains=explained,
            site=branch_grad,
            exact_only=True,
            form_of=DETACHED_BRANCHES[0] if form else "",
        ),
        fault(
            keys[1],
            f"a detached branch of the {pick}: the unclipped term {unclipped} is built from a detached {argument}{note}, "
            f"so the gradient is lost where it is the {where} and halved inside the clip range (where the two "
            "terms tie)",
            fix=f"Build both terms of the {pick} from the same undetached {argument}: the unclipped term carries "
            "the gradient wherever it is chosen.",
            explains=explained,
            site=branch_grad,
            exact_only=True,
            form_of=DETACHED_BRANCHES[1] if form else "",
        ),
    ]


def fault_mutants(faulty: Callable[..., Any], faults: list[Mistake]) -> list[Mistake]:
    """The declared switches, each bound to the faulty reference ``faulty``."""
    names = inspect.signature(faulty).parameters
    if "faults" not in names:
        raise ValueError(f"{faulty.__name__} has no faults= parameter")
    return [dataclasses.replace(f, fn=with_faults(faulty, [f.key]), faulty=faulty) for f in faults]


def mutant(
    title: str, *, memory: bool = False, fix: str = "", explains: tuple[str, ...] = ()
) -> Callable[[Callable[..., Any]], Mistake]:
    """Declare a hand-written known-wrong solution; ``title`` is what feedback will name.

    Its id is the function's name, hyphenated. ``memory=True`` marks a solution whose values
    are right but whose peak memory is not (an O(T^2) intermediate, say): it is matched on
    memory checks by its measured peak.
    """

    def wrap(fn: Callable[..., Any]) -> Mistake:
        key = fn.__name__.replace("_", "-")
        return Mistake(
            id=key,
            title=title,
            fix=fix,
            explains=tuple(explains),
            site=key,
            kind=MistakeKind.MEMORY if memory else MistakeKind.FUNCTION,
            fn=fn,
        )

    return wrap


def with_faults(faulty: Callable[..., Any], faults: Iterable[str]) -> Callable[..., Any]:
    """The faulty reference with these switches on, callable like the learner's function."""
    return functools.partial(faulty, faults=frozenset(faults))


def faulty_source(faulty: Callable[..., Any], faults: Iterable[str], function_name: str) -> str:
    """A submittable module: the faulty reference's file and a wrapper named ``function_name``."""
    module = sys.modules[faulty.__module__]
    text = inspect.getsource(module)
    sig = inspect.signature(faulty)
    params = [p for name, p in sig.parameters.items() if name != "faults"]
    header = ", ".join(str(p) for p in params)
    call = ", ".join(f"{p.name}={p.name}" if p.kind is p.KEYWORD_ONLY else p.name for p in params)
    switches = sorted(set(faults))
    return (
        f"{text}\n\ndef {function_name}({header}):\n"
        f"    return {faulty.__name__}({call}, faults=frozenset({switches!r}))\n"
    )


_IMPORTS = "import math\nimport torch\nimport torch.nn.functional as F\n\n"


def mutant_source(fn: Callable[..., Any], function_name: str) -> str:
    """Source of a self-contained function, renamed, with its decorators dropped."""
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
        # a decorator spanning several lines ends with a line that closes its parenthesis
        while lines and not lines[0].lstrip().startswith("def "):
            lines.pop(0)
    first = lines[0]
    lines[0] = first.replace(f"def {fn.__name__}(", f"def {function_name}(", 1)
    return _IMPORTS + "\n".join(lines) + "\n"
