"""LTI 1.3 claim names and role URIs, and the one rule that reads a launch's roles (pure).

Roles (LTI 1.3 §A.2): context roles say what someone is in *this* LMS course; institution and
system roles say what they are in the LMS as a whole. Only the context roles decide, here:

- staff of the course (they land on its dashboard and teach it): the context roles Instructor
  (with its sub-role TeachingAssistant), ContentDeveloper and Administrator;
- a learner: the context role Learner (any of its sub-roles);
- anyone else (a Mentor, someone with only institution or system roles, an LMS administrator
  included, no role at all) is not in the course, and the launch is refused.

Institution and system roles never grant anything in a course: Canvas sends every account admin
role (a student worker on a department's help desk) as the institution role ``Administrator``,
and such a person who is a learner of a course is a learner there. An LMS administrator who
should teach a course is given a role in it by the LMS.

The deprecated short forms (``Instructor`` for the context role) are read as the full URIs.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
MESSAGE_TYPE = LTI + "message_type"
VERSION = LTI + "version"
DEPLOYMENT_ID = LTI + "deployment_id"
TARGET_LINK_URI = LTI + "target_link_uri"
RESOURCE_LINK = LTI + "resource_link"
ROLES = LTI + "roles"
CONTEXT = LTI + "context"
CUSTOM = LTI + "custom"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DEEP_LINKING_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
DEEP_LINKING_DATA = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
CONTENT_ITEMS = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
DL_MESSAGE = "https://purl.imsglobal.org/spec/lti-dl/claim/msg"

LTI_VERSION = "1.3.0"
RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"
DEEP_LINKING_REQUEST = "LtiDeepLinkingRequest"
DEEP_LINKING_RESPONSE = "LtiDeepLinkingResponse"
#: The one content item type a deep-linking answer holds (an exercise as an LTI link).
RESOURCE_LINK_TYPE = "ltiResourceLink"
MESSAGE_TYPES = (RESOURCE_LINK_REQUEST, DEEP_LINKING_REQUEST)

#: The OAuth2 scopes the tool asks for (NRPS read, AGS line items, scores, results).
SCOPE_MEMBERSHIPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
SCOPE_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCOPE_LINEITEM_READ = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCOPE_RESULT_READ = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"

#: The custom parameter a deep-linked resource carries: which exercise it opens.
CUSTOM_EXERCISE = "exercise"
#: The tag of every line item the tool creates (with the exercise slug as resource id).
LINE_ITEM_TAG = "ppo-grader"

_MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
_TEACHING_ASSISTANT = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
_LEARNER_SUBROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership/Learner#"

STAFF_CONTEXT_ROLES = frozenset({"Instructor", "ContentDeveloper", "Administrator", "TeachingAssistant"})
#: Most roles read from one launch or one roster member (more are ignored).
MAX_ROLES = 50
MAX_ROLE_CHARS = 200


class Standing(StrEnum):
    """What a set of LTI roles makes someone in the launching course."""

    STAFF = "staff"
    LEARNER = "learner"
    NONE = "none"


def context_role(uri: str) -> str | None:
    """The context role a role URI names (``Instructor``, ``Learner``, ...); None for an
    institution or system role, or anything else."""
    if uri.startswith(_MEMBERSHIP):
        return uri.removeprefix(_MEMBERSHIP)
    if uri == _TEACHING_ASSISTANT:
        return "TeachingAssistant"
    if uri.startswith(_LEARNER_SUBROLE):
        return "Learner"
    if "/" not in uri and "#" not in uri:  # the deprecated short form of a context role
        return uri
    return None


def standing(roles: Iterable[str]) -> Standing:
    """Staff, learner, or not in the course, from a launch's (or a roster member's) roles."""
    kept = [r for r in list(roles)[:MAX_ROLES] if isinstance(r, str) and len(r) <= MAX_ROLE_CHARS]
    named = {context_role(r) for r in kept}  # institution and system roles read as None: ignored
    if named & STAFF_CONTEXT_ROLES:
        return Standing.STAFF
    if "Learner" in named:
        return Standing.LEARNER
    return Standing.NONE


def roles_text(roles: Iterable[str]) -> str:
    """The roles as stored: space-separated, capped (display and audit only)."""
    kept = [r for r in list(roles)[:MAX_ROLES] if isinstance(r, str) and len(r) <= MAX_ROLE_CHARS]
    return " ".join(kept)[:1000]
