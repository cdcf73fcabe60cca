"""All tables; importing this module registers them on ``Base.metadata``."""

from server.models.base import Base, utcnow
from server.models.best_score import BestScore
from server.models.course import DEFAULT_COURSE_ID, DEFAULT_COURSE_SLUG, Course, Enrollment, Extension, SetEntry
from server.models.similarity import ReviewMark, RunStatus, SimilarityPair, SimilarityReview, SimilarityRun
from server.models.submission import CheckResult, Status, Submission, Verdict
from server.models.user import ApiToken, Role, User

__all__ = [
    "ApiToken",
    "Base",
    "BestScore",
    "CheckResult",
    "Course",
    "DEFAULT_COURSE_ID",
    "DEFAULT_COURSE_SLUG",
    "Enrollment",
    "Extension",
    "SetEntry",
    "ReviewMark",
    "Role",
    "RunStatus",
    "SimilarityPair",
    "SimilarityReview",
    "SimilarityRun",
    "Status",
    "Submission",
    "User",
    "Verdict",
    "utcnow",
]
