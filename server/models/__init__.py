"""All tables; importing this module registers them on ``Base.metadata``."""

from exercises.report import Verdict
from server.models.audit import AuditAction, AuditEvent
from server.models.base import Base, aware_utc, utcnow
from server.models.best_score import BestScore
from server.models.correction import CorrectionKind, ScoreCorrection
from server.models.course import (
    DEFAULT_COURSE_ID,
    DEFAULT_COURSE_SLUG,
    Course,
    Enrollment,
    Extension,
    FeedbackToken,
    SetEntry,
)
from server.models.lti import (
    LtiContext,
    LtiDeepLink,
    LtiDeployment,
    LtiLineItem,
    LtiLogin,
    LtiMember,
    LtiPlatform,
    LtiScoreSent,
    LtiTask,
    LtiTicket,
    LtiToolKey,
    LtiUser,
)
from server.models.regrade import RegradeResult, RegradeSet, SupersededVerdict
from server.models.review import RequestState, ReviewComment, ReviewRequest
from server.models.similarity import ReviewMark, RunStatus, SimilarityPair, SimilarityReview, SimilarityRun
from server.models.submission import CheckResult, Submission
from server.models.user import ApiToken, EndedSession, User
from server.models.verification import ExerciseVerification, ExerciseVersion, ServedVersion, ServiceSetting
from server.vocabulary import Keep, RegradeState, Role, Status, TokenScope

__all__ = [
    "DEFAULT_COURSE_ID",
    "DEFAULT_COURSE_SLUG",
    "ApiToken",
    "AuditAction",
    "AuditEvent",
    "Base",
    "BestScore",
    "CheckResult",
    "CorrectionKind",
    "Course",
    "EndedSession",
    "Enrollment",
    "ExerciseVerification",
    "ExerciseVersion",
    "Extension",
    "FeedbackToken",
    "Keep",
    "LtiContext",
    "LtiDeepLink",
    "LtiDeployment",
    "LtiLineItem",
    "LtiLogin",
    "LtiMember",
    "LtiPlatform",
    "LtiScoreSent",
    "LtiTask",
    "LtiTicket",
    "LtiToolKey",
    "LtiUser",
    "RegradeResult",
    "RegradeSet",
    "RegradeState",
    "RequestState",
    "ReviewComment",
    "ReviewMark",
    "ReviewRequest",
    "Role",
    "RunStatus",
    "ScoreCorrection",
    "ServedVersion",
    "ServiceSetting",
    "SetEntry",
    "SimilarityPair",
    "SimilarityReview",
    "SimilarityRun",
    "Status",
    "Submission",
    "SupersededVerdict",
    "TokenScope",
    "User",
    "Verdict",
    "aware_utc",
    "utcnow",
]
