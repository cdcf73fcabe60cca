"""The tool's configuration as an LMS asks for it: Canvas's developer-key JSON (docs/lti.md)."""

from __future__ import annotations

from typing import Any

from server.lti import claims as c


def canvas_configuration(base: str) -> dict[str, Any]:
    """Canvas's LTI 1.3 tool configuration JSON for a server at ``base`` (docs/lti.md)."""
    launch_url = f"{base}/lti/launch"
    return {
        "title": "ppo-grader",
        "description": "Autograded RLHF/PPO coding exercises: launch, roster and grades.",
        "oidc_initiation_url": f"{base}/lti/login",
        "target_link_uri": launch_url,
        "public_jwk_url": f"{base}/lti/jwks",
        "scopes": [c.SCOPE_LINEITEM, c.SCOPE_LINEITEM_READ, c.SCOPE_RESULT_READ, c.SCOPE_SCORE, c.SCOPE_MEMBERSHIPS],
        "extensions": [
            {
                "platform": "canvas.instructure.com",
                "privacy_level": "public",
                "settings": {
                    "placements": [
                        {
                            "placement": "link_selection",
                            "message_type": c.DEEP_LINKING_REQUEST,
                            "target_link_uri": launch_url,
                        },
                        {
                            "placement": "assignment_selection",
                            "message_type": c.DEEP_LINKING_REQUEST,
                            "target_link_uri": launch_url,
                        },
                        {
                            "placement": "course_navigation",
                            "message_type": c.RESOURCE_LINK_REQUEST,
                            "target_link_uri": launch_url,
                            "text": "ppo-grader",
                            "windowTarget": "_blank",
                        },
                    ]
                },
            }
        ],
        "custom_fields": {},
    }
