"""The tool's own signing keys: generated here, stored encrypted, rotated, published, used.

The tool signs two things with RS256: the client assertion that buys an OAuth2 access token for
NRPS and AGS, and a deep-linking response. Platforms verify them with ``/lti/jwks``.

- :func:`signing_key` is the newest unretired key, made on first use (2048-bit RSA, ``kid`` the
  JWK thumbprint); :func:`rotate` makes a new one and retires the old.
- :func:`published_keys` is the public half of the signing key and of keys retired less than
  :data:`RETIRED_KEYS_PUBLISHED_FOR` ago, so a platform holding a cached set still verifies
  what was signed just before a rotation.
- The private JWK is stored as a compact JWE (``dir``, A256GCM) under a key derived from
  SECRET_KEY with HKDF, so a copy of the database alone cannot sign as the tool. Changing
  SECRET_KEY makes the stored keys unreadable: :func:`signing_key` then says to rotate.

Every key and signature operation is joserfc's; nothing here parses or signs by hand.
"""

from __future__ import annotations

import json
import secrets
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


def _open(row: LtiToolKey, secret: bytes) -> RSAKey:
    try:
        plain = jwe.decrypt_compact(row.private_key, _wrapping_key(secret)).plaintext
    except (JoseError, ValueError):
        raise ToolKeyUnreadable() from None
    if plain is None:
        raise ToolKeyUnreadable()
    return RSAKey.import_key(json.loads(plain))


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
    """``/lti/jwks``: the public JWKs of the signing key and the recently retired ones."""
    signing_key(session, secret)  # a fresh installation publishes a key before its first launch
    since = (now or utcnow()) - RETIRED_KEYS_PUBLISHED_FOR
    rows = session.scalars(
        select(LtiToolKey)
        .where((LtiToolKey.retired_at.is_(None)) | (LtiToolKey.retired_at > since))
        .order_by(LtiToolKey.id.desc())
    )
    keys = []
    for row in rows:
        public = _open(row, secret).as_dict(private=False)
        keys.append({**public, "use": "sig", "alg": ALGORITHM, "kid": row.kid})
    return {"keys": keys}


def sign(session: Session, secret: bytes, claims: dict[str, Any]) -> str:
    """``claims`` signed with the signing key (RS256, its ``kid`` in the header), with ``iat``,
    ``exp`` (:data:`SIGNED_SECONDS`) and a fresh ``jti`` added."""
    key = signing_key(session, secret)
    now = int(time.time())
    body = {**claims, "iat": now, "exp": now + SIGNED_SECONDS, "jti": secrets.token_urlsafe(16)}
    return jwt.encode({"alg": ALGORITHM, "kid": key.kid, "typ": "JWT"}, body, key, algorithms=[ALGORITHM])
