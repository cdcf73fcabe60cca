"""The tool's own signing keys: generated here, stored encrypted, rotated, published, used.

The tool signs two things with RS256: the client assertion that buys an OAuth2 access token for
NRPS and AGS, and a deep-linking response. Platforms verify them with ``/lti/jwks``.

- :func:`signing_key` is the newest unretired key, made on first use (2048-bit RSA, ``kid`` the
  JWK thumbprint); :func:`rotate` makes a new one and retires the old.
- :func:`published_keys` is the public half of the signing key and of keys retired less than
  :data:`RETIRED_KEYS_PUBLISHED_FOR` ago, so a platform holding a cached set still verifies
  what was signed just before a rotation. It opens no private key per request (``/lti/jwks``
  is anonymous, and a private key's import is a full RSA check): each row's public JWK is
  derived once per process from the sealed key's public members and cached by the row's id
  and its sealed blob's digest.
- The private JWK is stored as a compact JWE (``dir``, A256GCM) under a key derived from
  SECRET_KEY with HKDF, so a copy of the database alone cannot sign as the tool. Changing
  SECRET_KEY makes the stored keys unreadable: :func:`signing_key` then says to rotate.

Every key and signature operation is joserfc's; nothing here parses or signs by hand.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from datetime import datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from joserfc import jwe, jwt
from joserfc.errors import JoseError
from joserfc.jwk import OctKey, RSAKey
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.lti.errors import ToolKeyUnreadable
from server.models import LtiToolKey, utcnow

ALGORITHM = "RS256"
KEY_BITS = 2048
RETIRED_KEYS_PUBLISHED_FOR = timedelta(days=2)
#: How long what the tool signs is valid (a client assertion, a deep-linking response).
SIGNED_SECONDS = 300
_HKDF_INFO = b"ppo-grader/lti-tool-key/v1"


def _wrapping_key(secret: bytes) -> OctKey:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_HKDF_INFO).derive(secret)
    return OctKey.import_key(derived)


def _seal(key: RSAKey, secret: bytes) -> str:
    plain = json.dumps(key.as_dict(private=True)).encode()
    return jwe.encrypt_compact({"alg": "dir", "enc": "A256GCM"}, plain, _wrapping_key(secret))


def _unsealed(row: LtiToolKey, secret: bytes) -> dict[str, Any]:
    """The row's private JWK as stored (decrypted, not imported); ``ToolKeyUnreadable`` when
    SECRET_KEY does not open it."""
    try:
        plain = jwe.decrypt_compact(row.private_key, _wrapping_key(secret)).plaintext
        members = json.loads(plain) if plain is not None else None
    except (JoseError, ValueError):
        raise ToolKeyUnreadable() from None
    if not isinstance(members, dict):
        raise ToolKeyUnreadable()
    return members


#: Private keys already opened in this process, by (key row id, SHA-256 of its sealed blob,
#: SHA-256 of the secret that opened it): importing one is a full RSA key check (~40-100 ms of
#: CPU), and every client assertion and deep-linking answer is signed (a grade sync of a course
#: signs one per token request). A blob replaced, or another SECRET_KEY, opens anew.
_OPENED: dict[tuple[int, str, str], RSAKey] = {}
_OPENED_KEPT = 16
#: Guards both caches (:data:`_OPENED`, :data:`_PUBLIC`): requests run on many threads.
_KEYS_LOCK = threading.Lock()


def _open(row: LtiToolKey, secret: bytes) -> RSAKey:
    cache_key = (row.id, hashlib.sha256(row.private_key.encode()).hexdigest(), hashlib.sha256(secret).hexdigest())
    with _KEYS_LOCK:
        found = _OPENED.get(cache_key)
    if found is not None:
        return found
    key = RSAKey.import_key(_unsealed(row, secret))
    with _KEYS_LOCK:
        while len(_OPENED) >= _OPENED_KEPT:
            del _OPENED[next(iter(_OPENED))]  # the oldest: a key long rotated out
        _OPENED[cache_key] = key
    return key


#: Public JWKs already derived in this process, by (key row id, SHA-256 of its sealed blob):
#: the row and what it seals, so a blob replaced (another database, a restore) is derived
#: anew. ``/lti/jwks`` is anonymous; importing a private key is a full RSA key check (~0.1 s
#: of CPU), so it opens none per request. A few entries per key ever made by this process.
_PUBLIC: dict[tuple[int, str], dict[str, Any]] = {}
_PUBLIC_KEPT = 64


def _public_jwk(row: LtiToolKey, secret: bytes) -> dict[str, Any]:
    """The row's public JWK as published (``use``, ``alg``, ``kid`` set): derived once per
    process from the sealed key's public members (decrypted, never imported as a private key),
    then cached (:data:`_PUBLIC`)."""
    cache_key = (row.id, hashlib.sha256(row.private_key.encode()).hexdigest())
    with _KEYS_LOCK:
        found = _PUBLIC.get(cache_key)
    if found is not None:
        return dict(found)  # a copy: the cached one stays as derived
    members = _unsealed(row, secret)
    try:
        public = RSAKey.import_key({name: members[name] for name in ("kty", "n", "e")}).as_dict(private=False)
    except (JoseError, ValueError, TypeError, KeyError):
        raise ToolKeyUnreadable() from None
    found = {**public, "use": "sig", "alg": ALGORITHM, "kid": row.kid}
    with _KEYS_LOCK:
        while len(_PUBLIC) >= _PUBLIC_KEPT:
            del _PUBLIC[next(iter(_PUBLIC))]  # the oldest: a key long rotated out
        _PUBLIC[cache_key] = found
    return dict(found)


def _new_key(session: Session, secret: bytes) -> LtiToolKey:
    key = RSAKey.generate_key(KEY_BITS, parameters={"use": "sig", "alg": ALGORITHM}, auto_kid=True)
    row = LtiToolKey(kid=str(key.kid), private_key=_seal(key, secret))
    session.add(row)
    session.flush()
    return row


def _current(session: Session) -> LtiToolKey | None:
    return session.scalar(
        select(LtiToolKey).where(LtiToolKey.retired_at.is_(None)).order_by(LtiToolKey.id.desc()).limit(1)
    )


def signing_key(session: Session, secret: bytes) -> RSAKey:
    """The key the tool signs with now (made on first use; the caller commits)."""
    row = _current(session) or _new_key(session, secret)
    return _open(row, secret)


def rotate(session: Session, secret: bytes) -> tuple[str, list[str]]:
    """A new signing key; every older unretired key retired now. Returns (new kid, retired kids)."""
    now = utcnow()
    retired = list(session.scalars(select(LtiToolKey).where(LtiToolKey.retired_at.is_(None))))
    for row in retired:
        row.retired_at = now
    new = _new_key(session, secret)
    return new.kid, [row.kid for row in retired]


def published_keys(session: Session, secret: bytes, now: datetime | None = None) -> dict[str, Any]:
    """``/lti/jwks``: the public JWKs of the signing key and the recently retired ones (no
    private key opened: :func:`_public_jwk`; the caller commits a key made here)."""
    if _current(session) is None:  # a fresh installation publishes a key before its first launch
        _new_key(session, secret)
    since = (now or utcnow()) - RETIRED_KEYS_PUBLISHED_FOR
    rows = session.scalars(
        select(LtiToolKey)
        .where((LtiToolKey.retired_at.is_(None)) | (LtiToolKey.retired_at > since))
        .order_by(LtiToolKey.id.desc())
    )
    return {"keys": [_public_jwk(row, secret) for row in rows]}


def sign(session: Session, secret: bytes, claims: dict[str, Any]) -> str:
    """``claims`` signed with the signing key (RS256, its ``kid`` in the header), with ``iat``,
    ``exp`` (:data:`SIGNED_SECONDS`) and a fresh ``jti`` added."""
    key = signing_key(session, secret)
    now = int(time.time())
    body = {**claims, "iat": now, "exp": now + SIGNED_SECONDS, "jti": secrets.token_urlsafe(16)}
    return jwt.encode({"alg": ALGORITHM, "kid": key.kid, "typ": "JWT"}, body, key, algorithms=[ALGORITHM])
