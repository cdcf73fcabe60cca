"""``POST /dashboard/staff``: the course page's staff form. An instructor of the course adds a TA
by the login of an existing account, or removes one; a TA, who may do everything else on the
course's staff pages, is refused (403, saying why); a learner gets the 404 of any staff page.

The form carries the session's form token beside the ``Origin`` check (``staff_form_course``).
Who may change staff and what a TA is: ``server.courses.staff`` (its ``add_ta`` and
``remove_ta`` write the audit log's ``staff.add`` and ``staff.remove``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from server.courses import staff
from server.dashboard.staff_forms import staff_form_course
from server.deps import SessionDep, SettingsDep
from server.errors import GraderError
from server.text_guard import printable_text
from server.web.deps import WebInstructor
from server.web.errors import PageBadRequest, PageError
from server.web.responses import FormFields, redirect
from server.web.session import notice_token
from server.web.urls import DASHBOARD, STAFF_FORM, in_course

router = APIRouter(include_in_schema=False)


@router.post(STAFF_FORM)
def change_staff(
    request: Request, form: FormFields, session: SessionDep, settings: SettingsDep, user: WebInstructor
) -> Response:
    """Add or remove one TA, then back to the course page."""
    fields = form or {}
    course = staff_form_course(request, fields, session, settings.secret_bytes, user, "course")
    back = in_course(DASHBOARD, course.slug)
    action, login = fields.get("action"), (fields.get("login") or "").strip()
    if action not in ("add", "remove"):
        raise PageBadRequest(user, "Choose add or remove.")
    if printable_text(login, 64) is None or not login:
        raise PageBadRequest(user, "Name the TA by their login (1 to 64 characters, no control character).")
    try:
        if action == "add":
            done = staff.add_ta(session, course, login, user)
        else:
            done = staff.remove_ta(session, course, login, user)
    except GraderError as exc:  # the service's refusal in its words (nothing committed): a TA's 403, a login's 404
        raise PageError(
            exc.status_code, "Staff not changed", exc.detail, user, link=("Back to the course", back)
        ) from None
    session.commit()
    key = "staff_added" if action == "add" else "staff_removed"
    # The course page shows the notice only with this signature (``staff_notice``): a link
    # made elsewhere cannot make it announce a staff change.
    signed = notice_token(user.id, staff_notice(course.slug, key, done.name), settings.secret_bytes)
    return redirect(in_course(DASHBOARD, course.slug, **{key: done.name, "notice": signed}) + "#staff-section")


def staff_notice(course: str, key: str, login: str) -> str:
    """What the signature of a staff change's notice covers: the course, the change, the login."""
    return f"{course}\x00{key}\x00{login}"
