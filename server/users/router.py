"""``/me``: who the token belongs to."""

from __future__ import annotations

from fastapi import APIRouter

from server.deps import CurrentUser
from server.users.schemas import UserPublic

router = APIRouter(tags=["users"])


@router.get("/me", response_model=UserPublic)
def read_me(user: CurrentUser) -> UserPublic:
    """The authenticated user."""
    return UserPublic.model_validate(user)
