"""Human review's markup: the review section of a submission's page (comments on lines, the
requests and their answers; the learner's request form; the staff's comment, override and
answer forms) and the course's review requests page, for its staff.

Every value enters the markup through ``e()``; every form carries the session's form token
(``csrf``), which ``server.review.page_router`` checks beside the ``Origin`` header.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from server.models.correction import MAX_REASON_CHARS
from server.models.review import MAX_ANSWER_CHARS, MAX_COMMENT_CHARS, MAX_REQUEST_CHARS
from server.review.schemas import RequestPublic, SubmissionReview
from server.web.html import Viewer, e, format_score, page, time_html
from server.web.urls import learner_url, submission_url

COMMENT_ACTION = "/dashboard/reviews/comment"
REQUEST_ACTION = "/dashboard/reviews/request"
ANSWER_ACTION = "/dashboard/reviews/answer"
OVERRIDE_ACTION = "/dashboard/reviews/override"
REVIEWS = "/dashboard/reviews"

REVIEW_CSS = """
#review .comment{border-left:3px solid #1d4ed8;padding:.3rem .7rem;margin:.5rem 0;list-style:none}
#review ul{padding:0}
#review li{list-style:none;margin:.5rem 0}
#review .said{white-space:pre-wrap}
#review form{display:flex;flex-direction:column;gap:.4rem;max-width:40rem;margin:.6rem 0}
#review textarea{font:inherit;min-height:4rem}
"""


@dataclass(frozen=True)
class ReviewForms:
    """Which forms the submission's page draws for this viewer, and their shared fields."""

    csrf: str
    #: The viewer is staff of the submission's course: comment, override and answer forms.
    staff: bool
    #: The viewer is the submission's learner and may ask for a review now.
    may_request: bool
    course: str
    exercise: str
    lines: int


def _hidden(name: str, value: object) -> str:
    return f'<input type="hidden" name="{e(name)}" value="{e(value)}">'


def _said(text: str | None) -> str:
    return f'<div class="said">{e(text or "")}</div>'


def _request_item(r: RequestPublic, zone: str) -> str:
    answer = (
        f'<div class="answer"><b>Answer</b> by {e(r.answered_by or "")}, {time_html(r.answered_at, zone)}'
        + (
            f' <span class="override">(the score that counts is now {e(format_score(r.override_score))})</span>'
            if r.override_score is not None
            else ""
        )
        + f"{_said(r.answer)}</div>"
        if r.answer
        else ""
    )
    return (
        f'<li class="request" id="request-{r.id}" data-state="{e(r.state)}"><b>Review request</b> '
        f"({e(r.state)}), {time_html(r.created_at, zone)}{_said(r.message)}{answer}</li>"
    )


def _answer_form(r: RequestPublic, forms: ReviewForms) -> str:
    return (
        f'<form class="answer-form" method="post" action="{ANSWER_ACTION}" id="answer-{r.id}">'
        f"{_hidden('csrf', forms.csrf)}{_hidden('course', forms.course)}{_hidden('request', r.id)}"
        f'<label for="a-text-{r.id}">Answer to request {r.id} (the learner reads it)</label>'
        f'<textarea id="a-text-{r.id}" name="answer" maxlength="{MAX_ANSWER_CHARS}" required></textarea>'
        f'<label for="a-score-{r.id}">New score that counts, 0-100 (leave empty: no correction)</label>'
        f'<input id="a-score-{r.id}" name="score" inputmode="decimal" maxlength="8">'
        f'<label for="a-reason-{r.id}">Reason for the new score (empty: the answer)</label>'
        f'<input id="a-reason-{r.id}" name="reason" maxlength="{MAX_REASON_CHARS}">'
        '<button type="submit">Answer and resolve</button></form>'
    )


