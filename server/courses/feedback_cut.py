"""The report view's cut: a verdict's texts without what the learner's code wrote on the judge's
inputs (its exception messages and type names, its returned numbers, its names).

Root causes, headlines and next steps are composed again here from the stored data (the
exception's type through :func:`quoted_type`, the phase, the counts), never by editing the
finished sentence the judge wrote. Check messages exist only as the judge's sentences; their
grammar is the judge's own (``Raised T: ...``, ``got T: ...``, ``expected E, got G``), the type
names in them are short identifiers (the trusted side refuses any other,
``sandbox.verdicts.type_name``), and the numbers are the judge's formatting, so the cut below
finds every learner's part whatever its length; anything after a quoted exception goes whole.

Where an exception was raised cannot be cut to nothing: honest code raises on a line that
depends on the inputs too. It is bounded instead: a report shows at most
:data:`REPORT_ROOT_CAUSES` root causes, each with one place (a code line of the stored source),
and everything else of that place (the function, the columns, the text) is read from the source.
"""

from __future__ import annotations

import builtins
import math
import re

from exercises.feedback import MAX_SOURCE_LINE
from server.courses.source_facts import SourceFacts
from server.submissions.schemas import Feedback, FeedbackSummary, Location, RootCause

#: What replaces a message the learner's code wrote on the judge's inputs.
CUT_NOTE = "(message not shown: this exercise's feedback policy hides what your code prints on its inputs)"
#: What replaces the value (or shape) a learner's call returned, under the report view.
GOT_NOTE = "got another value"
GOT_SHAPE_NOTE = "got another shape"
#: A missing function's verdict: the names the module defined are the learner's to choose.
MISSING_NOTE = (
    "The function the exercise asks for is not defined once your file has run (the names it did "
    "define are not shown under this exercise's feedback policy)."
)

_RAISED = re.compile(r"\b([Rr]aised|got) ([A-Za-z_][\w.]*)( during backward\(\)| while being imported)?: ")
#: A number or a list of numbers as the judge formats them (``_fmt``, shapes): the learner's
#: values after "got". Part of a number cut by a cap still matches.
_NUM = r"[-+]?(?:\d+(?:\.\d+)?(?:e[-+]?\d+)?|nan|inf)"
_GOT_VALUE = re.compile(
    rf"(?:\bexpected ({_NUM}), )?\b[Gg]ot (?:(shape )?((?:[a-z]+\d*\[[\d, ]*\] )?\[[-+\d., e.naif]*(?:\]|$))|({_NUM}))"
)


def quoted_type(name: str) -> str:
    """An exception's type name when it is Python's own; a learner's class could be made at run
    time with the inputs in its name."""
    found = getattr(builtins, name, None)
    return name if isinstance(found, type) and issubclass(found, BaseException) else "an exception"


def cut_raised(text: str) -> str:
    """A judge's message up to the first exception of the learner's it quotes (``raised X: ...``,
    ``got X: ...``, ``raised X while being imported: ...``), that exception named by its type
    only; everything after it (the message, the rest of the sentence, the traceback) is the
    learner's and goes."""
    match = _RAISED.search(text)
    if match is None:
        return text
    return f"{text[: match.start()]}{match[1]} {quoted_type(match[2])}{match[3] or ''} {CUT_NOTE}"


def _decade(x: float) -> str:
    """``x`` (> 0) as its power of ten: ``1e-3`` for anything in [1e-3, 1e-2)."""
    return f"1e{math.floor(math.log10(x))}"


def off_by(got: float, want: float) -> str:
    """By how much ``got`` misses ``want``, as classes ("off by about 1e-2, about 1e-1
    relative"): what the cut keeps of a mismatch (an exact error would give the number back)."""
    if not math.isfinite(got):
        return "not a finite number"
    if not math.isfinite(want):
        return "expected a non-finite value"
    diff = abs(got - want)
    if diff == 0:
        return "off by less than the printed digits"
    relative = f", about {_decade(diff / abs(want))} relative" if want else ""
    return f"off by about {_decade(diff)}{relative}"


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _got(match: re.Match[str]) -> str:
    expected = f"expected {match[1]}, " if match[1] is not None else ""
    if match[3] is not None:  # a shape, or a list of values
        return expected + (GOT_SHAPE_NOTE if match[2] else GOT_NOTE)
    want, got = _number(match[1] or ""), _number(match[4])
    if want is not None and got is not None:  # "expected E, got G": say by how much
        return f"{expected}{GOT_NOTE} ({off_by(got, want)})"
    return expected + GOT_NOTE


