"""A roster import as a terminal reads it (``ppo-grader users import``, ``courses enroll``).

stdout gets one CSV row per created user with their token (shown once), so the file can be
kept; stderr gets one line per row that was enrolled or skipped, each skipped one with its line
number and reason, then a summary. An import that skipped any row is a failed command (the
CLI exits 1): the rows that were fine are created and their tokens printed, and the author
fixes the skipped lines and imports again (their names are free, so nothing is doubled).
"""

from __future__ import annotations

from dataclasses import dataclass

from server.users.service import RosterOutcome

TOKEN_HEADER = ["name", "display_name", "role", "token"]
#: How much of a refused cell a line quotes: a 10 kB "name" must not flood the terminal.
_QUOTED_CHARS = 80


@dataclass(frozen=True)
class RosterLines:
    """What the CLI prints for one import, and whether it failed."""

    token_rows: list[list[str]]
    notes: list[str]
    skipped: list[str]
    summary: str

    @property
    def failed(self) -> bool:
        """Some row was skipped: the command exits non-zero."""
        return bool(self.skipped)


def roster_lines(outcomes: list[RosterOutcome]) -> RosterLines:
    """The terminal's report of ``outcomes`` (``server.users.service.import_roster``)."""
    rows, notes, skipped = [], [], []
    for o in outcomes:
        shown = repr(o.name[:_QUOTED_CHARS] + ("..." if len(o.name) > _QUOTED_CHARS else ""))
        if o.token is not None:
            rows.append([o.name, o.display_name, o.role.value if o.role else "", o.token])
        elif o.course is not None:
            notes.append(f"line {o.line}: enrolled existing user {shown} in {o.course!r}")
        else:
            skipped.append(f"line {o.line}: skipped {shown}: {o.error}")
    enrolled = len(notes)
    summary = (
        f"Created {len(rows)} user(s); enrolled {enrolled} existing; skipped {len(skipped)}. Tokens are shown only now."
    )
    if skipped:
        lines = ", ".join(line.split(":", 1)[0].removeprefix("line ") for line in skipped)
        summary += (
            f" Not imported: line{'s' if len(skipped) != 1 else ''} {lines} (listed above); fix "
            f"{'them' if len(skipped) != 1 else 'it'} and import those rows again."
        )
    return RosterLines(rows, notes, skipped, summary)
