"""Winnowing (Schleimer, Wilkerson and Aiken, SIGMOD 2003) over normalised tokens.

Every run of ``K`` consecutive tokens (a k-gram) is hashed; in every window of ``W``
consecutive k-gram hashes the smallest is kept (the rightmost on a tie), so any match of at
least ``K + W - 1`` tokens shares a fingerprint, and no match shorter than ``K`` does.

Hashes are stable across processes and machines (a keyed-free BLAKE2b per token and a
polynomial over them): stored results and a recomputation agree. Python's own ``hash()`` of
a string is salted per process and would not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from server.similarity.normalize import Token

#: Tokens per k-gram: a short statement (``V = torch.exp(V - V)`` is 11 tokens with its end).
K = 10
#: Window: a shared run of ``K + W - 1`` = 14 tokens is always seen.
W = 5

_MOD = (1 << 61) - 1
_BASE = 1_000_003


@lru_cache(maxsize=65_536)
def _token_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big") % _MOD


def kgram_hashes(tokens: Sequence[Token], k: int = K) -> list[int]:
    """The hash of every k-gram, in order (empty when there are fewer than ``k`` tokens)."""
    values = [_token_hash(t.text) for t in tokens]
    if len(values) < k:
        return []
    top = pow(_BASE, k - 1, _MOD)
    current = 0
    for value in values[:k]:
        current = (current * _BASE + value) % _MOD
    out = [current]
    for i in range(k, len(values)):
        current = ((current - values[i - k] * top) * _BASE + values[i]) % _MOD
        out.append(current)
    return out


def winnow(hashes: Sequence[int], w: int = W) -> list[tuple[int, int]]:
    """``(hash, position)`` of the fingerprints: each window's minimum, taken once."""
    if not hashes:
        return []
    if len(hashes) <= w:
        position = min(range(len(hashes)), key=lambda i: (hashes[i], -i))
        return [(hashes[position], position)]
    chosen: list[tuple[int, int]] = []
    last = -1
    for start in range(len(hashes) - w + 1):
        window = hashes[start : start + w]
        smallest = min(window)
        # Rightmost minimum: a run of equal hashes is represented once.
        position = start + w - 1 - window[::-1].index(smallest)
        if position != last:
            chosen.append((smallest, position))
            last = position
    return chosen


#: A statement of at least this many tokens is also a fingerprint of its own.
MIN_STATEMENT = 6
_BOUNDARIES = frozenset((";", "{", "}"))
# Statement hashes are salted so that they never equal a k-gram's.
_STATEMENT_SALT = _token_hash("\x00statement")


@dataclass(frozen=True, slots=True)
class Fingerprinted:
    """One document's fingerprints: hash -> the (first, last) token of each place it
    stands for, and each token's lines (to map a match back to the source)."""

    positions: dict[int, list[tuple[int, int]]]
    lines: tuple[tuple[int, int], ...]

    def span(self, place: tuple[int, int]) -> tuple[int, int]:
        """First and last source line of the tokens ``place`` covers."""
        return self.lines[place[0]][0], self.lines[place[1]][1]


def statement_hashes(tokens: Sequence[Token]) -> list[tuple[int, int, int]]:
    """``(hash, first, last)`` of every statement of at least ``MIN_STATEMENT`` tokens
    (the tokens between two of ``;``, ``{``, ``}``). Reordering independent lines keeps
    each one whole, so these still match where a k-gram across two lines no longer does."""
    out = []
    start = 0
    for i, token in enumerate([*tokens, Token(";", 0, 0)]):
        if token.text in _BOUNDARIES:
            if i - start >= MIN_STATEMENT:
                value = _STATEMENT_SALT
                for t in tokens[start:i]:
                    value = (value * _BASE + _token_hash(t.text)) % _MOD
                out.append((value, start, i - 1))
            start = i + 1
    return out


def fingerprint(tokens: Sequence[Token]) -> Fingerprinted:
    """Winnowed k-gram fingerprints plus statement fingerprints of one normalised document."""
    positions: dict[int, list[tuple[int, int]]] = {}
    last = len(tokens) - 1
    for value, position in winnow(kgram_hashes(tokens)):
        positions.setdefault(value, []).append((position, min(position + K - 1, last)))
    for value, first, end in statement_hashes(tokens):
        positions.setdefault(value, []).append((first, end))
    return Fingerprinted(positions, tuple((t.first_line, t.last_line) for t in tokens))