def review_section(viewer: Viewer, source: str, review: SubmissionReview, forms: ReviewForms) -> str:
    """The submission page's review: each comment beside the line it is on, each request with
    its answer, then the forms the viewer may use."""
    zone = viewer.zone
    code = source.splitlines()
    comments = "".join(
        f'<li class="comment" data-line="{c.line}"><b>Line {c.line}</b> '
        f"<code>{e(code[c.line - 1] if c.line <= len(code) else '')}</code> "
        f'<span class="muted">{e(c.author)}, {time_html(c.created_at, zone)}</span>{_said(c.body)}</li>'
        for c in review.comments
    )
    parts = [f'<ul id="review-comments">{comments}</ul>' if comments else ""]
    if review.held:
        parts.append(
            '<p class="muted" id="review-held">Staff comments and answers are shown when the score is released'
            + (f" on {time_html(review.released_at, zone)}" if review.released_at else "")
            + ".</p>"
        )
    if review.requests:
        items = "".join(_request_item(r, zone) for r in review.requests)
        parts.append(f'<ul id="review-requests">{items}</ul>')
    if forms.may_request:
        parts.append(
            f'<form id="request-form" method="post" action="{REQUEST_ACTION}">{_hidden("csrf", forms.csrf)}'
            f"{_hidden('submission', review.submission)}"
            '<label for="r-message">Ask the course staff to review this submission (what should they look at?)</label>'
            f'<textarea id="r-message" name="message" maxlength="{MAX_REQUEST_CHARS}" required></textarea>'
            '<button type="submit">Request a review</button></form>'
        )
    if forms.staff:
        parts.extend(_answer_form(r, forms) for r in review.requests if r.state == "open")
        parts.append(
            "<h3>Comment on a line</h3>"
            f'<form id="comment-form" method="post" action="{COMMENT_ACTION}">{_hidden("csrf", forms.csrf)}'
            f"{_hidden('course', forms.course)}{_hidden('submission', review.submission)}"
            f'<label for="c-line">Line (1-{forms.lines})</label>'
            f'<input id="c-line" name="line" type="number" min="1" max="{forms.lines}" required>'
            f'<label for="c-body">Comment (the learner reads it, as the feedback policy allows)</label>'
            f'<textarea id="c-body" name="body" maxlength="{MAX_COMMENT_CHARS}" required></textarea>'
            '<button type="submit">Comment</button></form>'
            "<h3>Override the score that counts</h3>"
            f'<form id="override-form" method="post" action="{OVERRIDE_ACTION}">{_hidden("csrf", forms.csrf)}'
            f"{_hidden('course', forms.course)}{_hidden('submission', review.submission)}"
            f'<label for="o-score">Score that counts on {e(forms.exercise)}, 0-100 (an override)</label>'
            '<input id="o-score" name="score" inputmode="decimal" maxlength="8" required>'
            '<label for="o-reason">Reason (the learner reads it)</label>'
            f'<input id="o-reason" name="reason" maxlength="{MAX_REASON_CHARS}" required>'
            '<button type="submit">Override the score</button></form>'
        )
    body = "".join(parts)
    if not body:
        return ""
    return f'<section id="review"><h2>Review</h2>{body}</section>'


def reviews_page(viewer: Viewer, open_requests: Sequence[RequestPublic], resolved: Sequence[RequestPublic]) -> str:
    """A course's review requests: the open ones (oldest first, each linking to the submission
    page where it is answered), then the latest resolved ones."""
    zone = viewer.zone
    here = viewer.course_slug

    def rows(requests: Sequence[RequestPublic], answered: bool) -> str:
        return (
            "".join(
                f'<tr id="queue-{r.id}"><td><a href="{e(submission_url(r.submission))}">#{r.submission}</a></td>'
                f'<td><a href="{e(learner_url(r.learner, here))}">{e(r.learner)}</a></td><td>{e(r.exercise)}</td>'
                f'<td class="said">{e(r.message)}</td><td>{time_html(r.created_at, zone)}</td>'
                + (
                    f"<td>{e(r.answered_by or '')}"
                    + (f" (override {e(format_score(r.override_score))})" if r.override_score is not None else "")
                    + "</td>"
                    if answered
                    else f'<td><a href="{e(submission_url(r.submission))}#review">Answer</a></td>'
                )
                + "</tr>"
                for r in requests
            )
            or f'<tr><td colspan="6" class="muted">{"None yet." if answered else "No open requests."}</td></tr>'
        )

    head = (
        '<thead><tr><th scope="col">Submission</th><th scope="col">Learner</th><th scope="col">Exercise</th>'
        '<th scope="col">Message</th><th scope="col">Asked</th><th scope="col">{}</th></tr></thead>'
    )
    body = (
        f"<h1>Review requests</h1><p>{len(open_requests)} open.</p>"
        f'<table id="open-requests">{head.format("")}<tbody>{rows(open_requests, False)}</tbody></table>'
        f'<h2>Resolved</h2><table id="resolved-requests">{head.format("Answered by")}'
        f"<tbody>{rows(resolved, True)}</tbody></table>"
    )
    return page("Review requests", body, viewer, current="Reviews")
