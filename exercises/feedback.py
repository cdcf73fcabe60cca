"""Feedback as data: the root causes of a run and a summary, for every renderer to lay out.

The judge's checks say what went wrong case by case; a learner needs the cause first, once,
where it is. This module turns one grading run into a small JSON-able structure:

``root_causes``
    One entry per distinct exception of the learner's (same type, same frame of their file),
    with how many calls raised it, the checks it failed, its traceback and its location
    (file, line, column, source line, caret span). A syntax error and an exception at import
    are root causes too.
``summary``
    The verdict, score, checks passed, a one-sentence headline, the next thing to fix, and for
    each failed check a short text (no traceback, no seed) and the number of the root cause
    that explains it (1-based, or None).
``diagnosis``
    The judge's named mistakes, when the report carries them (passed through, capped).

Two steps, because two places know different things:

- :func:`from_run` runs in the judge (it sees each call's error and the source) and names the
  file as the jail does, :data:`JAIL_FILENAME`;
- :func:`for_learner` runs where the submission is stored (it knows the file name the learner
  sent and the diagnosis) and renames the file everywhere, in the feedback and in messages.

The jail always runs ``submission.py``: a learner-chosen name never reaches it (a file named
``torch.py`` would otherwise shadow a module inside the jail). Renderers (``ppo-submit``,
``server/submissions/report_page.py``) only lay this data out; they decide nothing.

Everything here reads text that came out of the jail: it is parsed defensively and capped.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sandbox.text import cap as _cap

log = logging.getLogger(__name__)

#: The name the learner's file has inside the jail (``sandbox.protocol.JobRequest.filename``).
JAIL_FILENAME = "submission.py"

#: Caps on what is stored: root causes kept, characters of a message, a traceback, a source line.
MAX_ROOT_CAUSES = 5
MAX_MESSAGE = 500
MAX_TRACEBACK = 2000
MAX_SOURCE_LINE = 200
MAX_DIAGNOSIS = 10
MAX_FILENAME = 100

_FRAME = re.compile(r'^  File "(?P<file>[^"\n]*)", line (?P<line>\d+), in (?P<function>[^\n]+)$', re.MULTILINE)
_CARET = re.compile(r"^\s*[~^]+\s*$")
#: A case as ``framework.Case.describe`` writes it into messages: "about: (shapes) [case 3,
#: seed 123]". The short form keeps the "about" words; ``--verbose`` shows the message whole.
_CASE_WITH_ABOUT = re.compile(r": \((?:[^()\n]|\([^()\n]*\))*\) \[case [^\]\n]*, seed -?\d+\]")
_CASE_SEED = re.compile(r" \[case [^\]\n]*, seed -?\d+\]")
#: The judge appends the named mistake to a failed check's message (``exercises.scoring.
#: name_mistakes``): one mistake, several together, or none that fits. The summary names them
#: once, in its list of mistakes, so a check's short text leaves the sentence out.
_MISTAKE_SENTENCES = (
    " This matches a known mistake: ",
    " This matches known mistakes together: ",
    " No known mistake explains this failure",
)


# -- locations --------------------------------------------------------------------------------


def _frames(traceback: str) -> list[re.Match[str]]:
    return list(_FRAME.finditer(traceback))


def location_from_traceback(traceback: str, source: str) -> dict[str, Any] | None:
    """The innermost frame of ``traceback`` in the learner's file, as a location.

    ``{"file", "line", "column", "end_column", "function", "source"}``: columns are 1-based
    and come from the caret line Python prints under the source line (the whole stripped
    line when there is none). The source line is read from ``source``, the text the judge
    holds, never from the jail's text; a line number outside the file gives no location.
    """
    frames = [m for m in _frames(traceback) if m.group("file") == JAIL_FILENAME]
    if not frames:
        return None
    frame = frames[-1]
    lines = source.splitlines()
    line = int(frame.group("line")) if len(frame.group("line")) < 9 else 0
    if not 1 <= line <= len(lines):
        return None
    text = lines[line - 1]
    indent = len(text) - len(text.lstrip())
    column, end_column = indent + 1, len(text.rstrip()) + 1
    after = traceback[frame.end() :].split("\n")
    # after[0] is "" (end of the frame line), after[1] the source line, after[2] maybe carets
    if len(after) > 2 and _CARET.match(after[2]) and after[1].startswith("    "):
        shown = after[1][4:]
        first = len(after[2]) - len(after[2].lstrip())
        last = len(after[2].rstrip())
        # the shown line is the stripped source line, indented by four spaces
        if shown.strip() == text.strip() and 4 <= first < last:
            column, end_column = indent + first - 4 + 1, indent + last - 4 + 1
    return {
        "file": JAIL_FILENAME,
        "line": line,
        "column": column,
        "end_column": max(end_column, column + 1),
        "function": _cap(frame.group("function").strip(), 80),
        "source": _cap(text.rstrip(), MAX_SOURCE_LINE),
    }


def syntax_error_location(source: str, line: int | None) -> tuple[dict[str, Any] | None, str | None]:
    """Where ``source`` fails to parse, and the parser's message.

    Compiling executes nothing; it gives the column the jail's report lacks. It is called only
    for a source the jail failed to compile, so it stops where the jail's compile stopped.
    When it disagrees with the jail (it should not), the jail's line wins.
    """
    message: str | None = None
    column = end_column = None
    try:
        compile(source, JAIL_FILENAME, "exec", dont_inherit=True)
    except SyntaxError as exc:
        message = exc.msg
        if line is None or exc.lineno == line:
            line = exc.lineno
            column = exc.offset
            end_column = exc.end_offset if exc.end_lineno == exc.lineno else None
    except (ValueError, RecursionError, MemoryError):  # NUL bytes, absurd nesting: the jail's line only
        pass
    lines = source.splitlines()
    if line is None or not 1 <= line <= len(lines):
        return None, message
    text = lines[line - 1]
    indent = len(text) - len(text.lstrip())
    column = column if column and 1 <= column <= len(text) + 1 else indent + 1
    end_column = end_column if end_column and end_column > column else column + 1
    return {
        "file": JAIL_FILENAME,
        "line": line,
        "column": column,
        "end_column": end_column,
        "function": None,
        "source": _cap(text.rstrip(), MAX_SOURCE_LINE),
    }, message


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``name`` when it is close enough to be a typo (``gea`` -> ``gae``)."""
    pool = [c for c in dict.fromkeys(candidates) if c != name]
    found = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    return found[0] if found else None