def cut_values(text: str) -> str:
    """``text`` without the values the learner's calls returned (``got -2.0``, ``got shape
    [3]``): a mismatch still says where (the judge's "first at [0, 5]") and by how much (the
    error's power of ten, absolute and relative)."""
    return _GOT_VALUE.sub(_got, text)


#: "got str 'abc'", "got Opaque <...>", "got ['k1', 'k2']": a repr of what the learner's call
#: returned (a text, a dict's keys, an object), up to where the judge's sentence goes on: its
#: case ("on input ...", "on hidden case 3", or a described case such as "on torch.float32
#: inputs: (...)", ``exercises.compare.where``) or the sentence's end.
_GOT_REPR = re.compile(
    r"\b([Gg]ot) (?:([A-Za-z_]\w*) )?(?!\((?:message not shown|off by|not |expected a non))"
    r"[\'\"\[{(<].*?(?= on (?:input|hidden case)\b| on [^\n;]*?: \(|[.;](?:\s|$)|\n|$)"
)


def _repr(match: re.Match[str]) -> str:
    kind = match[2]
    quoted = kind if kind is not None and isinstance(getattr(builtins, kind, None), type) else None
    return (
        f"{match[1]} {'a ' + quoted if quoted else 'another value'} (not shown under this exercise's feedback policy)"
    )


def cut_reprs(text: str) -> str:
    """``text`` without the reprs of what the learner's calls returned (a text, keys, objects):
    Python's own type names stay, the rest goes."""
    return _GOT_REPR.sub(_repr, text)


#: A memory check's reading of the learner's run ("Peak memory 37.2 MiB on input ... is over
#: the budget"): the code can allocate in proportion to its inputs, so the number goes.
_PEAK = re.compile(r"\bPeak memory [\d.]+ [KMG]?i?B\b")


#: A case as the judge names it, "[case 3, seed 123]": the seed rebuilds the case's inputs with
#: the public judge (``CaseGen(seed)``), so only the case's number stays.
_CASE_SEED = re.compile(r"\[case ([^\],\n]*), seed -?\d+\]")


#: How many elements differ (``exercises.compare.explain_mismatch``: "k of n elements differ;
#: first at ..."): k is the learner's to choose (their code makes exactly k elements wrong,
#: k taken from the inputs), so it goes; where the first mismatch is and by how much stay.
_COUNTED = re.compile(r"\b\d+ of \d+ elements differ; first at ")
#: The worst mismatch after the first ("; worst at [2, 17]: expected E, got G"): a second
#: position and error class of the learner's choosing, and nothing a learner needs to find
#: the mistake the first one shows.
_WORST = re.compile(rf"; worst at \[[\d, ]*\]: expected {_NUM}, got {_NUM}")
#: What the report says in place of the count.
DIFFER_NOTE = "values differ; first at "


def cut_counts(text: str) -> str:
    """``text`` without how many elements differ and without the worst mismatch: the judge's
    own "first at" (where) and its error class (how much) are what stays of a mismatch."""
    return _WORST.sub("", _COUNTED.sub(DIFFER_NOTE, text))


def cut_check_message(text: str) -> str:
    """A check's message as the report view shows it."""
    text = _CASE_SEED.sub(r"[case \1]", text)
    return _PEAK.sub("Peak memory", cut_reprs(cut_values(cut_counts(cut_raised(text)))))


#: The most root causes a report shows (the first ones, by how many calls raised them): each
#: shows one place, and the learner's code picks that place from the inputs (a code object moved
#: to any code line, review 6, attack 2), so each is about log2 of the file's code lines in bits.
#: A fixed count keeps a report's bound fixed (docs/security.md, "What a feedback policy can
#: still leak"); the instructors' full view keeps every cause the judge stored.
REPORT_ROOT_CAUSES = 3


def cut_location(location: Location | None, facts: SourceFacts | None) -> Location | None:
    """The cause's one place (the innermost frame of the learner's file, as the judge stored it)
    when its line is a code line of the stored source; every other part of it composed from
    that line and the source alone: the function the source defines around it, the whole line
    for its columns (the jail's caret could be placed anywhere, review 6), the stored line's text.
    So a location carries its line number and nothing more."""
    if location is None or facts is None or not facts.may_name_line(location.line):
        return None
    line = location.line
    text = facts.lines[line - 1].rstrip()
    indent = len(text) - len(text.lstrip())
    return Location(
        file=facts.filename,
        line=line,
        column=indent + 1,
        end_column=max(len(text), indent + 1) + 1,
        function=facts.function_at(line),
        source=text[:MAX_SOURCE_LINE],
    )


