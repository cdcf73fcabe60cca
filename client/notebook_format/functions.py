"""Which exercise a learner's source answers, by the functions it defines, without running it.

Shared by the client (``ppo-submit FILE``, a notebook) and the server (the dashboard's upload),
so a file that names no exercise, or several, or a near miss, gets the same sentence on both.
Bounded: names come from the learner's file.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence

from .errors import SourceError

#: Fallback for files ``ast`` cannot parse: top-level ``def`` lines.
_DEF_LINE = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
#: A notebook file's suffix, as Jupyter names them.
NOTEBOOK_SUFFIX = ".ipynb"
#: An exercise as the catalogue lists it (``GET /exercises``): at least its ``slug`` and ``function``.
Exercises = Sequence[Mapping[str, object]]


#: The typo search is bounded, since names come from the learner's file: a name longer than
#: this is neither looked up nor suggested (a typo'd identifier is short), and at most
#: :data:`MAX_TYPO_CANDIDATES` candidates are compared. ``difflib``'s ratio is quadratic in the
#: names' length; bounded so, one search costs at most 500 comparisons of 64-character names.
MAX_TYPO_NAME_CHARS = 64
MAX_TYPO_CANDIDATES = 500


def suggest(name: str, candidates: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The candidate closest to ``name`` when it is close enough to be a typo (``gea`` -> ``gae``).

    Bounded (:data:`MAX_TYPO_NAME_CHARS`, :data:`MAX_TYPO_CANDIDATES`): the cheap length and
    letter-count ratios (``real_quick_ratio``, ``quick_ratio``) rule candidates out before the
    full one is computed."""
    if len(name) > MAX_TYPO_NAME_CHARS:
        return None
    pool: list[str] = []
    for candidate in dict.fromkeys(candidates):
        if candidate != name and len(candidate) <= MAX_TYPO_NAME_CHARS:
            pool.append(candidate)
            if len(pool) >= MAX_TYPO_CANDIDATES:
                break
    best, best_ratio = None, cutoff
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(name)
    for candidate in pool:
        matcher.set_seq1(candidate)
        if matcher.real_quick_ratio() >= best_ratio and matcher.quick_ratio() >= best_ratio:
            ratio = matcher.ratio()
            if ratio > best_ratio or (ratio == best_ratio and best is None):
                best, best_ratio = candidate, ratio
    return best


def defined_functions(source: str) -> tuple[list[str], int | None]:
    """Names of the top-level functions ``source`` defines, in order, without duplicates.

    Returns ``(names, syntax_error_line)``: when ``ast`` cannot parse the source the names
    come from a regex over ``def`` lines at column 0 and the line of the error is given.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        names = _DEF_LINE.findall(source)
        return list(dict.fromkeys(names)), exc.lineno or 0
    except (ValueError, RecursionError, MemoryError):
        # NUL bytes, or an expression nested too deep for the parser (``1+1+...``, thousands
        # of terms): the ``def`` lines still say which exercise it is, and the jail's run
        # says what is wrong with the rest, as it does for the same source sent to the API.
        return list(dict.fromkeys(_DEF_LINE.findall(source))), 0
    names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    return list(dict.fromkeys(names)), None


#: How the CLI's messages say to name the exercise ({slug}: one in particular).
CHOOSE_ON_COMMAND_LINE = ("pass --exercise SLUG", "pass --exercise {slug}")


def match_functions(
    names: Sequence[str],
    exercises: Exercises,
    *,
    filename: str,
    syntax_error: str | None = None,
    choose: tuple[str, str] = CHOOSE_ON_COMMAND_LINE,
) -> str:
    """The slug of the one exercise whose ``function`` is among ``names`` (top-level functions).

    ``syntax_error`` says where the source failed to parse (``line 3``, ``cell 4, line 3``),
    when it did. Raises ``SourceError`` (telling the user how to name the exercise: ``choose``,
    any and one in particular) when none or several match.
    """
    choose_any, choose_one = choose
    defined = set(names)
    matches = [ex for ex in exercises if ex.get("function") in defined]
    if len(matches) == 1:
        return str(matches[0]["slug"])
    if matches:
        listed = ", ".join(f"{ex.get('slug')} ({ex.get('function')})" for ex in matches)
        raise SourceError(f"{filename} defines functions of several exercises: {listed}; {choose_any}")
    if syntax_error is not None and not names:
        raise SourceError(
            f"{filename} has a syntax error ({syntax_error}) and no top-level def to recognise; "
            f"{choose_any} to submit it anyway"
        )
    functions = {str(ex.get("function")): ex for ex in exercises}
    for name in names:
        near = suggest(name, functions)
        if near:
            slug = functions[near].get("slug")
            raise SourceError(
                f"{filename} defines {name}(), not {near}(): did you mean {near}? "
                f"Rename it to submit for {slug} (or {choose_one.format(slug=slug)})"
            )
    wanted = ", ".join(sorted(functions)) or "none"
    see = " (see `ppo-submit exercises`)" if choose == CHOOSE_ON_COMMAND_LINE else ""
    raise SourceError(f"{filename} defines none of the exercise functions ({wanted}); {choose_any}{see}")