def top_level_functions(source: str) -> list[str]:
    """Names of the functions ``source`` defines at top level (parsed, never run)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


# -- the judge's step -------------------------------------------------------------------------


def _key(error: Any, location: dict[str, Any] | None) -> tuple[Any, ...]:
    where = (location["line"], location["function"]) if location else None
    return (error.type, where)


def _root_cause(
    error: Any, location: dict[str, Any] | None, calls: int, total_calls: int, phase: str
) -> dict[str, Any]:
    return {
        "exception": _cap(str(error.type), 100),
        "message": _cap(str(error.message), MAX_MESSAGE),
        "location": location,
        "traceback": _cap(str(error.traceback), MAX_TRACEBACK),
        "phase": phase,
        "calls": calls,
        "total_calls": total_calls,
        "checks": [],
        "checks_line": "",
        "headline": "",
    }


def _headline(cause: Mapping[str, Any]) -> str:
    """ "Your function raised NameError on every call (12 checks)" and its kin."""
    exc = cause["exception"]
    if cause["phase"] == "syntax":
        return f"Your file could not be parsed ({exc})"
    if cause["phase"] == "import":
        return f"Your file raised {exc} while being imported"
    calls, total = cause["calls"], cause["total_calls"]
    when = "on every call" if calls == total else f"on {calls} of {total} calls"
    if cause["phase"] == "backward":
        when += " (in backward())"
    n = len(cause["checks"])
    failed = f" ({n} check{'s' if n != 1 else ''})" if n else ""
    return f"Your function raised {exc} {when}{failed}"


def _checks_line(failed: list[str], every: list[str]) -> str:
    """The checks a cause failed, in one short line: "all 12 checks", "11 of 12 checks: all but
    ValueError on mismatched shapes", or the names when they are few."""
    if not failed:
        return ""
    if len(failed) == len(every):
        return f"all {len(every)} checks"
    others = [name for name in every if name not in failed]
    if len(others) < len(failed) and len(others) <= 2:
        return f"{len(failed)} of {len(every)} checks, all but " + " · ".join(others)
    return f"{len(failed)} of {len(every)} checks: " + " · ".join(failed)


def _attribute(checks: Sequence[Any], causes: list[dict[str, Any]]) -> None:
    """Give each failed check to the first root cause whose exception its message names."""
    for check in checks:
        if check.passed:
            continue
        for cause in causes:
            if f"{cause['exception']}: {cause['message']}"[:200] in check.message:
                cause["checks"].append(check.name)
                break


def _brief(message: str) -> str:
    """A check's message without the traceback, the named mistake (named apart), the case's
    shapes, id and seed (``--verbose`` shows the message whole)."""
    text = message.split("\n", 1)[0]
    for sentence in _MISTAKE_SENTENCES:
        text = text.split(sentence, 1)[0]
    text = text.strip()
    text = text.replace(" (traceback as above)", "")
    text = _CASE_WITH_ABOUT.sub("", text)
    return _cap(_CASE_SEED.sub("", text), MAX_MESSAGE)


