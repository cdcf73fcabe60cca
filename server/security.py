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
