"""A submission from the learner's own dashboard page: a ``.py`` or ``.ipynb`` file, or a pasted
function, for learners without a terminal (a locked-down lab machine, a tablet).

The form (``pages.upload_form``) posts ``multipart/form-data`` to ``POST /dashboard/submit``;
the route (``router.submit_upload``) checks what the API checks, in the same order, and then
stores the submission through the same ``submissions.service.create_submission``:

- who: the session cookie (``WebSender``, a database session closed before the body is
  read), the ``Origin`` and the form's token, which travels in the form's address
  (``?csrf=``, redacted from the logs), are all checked before one byte of the body is read,
  so a request without a live session costs a database lookup and nothing more;
- waiting: a learner reads at most :data:`MAX_UPLOADS_PER_USER` bodies at once, everyone
  :data:`MAX_UPLOADS_IN_ALL` (:class:`UploadSlots`, 429); the body is awaited on the event
  loop, holding no thread and no database connection, and a stalled one is refused (408);
- the body (:func:`read_upload`) is parsed as it arrives by ``python-multipart``'s streaming
  parser, batch by batch in a worker thread, never on the event loop; its limits are enforced while
  parsing: :data:`MAX_UPLOAD_BYTES` in all, :data:`MAX_PARTS` parts, a few short headers per
  part, no ``multipart/*`` part inside the form, and the code caps below;
- size: a ``.py`` file and a pasted ``source`` have the API's ``MAX_SOURCE_BYTES``, refused (413)
  as soon as the part grows past it; a notebook's code has a cap per cell
  (:data:`MAX_CELL_FACTOR` times the source cap) and in all (:data:`MAX_CODE_FACTOR` times), checked
  before any cell is parsed; what is stored, the source, has ``MAX_SOURCE_BYTES``;
- a replay of the form's key (:func:`stored_key`) is answered with the stored submission before
  anything is built; the same key with other content is refused (409);
- the learner's rate limit and queue cap (``server.submissions.limits``), then the course's
  rules; every refusal is a page that says why, with the API's own sentence.

A notebook is read and built into the module its learner meant exactly as ``ppo-submit
notebook.ipynb`` reads and builds it: both call ``notebook_format`` (one size cap, one cell cap,
nbformat, one set of sentences: ``notebook_format.reader``), so both say the same thing about
the same file. It is parsed, never run; the names it follows are bounded
(``notebook_format.closure``).
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio
from fastapi import Request
from python_multipart import MultipartParser
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import parse_options_header
from starlette.requests import ClientDisconnect

from notebook_format.cells import Cell
from notebook_format.errors import OverCap, SourceError
from notebook_format.functions import NOTEBOOK_SUFFIX, defined_functions, match_functions
from notebook_format.module import module_of
from notebook_format.reader import MAX_NOTEBOOK_BYTES, read_notebook
from notebook_format.reader import too_large as notebook_too_large
from server.catalogue.service import list_exercises
from server.web.errors import PageError

#: Largest upload body read: a notebook of the one notebook cap (its outputs count; its code is
#: capped as the API caps it), and room for the form's other fields.
MAX_UPLOAD_BYTES = MAX_NOTEBOOK_BYTES + 1024 * 1024
#: Most parts a form may have (the upload form has five, the late confirmation six).
MAX_PARTS = 12
#: Headers per part (a browser sends one or two) and the longest one, in bytes.
MAX_PART_HEADERS = 4
MAX_HEADER_BYTES = 1024
#: Form fields other than the file: longest value kept (the pasted source has the source cap).
MAX_FIELD_CHARS = 200
#: A notebook's code: at most this many times the source cap in one cell, and in all its cells.
#: Only the function and what it reads is sent (the source cap), but a notebook holds more.
MAX_CELL_FACTOR = 1
MAX_CODE_FACTOR = 4
#: Uploads whose bodies are being read at once: per learner, and in all (each holds up to
#: ``MAX_UPLOAD_BYTES`` in memory, no thread and no database connection while it waits).
MAX_UPLOADS_PER_USER = 2
MAX_UPLOADS_IN_ALL = 16
#: A body that sends nothing for this long is refused (408), and so is one slower than
#: :data:`MIN_UPLOAD_BYTES_PER_SECOND` after :data:`UPLOAD_GRACE_SECONDS`: a dial-up modem
#: sends 8 MiB in well under the time this allows (about 9 minutes).
STALL_SECONDS = 10.0
UPLOAD_GRACE_SECONDS = 30.0
MIN_UPLOAD_BYTES_PER_SECOND = 16 * 1024
#: Bytes gathered before they are parsed (in a worker thread): a body of tiny chunks costs
#: one thread hand-off per this many bytes, not one per chunk.
PARSE_BATCH_BYTES = 64 * 1024
#: The fields the form has (any other part is read past, its bytes counted, never kept); the
#: late confirmation's form (:func:`carried`) sends the prepared source back as ``late_source``
#: with its ``filename`` and ``late=confirmed``.
FIELDS = frozenset({"exercise", "course", "key", "source", "file", "late", "late_source", "filename"})
#: What the confirmation's button sends: the learner saw the late rule and sends it anyway.
LATE_CONFIRMED = "confirmed"
#: The file name a pasted function is stored under.
PASTED = "pasted.py"
#: How the client's messages say to name the exercise, on this form.
CHOOSE_IN_FORM = ("choose the exercise in the form", "choose {slug} in the form")
#: What the form should be, for a body that is not it.
NOT_THE_FORM = "Send the form from your dashboard page (a file upload form)."


class UploadRefused(PageError):
    """The upload cannot be used as sent; the page says why, and links back to the form."""

    def __init__(self, status_code: int, text: str, back: str = "/dashboard") -> None:
        super().__init__(status_code, "Not submitted", text, link=("Back to your page", back))


@dataclass
class UploadWork:
    """What reading upload bodies has cost this process: counted, for the tests and the benchmark."""

    bodies: int = 0  # bodies whose reading began
    bytes_read: int = 0  # bytes pulled from them
    parts: int = 0  # parts whose headers were parsed


#: This process's count (read by tests and ``bench/bench_upload_parsers.py``).
WORK = UploadWork()


@dataclass(frozen=True)
class Upload:
    """The form as sent: its fields, and the file (name and bytes) if one was chosen."""

    fields: dict[str, str]
    filename: str | None
    content: bytes | None


def too_large(what: str, limit: int, back: str) -> UploadRefused:
    """The 413 for code over its cap, in the API's words."""
    return UploadRefused(413, f"{what} is over {limit} bytes; the limit is {limit} bytes ({limit // 1024} KiB).", back)