def mistakes_from_checks(checks: Sequence[Any]) -> list[dict[str, Any]]:
    """Mistakes named per check, grouped: the summary's list when the report has no diagnosis."""
    named: dict[str, list[str]] = {}
    ids: dict[str, str] = {}
    for check in checks:
        if not check.passed and check.mistake_title:
            named.setdefault(check.mistake_title, []).append(check.name)
            ids.setdefault(check.mistake_title, getattr(check, "mistake_id", None) or check.mistake_title)
    return [{"mistake_id": ids[t], "title": t, "fix": None, "checks": names} for t, names in named.items()]


def _next_step(report: Any, causes: list[dict[str, Any]], details: list[dict[str, str]]) -> str | None:
    if causes:
        # the cause itself is shown once, with its place: the next step points at it
        cause = causes[0]
        if cause["phase"] == "syntax":
            return "Fix the syntax error above: nothing else can run until the file parses."
        if cause["phase"] == "import":
            return f"Fix the {cause['exception']} above: your function cannot run until the file imports."
        failed = sum(1 for c in report.checks if not c.passed)
        share = f"all {failed}" if len(cause["checks"]) == failed else f"{len(cause['checks'])} of the {failed}"
        return f"Fix this {cause['exception']} first: it explains {share} failed checks."
    named = mistakes_from_checks(report.checks)
    if named:
        return f"Fix the mistake named above first: it explains {len(named[0]['checks'])} failed check" + (
            "s." if len(named[0]["checks"]) != 1 else "."
        )
    if details:
        return f'Start with "{details[0]["check"]}": {details[0]["text"]}'
    return None  # a time limit, a crash...: the verdict's message, shown as the headline, says it


def from_run(
    report: Any,
    source: str,
    outcomes: Mapping[str, Any] | None = None,
    function: str | None = None,
    *,
    import_error: Any = None,
) -> dict[str, Any]:
    """Root causes and summary of one run (the file named :data:`JAIL_FILENAME`).

    ``report`` is the judge's ``GradeReport`` (verdict, message, checks, line, score);
    ``outcomes`` the learner's per-call outcomes (each with an ``error`` or None) when the
    calls ran; ``function`` the name the exercise asks for, to suggest a near miss;
    ``import_error`` what the module raised at import (``sandbox.protocol.JobResult.import_error``:
    type, message, traceback), for a ``runtime_error`` verdict.
    """
    causes: list[dict[str, Any]] = []
    if report.verdict == "syntax_error":
        location, parsed = syntax_error_location(source, report.line)
        message = parsed or report.message.removeprefix("Syntax error").lstrip(" :")
        error = _Error("SyntaxError", message, "")
        causes.append(_root_cause(error, location, 0, 0, "syntax"))
    elif report.verdict == "runtime_error":
        raised = _import_error(import_error)
        if raised is not None:
            causes.append(_root_cause(raised, location_from_traceback(raised.traceback, source), 0, 0, "import"))
    elif outcomes:
        groups: dict[tuple[Any, ...], dict[str, Any]] = {}
        for outcome in outcomes.values():
            raised_error = getattr(outcome, "error", None)
            if raised_error is None:
                continue
            location = location_from_traceback(raised_error.traceback or "", source)
            key = _key(raised_error, location)
            if key not in groups:
                groups[key] = _root_cause(raised_error, location, 0, len(outcomes), raised_error.phase or "call")
            groups[key]["calls"] += 1
        raised = sum(g["calls"] for g in groups.values())
        for group in groups.values():
            # "every call" means every call that did not raise something else (a shape check's
            # ValueError before the typo's line is the contract, not a second cause)
            group["total_calls"] = len(outcomes) - raised + group["calls"]
        causes = sorted(groups.values(), key=lambda c: -c["calls"])
        _attribute(report.checks, causes)
        # an exception no failed check mentions (a ValueError the contract asks for) is no cause
        causes = [c for c in causes if c["checks"]][:MAX_ROOT_CAUSES]
    for cause in causes:
        cause["headline"] = _headline(cause)
        cause["checks_line"] = _checks_line(cause["checks"], [c.name for c in report.checks])
    owner = {name: i for i, cause in enumerate(causes, 1) for name in cause["checks"]}
    details = [
        {"check": c.name, "text": _brief(c.message), "cause": owner.get(c.name)} for c in report.checks if not c.passed
    ]
    message, next_step = report.message, _next_step(report, causes, details)
    near = suggest(function, top_level_functions(source)) if report.verdict == "missing_function" and function else None
    if near:
        message = f"Your file defines {near}() but not {function}(): did you mean {function}?"
        next_step = f"Rename {near}() to {function}()."
    passed = sum(1 for c in report.checks if c.passed)
    summary = {
        "verdict": report.verdict,
        "score": report.score,
        "checks_passed": passed,
        "checks_total": len(report.checks),
        "headline": _cap((message or "").split("\n", 1)[0], MAX_MESSAGE),
        "next_step": next_step,
        "details": details,
    }
    named = getattr(report, "diagnosis", None) or mistakes_from_checks(report.checks)
    return {"root_causes": causes, "diagnosis": diagnosis_data(named), "summary": summary}


