"""A submission from the learner's own dashboard page: a ``.py`` or ``.ipynb`` file, or a pasted
function, for learners without a terminal (a locked-down lab machine, a tablet).

The form (``pages.upload_form``) posts ``multipart/form-data`` to ``POST /dashboard/submit``;
the route (``router.submit_upload``) checks what the API checks, in the same order, and then
stores the submission through the same ``submissions.service.create_submission``:

- CSRF: the session cookie is ``SameSite=Strict``, a cross-site ``Origin`` is refused, and the
  form carries the session's token (``server.web.session.form_token``);
- size: the body is refused past :data:`MAX_UPLOAD_BYTES` before it is parsed (a notebook
  carries its outputs), and what is stored, the source, has the API's ``MAX_SOURCE_BYTES``;
- the learner's rate limit and queue cap (``server.submissions.limits``), then the course's
  rules; every refusal is a page that says why, with the API's own sentence.

A notebook is built into the module its learner meant exactly as ``ppo-submit notebook.ipynb``
builds it: the client's own code (``ppo_submit.notebook_file``, standard library only) is
imported when a notebook arrives, so both say the same thing about the same file. It is parsed,
never run. The body is parsed with the standard library's MIME parser (``email``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from email.message import Message
from email.parser import BytesParser
from email.policy import HTTP
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from server.catalog.service import list_exercises
from server.web.errors import PageError

if TYPE_CHECKING:
    from ppo_submit.api import ExerciseSummary

#: Largest upload body read (a notebook's outputs count; its code is capped as the API caps it).
MAX_UPLOAD_BYTES = 8 * 1024 * 1024
#: Most parts a form may have (it has six).
MAX_PARTS = 12
#: Form fields other than the file: longest value kept (the pasted source has the source cap).
MAX_FIELD_CHARS = 200
#: The file name a pasted function is stored under.
PASTED = "pasted.py"
#: How the client's messages say to name the exercise, on this form.
CHOOSE_IN_FORM = ("choose the exercise in the form", "choose {slug} in the form")


class UploadRefused(PageError):
    """The upload cannot be used as sent; the page says why, and links back to the form."""

    def __init__(self, status_code: int, text: str, back: str = "/dashboard") -> None:
        super().__init__(status_code, "Not submitted", text, link=("Back to your page", back))


@dataclass(frozen=True)
class Upload:
    """The form as sent: its fields, and the file (name and bytes) if one was chosen."""

    fields: dict[str, str]
    filename: str | None
    content: bytes | None


async def read_upload(request: Request) -> Upload:
    """The multipart form of ``POST /dashboard/submit``, read up to :data:`MAX_UPLOAD_BYTES`."""
    content_type = request.headers.get("content-type", "")
    if not content_type.lower().startswith("multipart/form-data") or len(content_type) > 300:
        raise UploadRefused(400, "Send the form from your dashboard page (a file upload form).")
    too_large = UploadRefused(
        413,
        f"The upload is over {MAX_UPLOAD_BYTES // 2**20} MiB; clear the notebook's "
        "outputs (Edit > Clear Outputs of All Cells) and save it, or paste the function.",
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_UPLOAD_BYTES:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_UPLOAD_BYTES:
            raise too_large
    return parse_upload(content_type, bytes(body))


def parse_upload(content_type: str, body: bytes) -> Upload:
    """The fields and the file of a ``multipart/form-data`` body."""
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body
    )
    parts = list(message.iter_parts()) if message.is_multipart() else []
    if not parts or len(parts) > MAX_PARTS:
        raise UploadRefused(400, "Send the form from your dashboard page (a file upload form).")
    fields: dict[str, str] = {}
    filename: str | None = None
    content: bytes | None = None
    for part in parts:
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str) or name in fields:
            continue
        data = _payload(part)
        if name == "file":
            chosen = part.get_filename()
            if chosen and data:
                filename, content = str(chosen)[:255], data
            continue
        text = data.decode("utf-8", errors="replace")
        fields[name] = text if name == "source" else text[:MAX_FIELD_CHARS].strip()
    return Upload(fields, filename, content)


def _payload(part: Message) -> bytes:
    data = part.get_payload(decode=True)
    return data if isinstance(data, bytes) else b""


# --------------------------------------------------------------------------- the source


@dataclass(frozen=True)
class Prepared:
    """What the upload submits: the exercise, the source and the file name it is shown under."""

    exercise: str
    source: str
    filename: str


def _catalogue() -> list[ExerciseSummary]:
    """The catalogue as the client's notebook code reads it (what ``GET /exercises`` lists)."""
    from ppo_submit.api import ExerciseSummary

    return [ExerciseSummary(slug=x.slug, function=x.function) for x in list_exercises()]


def prepare(upload: Upload, back: str) -> Prepared:
    """The submission the upload makes; ``UploadRefused`` with one sentence when it makes none.

    The same bad inputs get the same sentences as ``ppo-submit`` gives for the same file: a
    notebook that is not JSON, no exercise function, several, a name the function needs that
    no cell defines.
    """
    from ppo_submit.api import UsageError
    from ppo_submit.notebook_file import code_cells, module_of
    from ppo_submit.source import NOTEBOOK_SUFFIX, defined_functions, match_functions

    chosen = upload.fields.get("exercise") or None
    pasted = upload.fields.get("source", "")
    if upload.content is None and not pasted.strip():
        raise UploadRefused(400, "Choose a .py or .ipynb file, or paste your function.", back)
    name = _base_name(upload.filename) if upload.content is not None else PASTED
    try:
        if upload.content is not None and name.lower().endswith(NOTEBOOK_SUFFIX):
            try:
                notebook = json.loads(upload.content)
            except (ValueError, RecursionError):
                raise UploadRefused(
                    400,
                    f"{name} is not a notebook: it is not JSON (save it from Jupyter with "
                    "File > Save, then upload it again).",
                    back,
                ) from None
            if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
                raise UploadRefused(400, f"{name} is JSON but not a Jupyter notebook (it has no cells).", back)
            module = module_of(code_cells(notebook), _catalogue(), exercise=chosen, name=name, choose=CHOOSE_IN_FORM)
            return Prepared(module.exercise, module.source, name)
        source = pasted if upload.content is None else _text(upload.content, name, back)
        names, error_line = defined_functions(source)
        exercise = chosen or match_functions(
            names,
            _catalogue(),
            filename=name if upload.content is not None else "The pasted code",
            syntax_error=None if error_line is None else f"line {error_line}",
            choose=CHOOSE_IN_FORM,
        )
        return Prepared(exercise, source, name)
    except UsageError as exc:
        raise UploadRefused(400, _sentence(exc.message), back) from None


def _base_name(filename: str | None) -> str:
    base = (filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return base or "upload.py"


def _text(content: bytes, name: str, back: str) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise UploadRefused(400, f"{name} is not UTF-8 text; save it as UTF-8 and upload it again.", back) from None


def _sentence(message: str) -> str:
    return message if message.endswith((".", "?", "!")) else message + "."


UploadForm = Annotated[Upload, Depends(read_upload)]
