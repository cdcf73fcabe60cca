"""Wire types for users."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from server.models import Role


class UserPublic(BaseModel):
    """What ``GET /me`` answers: never a token or its hash."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    display_name: str
    role: Role