def attach(
    report: Any, source: str, outcomes: Mapping[str, Any] | None, function: str, *, import_error: Any = None
) -> None:
    """The judge's hook: put :func:`from_run`'s data on ``report.feedback``; a near-miss
    function name also goes into the missing_function verdict's message."""
    try:
        report.feedback = from_run(report, source, outcomes, function, import_error=import_error)
    except Exception:  # feedback is a reading aid: it must never cost a learner the verdict
        log.exception("feedback could not be built; the verdict is stored without it")
        report.feedback = None
        return
    if report.verdict == "missing_function":
        near = suggest(function, top_level_functions(source))
        if near:
            report.message += f" Did you mean {function}? Your file defines {near}()."


@dataclasses.dataclass(frozen=True)
class _Error:
    type: str
    message: str
    traceback: str
    phase: str = "call"


def _import_error(error: Any) -> _Error | None:
    """The import-time error's fields, believed only when each is text (the jail's output is
    untrusted: ``sandbox.verdicts`` validated them, and this checks again rather than trust a
    caller); None when there is none or a field is off. Capped by :func:`_root_cause`."""
    kind, message, traceback = (getattr(error, name, None) for name in ("type", "message", "traceback"))
    if not (isinstance(kind, str) and isinstance(message, str) and isinstance(traceback, str)):
        return None
    return _Error(kind, message, traceback)


# -- the storing step -------------------------------------------------------------------------


def safe_filename(name: str | None) -> str | None:
    """The base name of a file a learner sent, fit to show (no folders, no control characters)."""
    if not name:
        return None
    base = re.split(r"[\\/]", name)[-1]
    base = "".join(ch for ch in base if ch.isprintable() and ch not in '"<>')
    base = base.strip()[:MAX_FILENAME]
    return base or None


def rename_in_text(text: str, filename: str | None) -> str:
    """``File "submission.py"`` -> ``File "typo.py"`` in a message or traceback."""
    if not filename or filename == JAIL_FILENAME:
        return text
    return text.replace(f'File "{JAIL_FILENAME}"', f'File "{filename}"')


def _as_dict(item: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return dataclasses.asdict(item)
    if isinstance(item, Mapping):
        return dict(item)
    return {k: getattr(item, k, None) for k in ("mistake_id", "title", "fix", "checks")}


def diagnosis_data(diagnosis: Iterable[Any] | None) -> list[dict[str, Any]]:
    """The report's named mistakes as ``{"mistake_id", "title", "fix", "checks"}`` dicts (an
    entry stored before the key was ``mistake_id`` says ``misconception``: read as the id)."""
    out: list[dict[str, Any]] = []
    for item in list(diagnosis or [])[:MAX_DIAGNOSIS]:
        d = _as_dict(item)
        mistake_id = d.get("mistake_id") or d.get("misconception")
        out.append(
            {
                "mistake_id": _cap(str(mistake_id or ""), MAX_MESSAGE),
                "title": _cap(str(d.get("title") or mistake_id or ""), MAX_MESSAGE),
                "fix": _cap(str(d.get("fix") or ""), MAX_MESSAGE) or None,
                "checks": [str(c)[:128] for c in list(d.get("checks") or [])[:50]],
            }
        )
    return out


def for_learner(
    feedback: Mapping[str, Any] | None, filename: str | None, diagnosis: Iterable[Any] | None = None
) -> dict[str, Any] | None:
    """The stored form: the learner's file name everywhere, the diagnosis in, the next step
    taken from the first named mistake when there is one. None when there is no feedback."""
    if feedback is None:
        return None
    name = safe_filename(filename) or JAIL_FILENAME
    causes = []
    for cause in feedback.get("root_causes") or []:
        cause = dict(cause)
        if cause.get("location"):
            cause["location"] = {**cause["location"], "file": name}
        cause["traceback"] = rename_in_text(str(cause.get("traceback") or ""), name)
        causes.append(cause)
    summary = dict(feedback.get("summary") or {})
    mistakes = diagnosis_data(diagnosis) or list(feedback.get("diagnosis") or [])
    if mistakes and mistakes[0].get("fix") and not causes:
        summary["next_step"] = f"Fix mistake 1 first: {mistakes[0]['fix']}"
    return {"root_causes": causes, "diagnosis": mistakes, "summary": summary}