def cut_traceback(location: Location | None, exception: str) -> str:
    """The traceback built from data: the cause's one place (its :func:`cut_location`), then the
    exception by its quoted type (:func:`quoted_type`). No other frame is shown: the learner's
    code chooses each frame's line (review 6, attack 2), so every frame would add its bits to
    the report's."""
    if location is None:
        return f"{exception}: {CUT_NOTE}"
    return "\n".join(
        [
            "Traceback (most recent call last):",
            f'  File "{location.file}", line {location.line}, in {location.function}',
            f"    {location.source.strip()}",
            f"{exception}: {CUT_NOTE}",
        ]
    )


def cut_message(verdict: str | None, message: str, feedback: Feedback | None) -> str:
    """The verdict's message: an import-time exception by its quoted type only, a missing
    function without the names the module defined, any other message cut like a check's."""
    if verdict == "runtime_error":
        causes = feedback.root_causes if feedback is not None else []
        exception = quoted_type(causes[0].exception) if causes else "an exception"
        return f"Your module raised {exception} while being imported: {CUT_NOTE}"
    if verdict == "missing_function":
        near = feedback.summary.headline if feedback is not None else ""
        # the near miss names a function of the learner's file (its source), not of the run
        return near if near.startswith("Your file defines ") else MISSING_NOTE
    return cut_check_message(message)


def _headline(cause: RootCause, exception: str) -> str:
    """The cause's headline composed again (exercises.feedback writes it the same way)."""
    if cause.phase == "syntax":
        return cause.headline  # the file's own syntax error: nothing ran on the inputs
    if cause.phase == "import":
        return f"Your file raised {exception} while being imported"
    when = "on every call" if cause.calls == cause.total_calls else f"on {cause.calls} of {cause.total_calls} calls"
    if cause.phase == "backward":
        when += " (in backward())"
    n = len(cause.checks)
    failed = f" ({n} check{'s' if n != 1 else ''})" if n else ""
    return f"Your function raised {exception} {when}{failed}"


def _cause(cause: RootCause, facts: SourceFacts | None) -> RootCause:
    if cause.phase == "syntax":
        return cause
    exception = quoted_type(cause.exception)
    location = cut_location(cause.location, facts)
    return cause.model_copy(
        update={
            "exception": exception,
            "message": CUT_NOTE,
            "location": location,
            "traceback": cut_traceback(location, exception),
            "headline": _headline(cause, exception),
        }
    )


def _next_step(summary: FeedbackSummary, causes: list[RootCause], details: list[str], checks: list[str]) -> str | None:
    """The next step composed again from the data (exercises.feedback's wording)."""
    if causes:
        cause = causes[0]
        if cause.phase == "syntax":
            return "Fix the syntax error above: nothing else can run until the file parses."
        if cause.phase == "import":
            return f"Fix the {cause.exception} above: your function cannot run until the file imports."
        failed = summary.checks_total - summary.checks_passed
        share = f"all {failed}" if len(cause.checks) == failed else f"{len(cause.checks)} of the {failed}"
        return f"Fix this {cause.exception} first: it explains {share} failed checks."
    step = summary.next_step
    if step is None or step.startswith(("Fix the mistake named above", "Fix mistake 1 first", "Rename ")):
        return step  # the judge's own words: named mistakes, the file's function names
    if details:
        return f'Start with "{checks[0]}": {details[0]}'
    return None


def cut_feedback(feedback: Feedback, facts: SourceFacts | None = None) -> Feedback:
    """The structured feedback as the report view shows it, composed from its data and the
    stored source's ``facts`` (without them no location is shown): its first
    :data:`REPORT_ROOT_CAUSES` root causes, each with one location at most."""
    causes = [_cause(c, facts) for c in feedback.root_causes[:REPORT_ROOT_CAUSES]]
    summary = feedback.summary
    details = [
        d.model_copy(
            update={
                "text": cut_check_message(d.text),
                # a check explained by a cause the report leaves out is explained by none shown
                "cause": d.cause if d.cause is not None and d.cause <= len(causes) else None,
            }
        )
        for d in summary.details
    ]
    return Feedback(
        root_causes=causes,
        diagnosis=feedback.diagnosis,
        summary=FeedbackSummary(
            verdict=summary.verdict,
            score=summary.score,
            checks_passed=summary.checks_passed,
            checks_total=summary.checks_total,
            headline=summary.headline,  # replaced by the caller with the cut message's first line
            next_step=_next_step(summary, causes, [d.text for d in details], [d.check for d in details]),
            details=details,
        ),
    )