class UploadSlots:
    """How many upload bodies are being read, per learner and in all (thread-safe): a learner
    who opens many slow uploads gets 429 past :data:`MAX_UPLOADS_PER_USER`, before their body
    is read, and everyone's uploads together hold at most :data:`MAX_UPLOADS_IN_ALL` bodies."""

    def __init__(self, per_user: int = MAX_UPLOADS_PER_USER, in_all: int = MAX_UPLOADS_IN_ALL) -> None:
        self.per_user, self.in_all = per_user, in_all
        self.reading: dict[int, int] = {}
        self._lock = threading.Lock()

    @contextmanager
    def hold(self, user_id: int, back: str) -> Iterator[None]:
        """A slot for one body of ``user_id`` while the block runs; ``UploadRefused`` (429) when none is free."""
        with self._lock:
            mine = self.reading.get(user_id, 0)
            if mine >= self.per_user:
                raise UploadRefused(
                    429,
                    f"You are already sending {mine} uploads; wait for them to finish, then submit again.",
                    back,
                )
            if sum(self.reading.values()) >= self.in_all:
                raise UploadRefused(429, "The server is receiving many uploads; submit again in a minute.", back)
            self.reading[user_id] = mine + 1
        try:
            yield
        finally:
            with self._lock:
                left = self.reading[user_id] - 1
                if left:
                    self.reading[user_id] = left
                else:
                    del self.reading[user_id]


