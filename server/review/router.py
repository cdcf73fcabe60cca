"""The human-review API: a submission's comments and requests, the learner's request, the
staff's comments, a course's request queue, answers (``server.review.service`` decides who may).

- ``GET /submissions/{id}/review``: what the caller sees of it (its learner: as the feedback
  policy allows; its course's staff: everything). 404 for anyone else.
- ``POST /submissions/{id}/comments``: staff comment on a line. 403 for the submission's own
  learner, 404 for anyone else.
- ``POST /submissions/{id}/review-requests``: the learner asks for a review of their own
  submission. 404 for any other submission; 409 while one is open.
- ``GET /courses/{course}/review-requests``: the course's requests (``?state=open|resolved``),
  staff only (403 for its learners, 404 for others).
- ``POST /courses/{course}/review-requests/{id}/answer``: answer and resolve, with an
  optional override (``score``, ``reason``) through the corrections service.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from server.courses.service import taught_course
from server.deps import CurrentUser, Now, SessionDep
from server.models import RequestState
from server.openapi import errors
from server.review import service
from server.review.schemas import (
    AnswerIn,
    CommentIn,
    CommentPublic,
    CourseRequests,
    RequestIn,
    RequestPublic,
    SubmissionReview,
)

router = APIRouter(tags=["review"])

MAX_ID = 2**31 - 1
SubmissionId = Annotated[int, Path(ge=1, le=MAX_ID, description="Submission id.")]
CourseSlug = Annotated[str, Path(max_length=64, description="Course slug.")]


@router.get("/submissions/{submission_id}/review", response_model=SubmissionReview, responses=errors(401, 404))
def read_review(submission_id: SubmissionId, user: CurrentUser, session: SessionDep, now: Now) -> SubmissionReview:
    """The submission's line comments and review requests with their answers; its learner sees
    none of the staff's words while the feedback policy hides the score (``held``)."""
    submission = service.readable_submission(session, user, submission_id)
    review = service.review_of(session, user, submission, now)
    session.commit()
    return review


@router.post(
    "/submissions/{submission_id}/comments",
    response_model=CommentPublic,
    status_code=201,
    responses=errors(401, 403, 404, 422),
)
def add_comment(
    submission_id: SubmissionId, payload: CommentIn, user: CurrentUser, session: SessionDep
) -> CommentPublic:
    """Comment on one line of the submission (its course's instructors and TAs)."""
    comment = service.add_comment(session, user, submission_id, payload.line, payload.body)
    session.commit()
    return service.comment_public(comment, service.readable_submission(session, user, submission_id))


@router.post(
    "/submissions/{submission_id}/review-requests",
    response_model=RequestPublic,
    status_code=201,
    responses=errors(401, 404, 409, 422),
)
def request_review(
    submission_id: SubmissionId, payload: RequestIn, user: CurrentUser, session: SessionDep, now: Now
) -> RequestPublic:
    """Ask the course's staff to review one of your graded submissions (one open request at a time)."""
    row = service.request_review(session, user, submission_id, payload.message, now)
    session.commit()
    [public] = service.public_requests(session, [row])
    return public


@router.get("/courses/{course}/review-requests", response_model=CourseRequests, responses=errors(401, 403, 404))
def list_requests(
    course: CourseSlug,
    user: CurrentUser,
    session: SessionDep,
    state: Annotated[RequestState, Query(description="open (the queue, oldest first) or resolved (newest first).")] = (
        RequestState.OPEN
    ),
) -> CourseRequests:
    """The course's review requests, for its instructors and TAs."""
    where = taught_course(session, user, course)
    return CourseRequests(course=where.slug, state=state.value, requests=service.course_requests(session, where, state))


@router.post(
    "/courses/{course}/review-requests/{request_id}/answer",
    response_model=RequestPublic,
    responses=errors(401, 403, 404, 409, 422),
)
def answer_request(
    course: CourseSlug,
    request_id: Annotated[int, Path(ge=1, le=MAX_ID)],
    payload: AnswerIn,
    user: CurrentUser,
    session: SessionDep,
) -> RequestPublic:
    """Answer and resolve an open request; with ``score``, override the score that counts too."""
    where = taught_course(session, user, course)
    done = service.answer_request(session, where, user, request_id, payload.answer, payload.score, payload.reason)
    session.commit()
    [public] = service.public_requests(session, [done.request])
    return public
