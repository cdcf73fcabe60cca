"""Wire types of the LTI API (``/api/v1/lti/...``, admins only)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class PlatformCreate(BaseModel):
    """``POST /api/v1/lti/platforms``: what the LMS shows for the tool (docs/lti.md)."""

    name: str = Field(min_length=1, max_length=200, examples=["Canvas at Example U"])
    issuer: str = Field(min_length=1, max_length=2000, examples=["https://canvas.instructure.com"])
    client_id: str = Field(min_length=1, max_length=255, examples=["10000000000042"])
    auth_login_url: str = Field(max_length=2000, examples=["https://sso.canvaslms.com/api/lti/authorize_redirect"])
    auth_token_url: str = Field(max_length=2000, examples=["https://sso.canvaslms.com/login/oauth2/token"])
    jwks_url: str = Field(max_length=2000, examples=["https://sso.canvaslms.com/api/lti/security/jwks"])
    deployment_ids: list[str] = Field(default_factory=list, max_length=50)


class PlatformPublic(BaseModel):
    """A registration as listed."""

    id: int
    name: str
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    jwks_url: str
    deployment_ids: list[str]


class DeploymentCreate(BaseModel):
    """``POST /api/v1/lti/platforms/{id}/deployments``."""

    deployment_id: str = Field(min_length=1, max_length=255)