def upload_slots(request: Request) -> UploadSlots:
    """The app's slots, made on first use (one per app, never a module global)."""
    slots: UploadSlots | None = getattr(request.app.state, "upload_slots", None)
    if slots is None:
        slots = UploadSlots()
        request.app.state.upload_slots = slots
    return slots


def stalled(back: str) -> UploadRefused:
    """The 408 for a body that stopped arriving (or arrives too slowly to finish)."""
    return UploadRefused(
        408,
        f"The upload stopped arriving (nothing for {STALL_SECONDS:.0f} s, or under "
        f"{MIN_UPLOAD_BYTES_PER_SECOND // 1024} KiB/s): submit again; on a slow connection, "
        "clear the notebook's outputs first, or paste the function.",
        back,
    )


async def read_upload(request: Request, *, max_source_bytes: int, back: str) -> Upload:
    """The multipart form of ``POST /dashboard/submit``, parsed while it is read.

    Awaited on the event loop, holding no worker thread and no database connection while the
    body arrives (a slow sender costs a coroutine); each batch of bytes is parsed in a worker
    thread, never on the loop. A body that stalls is refused (:func:`stalled`). Call it only
    once the sender is known (the session, ``Origin`` and form token checked) and holds a slot
    (:class:`UploadSlots`): nothing before it reads the body.
    """
    content_type = request.headers.get("content-type", "")
    kind, params = parse_options_header(content_type[:300])
    boundary = params.get(b"boundary", b"")
    if kind != b"multipart/form-data" or len(content_type) > 300 or not 0 < len(boundary) <= 70:
        raise UploadRefused(400, NOT_THE_FORM, back)
    over = UploadRefused(
        413,
        f"The upload is over {MAX_UPLOAD_BYTES // 2**20} MiB; clear the notebook's "
        "outputs (Edit > Clear Outputs of All Cells) and save it, or paste the function.",
        back,
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_UPLOAD_BYTES:
        raise over
    form = FormReader(boundary, max_source_bytes=max_source_bytes, back=back)
    WORK.bodies += 1
    stream = request.stream()
    started = time.monotonic()
    read = 0
    batch = bytearray()
    refused: UploadRefused | None = None
    try:
        while (chunk := await _next_chunk(stream, started, read, back)) is not None:
            read += len(chunk)
            WORK.bytes_read += len(chunk)
            if read > MAX_UPLOAD_BYTES:
                raise refused or over
            if refused is None:
                batch += chunk
                if len(batch) >= PARSE_BATCH_BYTES:
                    refused = await _parse(form, bytes(batch))
                    batch.clear()
    except ClientDisconnect:
        raise UploadRefused(400, "The upload was cut off; submit again.", back) from None
    if refused is None and batch:
        refused = await _parse(form, bytes(batch))
    if refused is not None:
        raise refused
    return await anyio.to_thread.run_sync(form.finish)


async def _parse(form: FormReader, data: bytes) -> UploadRefused | None:
    """Feed ``data`` to ``form`` in a worker thread; the refusal it meets, if any. The rest of
    the body is then read (up to the cap, unparsed) so the browser, still sending, gets the
    page that says why rather than a reset connection."""
    try:
        await anyio.to_thread.run_sync(form.feed, data)
    except UploadRefused as exc:
        return exc
    return None


async def _next_chunk(stream: AsyncIterator[bytes], started: float, read: int, back: str) -> bytes | None:
    """The body's next chunk (None at its end), or ``stalled`` when it does not come within
    :data:`STALL_SECONDS`, or the body falls below the minimum rate."""
    allowed = started + UPLOAD_GRACE_SECONDS + read / MIN_UPLOAD_BYTES_PER_SECOND - time.monotonic()
    wait = min(STALL_SECONDS, allowed)
    if wait <= 0:
        raise stalled(back)
    try:
        with anyio.fail_after(wait):
            return await anext(stream, None)
    except TimeoutError:
        raise stalled(back) from None


@dataclass
class _Part:
    name: str | None = None
    filename: str | None = None
    limit: int = 0  # bytes kept; past it: refused (``refuse``) or cut (a short field)
    refuse: UploadRefused | None = None
    data: bytearray = field(default_factory=bytearray)
    headers: dict[bytes, bytes] = field(default_factory=dict)
    header: bytearray = field(default_factory=bytearray)
    value: bytearray = field(default_factory=bytearray)


class FormReader:
    """One form body fed chunk by chunk to ``python-multipart``'s parser, whose callbacks
    enforce the limits as the parts arrive: the work per chunk is linear in its bytes, and
    a refusal comes at the byte that breaks a limit, not after the body."""

    def __init__(self, boundary: bytes, *, max_source_bytes: int, back: str) -> None:
        self.max_source_bytes = max_source_bytes
        self.back = back
        self.fields: dict[str, str] = {}
        self.file: tuple[str, bytes] | None = None
        self.seen: set[str] = set()
        self.parts = 0
        self.part = _Part()
        self.parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._begin,
                "on_header_field": self._header_field,
                "on_header_value": self._header_value,
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": self._data,
                "on_part_end": self._end,
            },
            max_size=MAX_UPLOAD_BYTES,
            max_header_count=MAX_PART_HEADERS,
            max_header_size=MAX_HEADER_BYTES,
        )

    def feed(self, chunk: bytes) -> None:
        """Parse one chunk; ``UploadRefused`` at the first limit it breaks."""
        try:
            self.parser.write(chunk)
        except MultipartParseError:
            raise UploadRefused(400, NOT_THE_FORM, self.back) from None

    def finish(self) -> Upload:
        """The form, once the body has ended."""
        try:
            self.parser.finalize()
        except MultipartParseError:
            raise UploadRefused(400, NOT_THE_FORM, self.back) from None
        if not self.parts:
            raise UploadRefused(400, NOT_THE_FORM, self.back)
        name, content = self.file if self.file is not None else (None, None)
        return Upload(self.fields, name, content)

    # -- the parser's callbacks ---------------------------------------------------------------

    def _begin(self) -> None:
        self.parts += 1
        WORK.parts += 1
        if self.parts > MAX_PARTS:
            raise UploadRefused(400, NOT_THE_FORM, self.back)
        self.part = _Part()

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self.part.header += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self.part.value += data[start:end]

    def _header_end(self) -> None:
        part = self.part
        part.headers[bytes(part.header).strip().lower()] = bytes(part.value).strip()
        part.header, part.value = bytearray(), bytearray()

    def _headers_finished(self) -> None:
        part = self.part
        if part.headers.get(b"content-type", b"").lower().startswith(b"multipart/"):
            raise UploadRefused(
                400, "The form has a part made of parts (multipart inside multipart); " + NOT_THE_FORM, self.back
            )
        kind, params = parse_options_header(part.headers.get(b"content-disposition", b""))
        name = params.get(b"name", b"").decode("latin-1")
        if kind != b"form-data" or name not in FIELDS or name in self.seen:
            return  # read past: its bytes count toward the body's cap, nothing is kept
        self.seen.add(name)
        part.name = name
        if name == "file":
            part.filename = params.get(b"filename", b"").decode("utf-8", errors="replace")[:255]
            notebook = part.filename.lower().endswith(NOTEBOOK_SUFFIX)
            part.limit = MAX_NOTEBOOK_BYTES if notebook else self.max_source_bytes
            part.refuse = (
                UploadRefused(413, _sentence(notebook_too_large(_base_name(part.filename)).message), self.back)
                if notebook
                else too_large(_base_name(part.filename), self.max_source_bytes, self.back)
            )
        elif name == "source":
            part.limit = self.max_source_bytes
            part.refuse = too_large("The pasted code", self.max_source_bytes, self.back)
        elif name == "late_source":  # base64 of at most the source cap
            part.limit = 4 * (self.max_source_bytes // 3 + 1)
            part.refuse = too_large("The code", self.max_source_bytes, self.back)
        else:
            part.limit = 4 * MAX_FIELD_CHARS  # UTF-8: at most 4 bytes a character

    def _data(self, data: bytes, start: int, end: int) -> None:
        part = self.part
        if part.name is None:
            return
        room = part.limit - len(part.data)
        if end - start > room:
            if part.refuse is not None:
                raise part.refuse
            end = start + max(0, room)
        part.data += data[start:end]

    def _end(self) -> None:
        part = self.part
        if part.name == "file":
            if part.filename and part.data:
                self.file = (part.filename, bytes(part.data))
        elif part.name is not None:
            text = part.data.decode("utf-8", errors="replace")
            whole = part.name in ("source", "late_source")
            self.fields[part.name] = text if whole else text[:MAX_FIELD_CHARS].strip()
        self.part = _Part()


# --------------------------------------------------------------------------- the source


@dataclass(frozen=True)
class Prepared:
    """What the upload submits: the exercise, the source and the file name it is shown under."""

    exercise: str
    source: str
    filename: str


def _catalogue(visible: set[str] | None) -> list[dict[str, str]]:
    """The catalogue as ``notebook_format`` reads it (what ``GET /exercises`` lists to this
    learner): only ``visible`` slugs (None: all), so a refusal never names an exercise the
    learner may not see yet."""
    return [{"slug": x.slug, "function": x.function} for x in list_exercises() if visible is None or x.slug in visible]


def prepare(upload: Upload, back: str, *, max_source_bytes: int, visible: set[str] | None) -> Prepared:
    """The submission the upload makes; ``UploadRefused`` with one sentence when it makes none.

    The same bad inputs get the same sentences as ``ppo-submit`` gives for the same file (both
    are ``notebook_format``'s): a notebook that is not JSON, or over a cap, no exercise function,
    several, a name the function needs that no cell defines. Every cap is checked before the
    code is parsed: the source cap for a ``.py`` file and pasted code (already while the body was
    read), the notebook's size and cell caps (``notebook_format.reader``) before a cell is
    built, its code's caps per cell and in all (:func:`capped_cells`) before any cell is parsed.
    ``visible``: the slugs this learner may submit (None: all); a refusal names only those.
    """
    chosen = upload.fields.get("exercise") or None
    if upload.fields.get("late_source") and chosen:
        return _confirmed(upload, chosen, back, max_source_bytes)
    pasted = upload.fields.get("source", "")
    if upload.content is None and not pasted.strip():
        raise UploadRefused(400, "Choose a .py or .ipynb file, or paste your function.", back)
    name = _base_name(upload.filename) if upload.content is not None else PASTED
    try:
        if upload.content is not None and name.lower().endswith(NOTEBOOK_SUFFIX):
            cells = capped_cells(read_notebook(upload.content, name), name, max_source_bytes, back)
            module = module_of(cells, _catalogue(visible), exercise=chosen, name=name, choose=CHOOSE_IN_FORM)
            return Prepared(module.exercise, module.source, name)
        source = pasted if upload.content is None else _text(upload.content, name, back)
        if len(source.encode(errors="replace")) > max_source_bytes:  # read_upload refused it already, as it arrived
            raise too_large("The pasted code" if upload.content is None else name, max_source_bytes, back)
        names, error_line = defined_functions(source)
        exercise = chosen or match_functions(
            names,
            _catalogue(visible),
            filename=name if upload.content is not None else "The pasted code",
            syntax_error=None if error_line is None else f"line {error_line}",
            choose=CHOOSE_IN_FORM,
        )
        return Prepared(exercise, source, name)
    except SourceError as exc:
        raise UploadRefused(413 if isinstance(exc, OverCap) else 400, _sentence(exc.message), back) from None


@dataclass(frozen=True)
class LateAsk:
    """An upload to an exercise past its due date, not sent yet: the learner confirms it first
    (:func:`server.courses.sets.late_notice` says what it costs)."""

    prepared: Prepared
    course: str
    notice: str
    key: str


def carried(prepared: Prepared) -> str:
    """The prepared source as the late confirmation's form carries it back: base64, so that
    the browser sends it byte for byte (a textarea's text would come back with CRLF line ends)."""
    return base64.b64encode(prepared.source.encode("utf-8")).decode("ascii")


def _confirmed(upload: Upload, exercise: str, back: str, max_source_bytes: int) -> Prepared:
    """What the late confirmation's form sends back: the source prepared the first time (a
    notebook already made into its module), the exercise chosen then and the file's name."""
    try:
        source = base64.b64decode(upload.fields["late_source"], validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise UploadRefused(
            400, "The confirmation form was changed; submit your file again from your page.", back
        ) from None
    if len(source.encode()) > max_source_bytes:
        raise too_large("The code", max_source_bytes, back)
    return Prepared(exercise, source, _base_name(upload.fields.get("filename")))


def capped_cells(cells: list[Cell], name: str, max_source_bytes: int, back: str) -> list[Cell]:
    """``cells`` if no cell's code is over ``MAX_CELL_FACTOR`` times the source cap and all of it
    not over ``MAX_CODE_FACTOR`` times; else ``UploadRefused`` (413) naming the cell. Checked
    before a cell is parsed: the parse of a huge cell costs the server far more memory than
    its bytes (a syntax tree node per name). How many cells there are is the reader's cap
    (``notebook_format.reader.MAX_CELLS``)."""
    per_cell, in_all = MAX_CELL_FACTOR * max_source_bytes, MAX_CODE_FACTOR * max_source_bytes
    total = 0
    for cell in cells:
        size = len(cell.source.encode(errors="replace"))
        if size > per_cell:
            raise UploadRefused(
                413,
                f"{cell.label} of {name} has {size} bytes of code; the limit is {per_cell} bytes "
                f"({per_cell // 1024} KiB) a cell: move what the exercise does not need out of the "
                "notebook (or split the cell), or upload the function as a .py file.",
                back,
            )
        total += size
        if total > in_all:
            raise UploadRefused(
                413,
                f"The code cells of {name} have more than {in_all} bytes of code; the limit is {in_all} "
                f"bytes ({in_all // 1024} KiB): keep the exercise's work in a smaller notebook, or upload "
                "the function as a .py file.",
                back,
            )
    return cells


def stored_key(upload: Upload) -> str | None:
    """The idempotency key an upload is stored under: the form's ``key`` and a digest of what
    was sent, so a replay (the same key) is recognised before anything is built, and a
    replay of different content (:func:`replayed_key`) is told apart from a true retry."""
    key = upload.fields.get("key")
    if not key:
        return None
    digest = hashlib.sha256()
    sent = ["exercise", "course", "source"] + (["late_source", "filename"] if "late_source" in upload.fields else [])
    for part in (upload.filename or "", *(upload.fields.get(f, "") for f in sent)):
        encoded = part.encode(errors="replace")
        digest.update(len(encoded).to_bytes(8, "big") + encoded)
    digest.update(upload.content or b"")
    return f"{key}{KEY_SEPARATOR}{digest.hexdigest()[:32]}"


#: Between the form's key and the digest of what it sent, in a stored idempotency key.
KEY_SEPARATOR = "#"


def _base_name(filename: str | None) -> str:
    base = (filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return base or "upload.py"


def _text(content: bytes, name: str, back: str) -> str:
    try:
        return content.decode("utf-8-sig")  # a BOM (Windows editors) is not part of the file
    except UnicodeDecodeError:
        raise UploadRefused(400, f"{name} is not UTF-8 text; save it as UTF-8 and upload it again.", back) from None


def _sentence(message: str) -> str:
    return message if message.endswith((".", "?", "!")) else message + "."
