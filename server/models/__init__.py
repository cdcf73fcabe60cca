"""All tables; importing this module registers them on ``Base.metadata``."""

from server.models.base import Base, utcnow
from server.models.best_score import BestScore
from server.models.submission import CheckResult, Status, Submission, Verdict
from server.models.user import ApiToken, Role, User

__all__ = [
    "ApiToken",
    "Base",
    "BestScore",
    "CheckResult",
    "Role",
    "Status",
    "Submission",
    "User",
    "Verdict",
    "utcnow",
]
