"""Human review: staff comments on a submission's lines, learners' review requests, answers.

Who may do what (each function checks it, whoever calls it):

- **Staff** of the submission's course (its instructors and TAs: ``courses.service.teaches_course``)
  comment on lines of any of its submissions, and answer and resolve its review requests, with
  or without an override of the score that counts (``server.courses.corrections.override``: the
  one override path, which writes its own audit event). Each action is an event of the course's
  audit log (``server.courses.audit``).
- **The learner** requests a review of one of their own submissions, once graded, with a message:
  one open request per submission (held by a partial unique index too), at most
  :data:`MAX_REQUESTS_PER_SUBMISSION` ever, and at most :data:`MAX_OPEN_PER_LEARNER` open at once
  in a course. They read the comments and the answers as the set's feedback policy allows:
  under ``hidden-until-due``, nothing until their due date (``feedback_policy.access_for``'s
  ``hidden`` view), as for the score itself. No request is taken while the score is hidden.
- Anyone else: the submission does not exist (404), as for the submission itself. A learner
  who asks for a staff action on their own submission is told it is staff's (403).

Callers commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, insert, literal, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.courses import audit, corrections
from server.courses.feedback_policy import View, access_for
from server.courses.service import teaches_course
from server.errors import (
    InvalidReview,
    NotAllowed,
    ReviewAlreadyOpen,
    ReviewNotFound,
    SubmissionNotFound,
)
from server.models import (
    AuditAction,
    Course,
    RequestState,
    ReviewComment,
    ReviewRequest,
    ScoreCorrection,
    Status,
    Submission,
    User,
    utcnow,
)
from server.models.correction import MAX_REASON_CHARS
from server.models.review import MAX_ANSWER_CHARS, MAX_COMMENT_CHARS, MAX_REQUEST_CHARS
from server.review.schemas import CommentPublic, RequestPublic, SubmissionReview
from server.text_guard import CONTROL, is_blank, is_storable_text
from server.users.service import lock_learner

#: Requests one submission may ever have (answered ones count): asking again after an answer
#: is allowed, a loop of asks is not.
MAX_REQUESTS_PER_SUBMISSION = 3
#: Open requests one learner may have at once in one course.
MAX_OPEN_PER_LEARNER = 5
#: Comments one submission may carry (each is a row the learner's page draws).
MAX_COMMENTS_PER_SUBMISSION = 200
#: Requests the staff's list shows at once (oldest open first).
LIST_LIMIT = 200


def clean_text(text: str | None, limit: int, what: str) -> str:
    """``text`` as stored: line ends made ``\\n``, tabs spaces, every other control character
    taken out, outer blank space stripped. Empty (nothing a reader sees: :func:`is_blank`), too
    long or unstorable: ``InvalidReview``."""
    raw = (text or "").replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    if not is_storable_text(raw):
        raise InvalidReview(f"The {what} holds a NUL byte or a lone surrogate, which cannot be stored.")
    cleaned = "\n".join(CONTROL.sub("", line).rstrip() for line in raw.split("\n")).strip()
    if is_blank(cleaned):
        raise InvalidReview(f"Write the {what}: it is empty (or only invisible characters).")
    if len(cleaned) > limit:
        raise InvalidReview(f"A {what} is at most {limit} characters (this one has {len(cleaned)}).")
    return cleaned


def source_lines(submission: Submission) -> int:
    """How many lines the stored source has (what a comment's line must be within)."""
    return max(1, len(submission.source.splitlines()))


def readable_submission(session: Session, viewer: User, submission_id: int) -> Submission:
    """The submission if ``viewer`` may read it (their own, or they teach its course); else 404."""
    submission = session.get(Submission, submission_id) if 1 <= submission_id < 2**31 else None
    if submission is None or (
        submission.user_id != viewer.id and not teaches_course(session, viewer, submission.course_id)
    ):
        raise SubmissionNotFound(f"No submission {submission_id} that you may read.")
    return submission


def _staff_submission(session: Session, staff: User, submission_id: int) -> Submission:
    """The submission if ``staff`` teaches its course; 403 for its own learner, 404 for anyone else."""
    submission = readable_submission(session, staff, submission_id)
    if not teaches_course(session, staff, submission.course_id):
        raise NotAllowed("Only the course's instructors and TAs comment on a submission or answer a review.")
    return submission


def add_comment(session: Session, staff: User, submission_id: int, line: int, body: str) -> ReviewComment:
    """Comment on ``line`` (from 1) of a submission, as one of its course's staff."""
    submission = _staff_submission(session, staff, submission_id)
    lines = source_lines(submission)
    if not 1 <= line <= lines:
        raise InvalidReview(f"Submission {submission.id} has lines 1 to {lines}; there is no line {line}.")
    text = clean_text(body, MAX_COMMENT_CHARS, "comment")
    comment = _insert_within_cap(session, submission, line, text, staff.name[:128])
    audit.record(
        session,
        submission.course_id,
        staff.name,
        AuditAction.REVIEW_COMMENT,
        f"{submission.user.name}/{submission.exercise}#{submission.id}",
        f"line {line}: {text}",
    )
    session.flush()
    return comment


def _insert_within_cap(session: Session, submission: Submission, line: int, text: str, author: str) -> ReviewComment:
    """Insert one comment unless the submission has :data:`MAX_COMMENTS_PER_SUBMISSION`; the
    count and the insert held together, so a burst of comments cannot pass the cap.

    PostgreSQL: the submission's row is locked (``FOR UPDATE``) first, so comments on one
    submission take turns, and each count (a new snapshot per statement) sees the ones before.
    SQLite ignores ``FOR UPDATE``; there the one ``INSERT ... SELECT ... WHERE (count) < cap``
    statement is the transaction's first write, so it runs under the database's write lock and
    counts what every earlier writer committed."""
    session.execute(select(Submission.id).where(Submission.id == submission.id).with_for_update())
    count = (
        select(func.count())
        .select_from(ReviewComment)
        .where(ReviewComment.submission_id == submission.id)
        .scalar_subquery()
    )
    row = {
        "submission_id": submission.id,
        "course_id": submission.course_id,
        "line": line,
        "body": text,
        "author": author,
        "created_at": utcnow(),
    }
    columns = ReviewComment.__table__.c
    values = select(*(literal(value, columns[name].type) for name, value in row.items())).where(
        count < MAX_COMMENTS_PER_SUBMISSION
    )
    made = session.execute(insert(ReviewComment).from_select(list(row), values).returning(ReviewComment.id)).scalar()
    if made is None:
        raise InvalidReview(f"Submission {submission.id} has {MAX_COMMENTS_PER_SUBMISSION} comments, the most it may.")
    comment = session.get(ReviewComment, made)
    assert comment is not None  # inserted just now, in this transaction
    return comment


def request_review(session: Session, learner: User, submission_id: int, message: str, now: datetime) -> ReviewRequest:
    """The learner's request for a review of their own graded submission."""
    submission = session.get(Submission, submission_id) if 1 <= submission_id < 2**31 else None
    if submission is None or submission.user_id != learner.id:
        raise SubmissionNotFound(f"No submission {submission_id} of yours.")
    if submission.status != Status.DONE.value:
        raise InvalidReview(f"Submission {submission.id} is still being graded; ask for a review once it is.")
    access = access_for(session, learner, submission, now, teaches=False)
    if access.view is View.HIDDEN:
        raise InvalidReview(
            f"The score of submission {submission.id} is not released yet; ask for a review once it is."
        )
    text = clean_text(message, MAX_REQUEST_CHARS, "message")
    lock_learner(session, learner.id)  # the per-learner count below, and the insert, in one turn
    asked = list(session.scalars(select(ReviewRequest.state).where(ReviewRequest.submission_id == submission.id)))
    if RequestState.OPEN.value in asked:
        raise ReviewAlreadyOpen(f"Submission {submission.id} has an open review request already; wait for its answer.")
    if len(asked) >= MAX_REQUESTS_PER_SUBMISSION:
        raise ReviewAlreadyOpen(
            f"Submission {submission.id} has had {MAX_REQUESTS_PER_SUBMISSION} review requests, the most it may."
        )
    open_now = session.scalar(
        select(func.count())
        .select_from(ReviewRequest)
        .where(
            ReviewRequest.user_id == learner.id,
            ReviewRequest.course_id == submission.course_id,
            ReviewRequest.state == RequestState.OPEN.value,
        )
    )
    if (open_now or 0) >= MAX_OPEN_PER_LEARNER:
        raise ReviewAlreadyOpen(
            f"You have {MAX_OPEN_PER_LEARNER} open review requests in this course; wait for an answer first."
        )
    row = ReviewRequest(
        submission_id=submission.id,
        course_id=submission.course_id,
        user_id=learner.id,
        message=text,
        state=RequestState.OPEN.value,
        created_at=utcnow(),
    )
    session.add(row)
    try:
        session.flush()
    except IntegrityError:  # another request of this submission opened first (the partial unique index)
        session.rollback()
        raise ReviewAlreadyOpen(
            f"Submission {submission.id} has an open review request already; wait for its answer."
        ) from None
    return row


def course_request(session: Session, course: Course, request_id: int, *, lock: bool = False) -> ReviewRequest:
    """``course``'s review request ``request_id``; ``ReviewNotFound`` for any other id. ``lock``:
    its row locked until the transaction ends (PostgreSQL), so two staff answering at once make
    one answer and one override, the second told it is resolved."""
    row = session.get(ReviewRequest, request_id, with_for_update=lock) if 1 <= request_id < 2**31 else None
    if row is None or row.course_id != course.id:
        raise ReviewNotFound(f"No review request {request_id} in {course.slug!r}.")
    return row


def _claim(session: Session, row: ReviewRequest, text: str, staff: User) -> None:
    """Resolve ``row`` with one compare-and-set (``UPDATE ... WHERE state = 'open'``), before
    the override, in the same transaction: of staff answering at once, one changes the row and
    the others are refused (``ReviewAlreadyOpen``, 409) and make no override. The earlier
    ``FOR UPDATE`` is no lock on SQLite, and there a read is outside any transaction; this
    UPDATE is the first write, so it waits for the database's write lock and then sees the
    winner's commit. On PostgreSQL it waits on the winner's row lock, then finds the row resolved."""
    claimed = session.execute(
        update(ReviewRequest)
        .where(ReviewRequest.id == row.id, ReviewRequest.state == RequestState.OPEN.value)
        .values(state=RequestState.RESOLVED.value, answer=text, answered_by=staff.name[:128], answered_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    session.refresh(row)
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        raise ReviewAlreadyOpen(f"Review request {row.id} is resolved already ({row.answered_by}).")


@dataclass(frozen=True)
class Answered:
    """A resolved request and the override its answer made, if any."""

    request: ReviewRequest
    correction: ScoreCorrection | None


def answer_request(
    session: Session,
    course: Course,
    staff: User,
    request_id: int,
    answer: str,
    score: float | None = None,
    reason: str | None = None,
) -> Answered:
    """Answer and resolve one of ``course``'s open requests; with ``score``, override the score
    that counts on the submission's exercise (``corrections.override``; ``reason``, else the
    answer, is the override's reason)."""
    if not teaches_course(session, staff, course.id):
        raise NotAllowed(f"Only the instructors and TAs of {course.slug!r} answer its review requests.")
    row = course_request(session, course, request_id, lock=True)
    if row.state != RequestState.OPEN.value:
        raise ReviewAlreadyOpen(f"Review request {row.id} is resolved already ({row.answered_by}).")
    text = clean_text(answer, MAX_ANSWER_CHARS, "answer")
    submission = session.get(Submission, row.submission_id)
    learner = session.get(User, row.user_id)
    assert submission is not None and learner is not None  # both cascade onto the request
    _claim(session, row, text, staff)
    made = None
    if score is not None:
        why = reason if reason and not is_blank(reason) else text
        if len(" ".join(why.split())) > MAX_REASON_CHARS:
            raise InvalidReview(
                f"The override needs a reason of at most {MAX_REASON_CHARS} characters (the answer is longer): give one."
            )
        made = corrections.override(session, course, learner.name, submission.exercise, score, why, staff.name)
    row.correction_id = made.id if made is not None else None
    outcome = f"override {made.score:g}" if made is not None and made.score is not None else "no correction"
    audit.record(
        session,
        course,
        staff.name,
        AuditAction.REVIEW_ANSWER,
        f"{learner.name}/{submission.exercise}#{submission.id}",
        f"request {row.id} resolved, {outcome}: {text}",
    )
    session.flush()
    return Answered(row, made)


# --- reading -----------------------------------------------------------------------------


def public_requests(session: Session, rows: list[ReviewRequest], held: bool = False) -> list[RequestPublic]:
    """Requests in wire form, in the order given; ``held``: their answers not shown (the feedback policy holds them)."""
    if not rows:
        return []
    names = dict(
        session.execute(select(User.id, User.name).where(User.id.in_({r.user_id for r in rows}))).tuples().all()
    )
    subs = dict(
        session.execute(
            select(Submission.id, Submission.exercise).where(Submission.id.in_({r.submission_id for r in rows}))
        )
        .tuples()
        .all()
    )
    slugs = dict(
        session.execute(select(Course.id, Course.slug).where(Course.id.in_({r.course_id for r in rows}))).tuples().all()
    )
    scores = dict(
        session.execute(
            select(ScoreCorrection.id, ScoreCorrection.score).where(
                ScoreCorrection.id.in_({r.correction_id for r in rows if r.correction_id is not None})
            )
        )
        .tuples()
        .all()
    )
    return [
        RequestPublic(
            id=r.id,
            submission=r.submission_id,
            course=slugs.get(r.course_id, "?"),
            learner=names.get(r.user_id, "?"),
            exercise=subs.get(r.submission_id, "?"),
            message=r.message,
            state=r.state,
            created_at=r.created_at,
            answer=None if held else r.answer,
            answered_by=None if held else r.answered_by,
            answered_at=None if held else r.answered_at,
            override_score=None if held or r.correction_id is None else scores.get(r.correction_id),
        )
        for r in rows
    ]


def comment_public(comment: ReviewComment, submission: Submission) -> CommentPublic:
    """One comment in wire form, with the source line it is on."""
    code = submission.source.splitlines()
    return CommentPublic(
        id=comment.id,
        submission=comment.submission_id,
        line=comment.line,
        source_line=code[comment.line - 1] if comment.line <= len(code) else "",
        body=comment.body,
        author=comment.author,
        created_at=comment.created_at,
    )


def review_of(session: Session, viewer: User, submission: Submission, now: datetime) -> SubmissionReview:
    """What ``viewer`` (who may read ``submission``) sees of its review: everything for its
    course's staff; for its learner, nothing of the comments and answers while the set's
    feedback policy hides the verdict (their requests' messages stay: they wrote them)."""
    access = access_for(session, viewer, submission, now)
    held = access.view is View.HIDDEN
    comments = (
        []
        if held
        else [
            comment_public(c, submission)
            for c in session.scalars(
                select(ReviewComment).where(ReviewComment.submission_id == submission.id).order_by(ReviewComment.id)
            )
        ]
    )
    rows = list(
        session.scalars(
            select(ReviewRequest).where(ReviewRequest.submission_id == submission.id).order_by(ReviewRequest.id)
        )
    )
    return SubmissionReview(
        submission=submission.id,
        held=held,
        released_at=access.released_at if held else None,
        comments=comments,
        requests=public_requests(session, rows, held),
    )


def course_requests(session: Session, course: Course, state: RequestState = RequestState.OPEN) -> list[RequestPublic]:
    """``course``'s requests in ``state``: open ones oldest first (the queue), resolved ones
    newest first; at most :data:`LIST_LIMIT`. The caller has checked that the reader teaches it."""
    order = ReviewRequest.id if state is RequestState.OPEN else ReviewRequest.id.desc()
    rows = list(
        session.scalars(
            select(ReviewRequest)
            .where(ReviewRequest.course_id == course.id, ReviewRequest.state == state.value)
            .order_by(order)
            .limit(LIST_LIMIT)
        )
    )
    return public_requests(session, rows)


def open_count(session: Session, course: Course) -> int:
    """How many of ``course``'s review requests are open (the class page links them)."""
    found = session.scalar(
        select(func.count())
        .select_from(ReviewRequest)
        .where(ReviewRequest.course_id == course.id, ReviewRequest.state == RequestState.OPEN.value)
    )
    return found or 0
