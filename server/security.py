"""API tokens: generated once, shown once, stored as HMAC-SHA256 with the secret key as pepper."""

from __future__ import annotations

import hashlib
import hmac
import secrets

TOKEN_PREFIX = "ppg_"
# Enough of the token to tell tokens apart in a listing, far too little to guess the rest.
DISPLAY_PREFIX_LENGTH = 12


def new_token() -> str:
    """A fresh random bearer token (~256 bits of entropy)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str, pepper: bytes) -> str:
    """The value stored and looked up; without the pepper a leaked table yields nothing."""
    return hmac.new(pepper, token.encode(), hashlib.sha256).hexdigest()


def display_prefix(token: str) -> str:
    """The part of a token safe to show in listings."""
    return token[:DISPLAY_PREFIX_LENGTH]


def pseudonym(user_id: int, secret: bytes, course_id: int) -> str:
    """A stable, unguessable public name for a user in one course: HMAC of the course id and
    the user id under the secret key.

    The same user always gets the same pseudonym in a course (while the secret key is
    unchanged), a different one in each course (a classmate of two courses cannot join their
    boards), and without the key nobody can map a pseudonym back to an id.
    """
    digest = hmac.new(secret, f"pseudonym:{course_id}:{user_id}".encode(), hashlib.sha256).hexdigest()
    return f"{_ADJECTIVES[int(digest[:8], 16) % len(_ADJECTIVES)]}-{_ANIMALS[int(digest[8:16], 16) % len(_ANIMALS)]}-{digest[16:20]}"


_ADJECTIVES = (
    "amber",
    "brave",
    "calm",
    "daring",
    "eager",
    "fuzzy",
    "gentle",
    "happy",
    "icy",
    "jolly",
    "keen",
    "lucky",
    "mellow",
    "nimble",
    "olive",
    "proud",
    "quick",
    "rapid",
    "silent",
    "tidy",
)
_ANIMALS = (
    "otter",
    "badger",
    "crane",
    "dolphin",
    "falcon",
    "gecko",
    "heron",
    "ibis",
    "jackal",
    "koala",
    "lemur",
    "marmot",
    "newt",
    "osprey",
    "panda",
    "quokka",
    "raven",
    "seal",
    "tapir",
    "walrus",
)
