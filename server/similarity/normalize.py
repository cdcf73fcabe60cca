"""Learner source -> a list of normalised tokens, so that renaming, comments, docstrings and
layout do not hide a copy.

Trusted side, but the input is the learner's text: it is only tokenized (``tokenize``) and
parsed (``ast``), never executed. Anything that does not tokenize or parse is still
normalised as far as it goes; nothing here raises on a learner's file.

What is kept and what is replaced:

- names the file *defines* (assignment and loop targets, parameters, function and class
  names, import aliases, ``with``/``except``/walrus/match targets, ``global``) become ``V``:
  renaming a variable changes nothing;
- names the file only uses (``torch``, ``len``, an attribute after a dot, a keyword
  argument such as ``dim=``) stay as written: they are the API, and carry the content;
- string literals become ``S``; a string that stands alone as a statement (a docstring) is
  dropped, as are comments, blank lines and the indentation's width;
- numbers and operators stay; ``NEWLINE``/``INDENT``/``DEDENT`` become ``;``, ``{``, ``}``.

Each token keeps the first and last line it came from, so that a match can be shown in
the original file.
"""

from __future__ import annotations

import ast
import io
import keyword
import tokenize
from dataclasses import dataclass

#: A longer file is cut here: similarity is about the learner's function, and this bounds
#: the work one hostile upload can cause (sources are capped at 64 KiB anyway).
MAX_TOKENS = 20_000

RENAMED = "V"
STRING = "S"

_LAYOUT = {tokenize.NEWLINE: ";", tokenize.INDENT: "{", tokenize.DEDENT: "}"}
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
# Python 3.12 splits f-strings into these; older versions give one STRING token.
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


@dataclass(frozen=True, slots=True)
class Token:
    """One normalised token and the lines (1-based, inclusive) of the source it stands for."""

    text: str
    first_line: int
    last_line: int


def _store_or_del(node: ast.Name) -> str | None:
    return node.id if isinstance(node.ctx, ast.Store | ast.Del) else None


def _optional_name(node: ast.AST) -> str | None:
    return getattr(node, "name", None) or getattr(node, "rest", None)


# One lookup per node type instead of a chain of isinstance tests: this walk is most of the
# cost of a run over a large course.
_BINDERS = {
    ast.Name: _store_or_del,
    ast.arg: lambda node: node.arg,
    ast.FunctionDef: lambda node: node.name,
    ast.AsyncFunctionDef: lambda node: node.name,
    ast.ClassDef: lambda node: node.name,
    ast.alias: lambda node: node.asname,
    ast.ExceptHandler: lambda node: node.name,
    ast.MatchAs: _optional_name,
    ast.MatchStar: _optional_name,
    ast.MatchMapping: _optional_name,
}


def defined_names(source: str) -> set[str] | None:
    """Every name the module binds anywhere, or None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        kind = type(node)
        if kind in _BINDERS:
            name = _BINDERS[kind](node)
            if name:
                names.add(name)
        elif kind is ast.Global or kind is ast.Nonlocal:
            names.update(node.names)  # type: ignore[attr-defined]
    return names


def _raw_tokens(source: str) -> list[tokenize.TokenInfo]:
    """The tokens up to the first error (an unclosed bracket, a bad dedent...)."""
    found: list[tokenize.TokenInfo] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            found.append(tok)
            if len(found) > 4 * MAX_TOKENS:  # comments and NLs included; enough to fill MAX_TOKENS
                break
    except (tokenize.TokenError, IndentationError, SyntaxError, ValueError, RecursionError):
        pass
    return found


def normalize(source: str) -> list[Token]:
    """The normalised tokens of ``source`` (at most ``MAX_TOKENS``)."""
    names = defined_names(source)
    raw = _raw_tokens(source)
    out: list[Token] = []
    previous = ""  # the last significant raw token's text, to see attribute access
    fstring_depth = 0
    fstring_first = 0
    after_docstring = False
    resume = 0  # the first raw token not yet visited (a dropped docstring's run is skipped whole)
    for index, tok in enumerate(raw):
        if index < resume:
            continue
        kind = tok.type
        if kind in _SKIPPED:
            continue
        if after_docstring:
            # The dropped docstring's own end of statement goes with it.
            after_docstring = False
            if kind == tokenize.NEWLINE:
                continue
        if _FSTRING_START is not None and kind == _FSTRING_START:
            if fstring_depth == 0:
                fstring_first = tok.start[0]
            fstring_depth += 1
            continue
        if fstring_depth:
            if kind == _FSTRING_END:
                fstring_depth -= 1
                if fstring_depth == 0:
                    out.append(Token(STRING, fstring_first, tok.end[0]))
                    previous = STRING
            continue
        if kind == tokenize.STRING:
            end = _docstring_end(raw, index, out)
            if end is not None:
                # Every literal of the docstring (adjacent ones included) is dropped at once:
                # each raw token is visited once, so the work is linear in the raw tokens,
                # which ``_raw_tokens`` caps at 4 x MAX_TOKENS (dropped ones count there).
                resume = end
                after_docstring = True
                continue
            # Adjacent literals ("a" "b") are one string.
            if out and out[-1].text == STRING and previous == STRING:
                out[-1] = Token(STRING, out[-1].first_line, tok.end[0])
                continue
            text = STRING
        elif kind in _LAYOUT:
            text = _LAYOUT[kind]
        elif kind == tokenize.NAME:
            text = _name(tok.string, previous, names)
        else:
            text = tok.string
        out.append(Token(text, tok.start[0], tok.end[0]))
        previous = text if kind != tokenize.NAME else tok.string
        if len(out) >= MAX_TOKENS:
            break
    return out


def _name(name: str, previous: str, defined: set[str] | None) -> str:
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or previous == ".":
        return name
    if defined is None:
        # Unparsable file: we cannot tell its own names from the API's, so rename all of
        # them (its matches are then weaker, never wrong).
        return RENAMED
    return RENAMED if name in defined else name


def _docstring_end(raw: list[tokenize.TokenInfo], index: int, emitted: list[Token]) -> int | None:
    """Where a docstring starting at ``raw[index]`` ends, or None when that string is no
    docstring. A docstring is a string alone on its statement: what comes before is a statement
    boundary (or nothing) and what comes after, past adjacent literals, comments and blank lines,
    ends the statement. The answer is the index of that end (its NEWLINE or ENDMARKER, or
    ``len(raw)`` when the tokens stop first): the caller skips the whole run up to it, so each
    raw token is looked at once (rescanning the run for each literal was quadratic: review 11)."""
    if emitted and emitted[-1].text not in (";", "{", "}"):
        return None
    for position in range(index + 1, len(raw)):
        kind = raw[position].type
        if kind in (tokenize.COMMENT, tokenize.NL, tokenize.STRING):  # implicit concatenation: look past it
            continue
        return position if kind in (tokenize.NEWLINE, tokenize.ENDMARKER) else None
    return len(raw)
