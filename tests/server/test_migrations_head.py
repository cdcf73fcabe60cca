"""The fast path of ``upgrade_to_head`` (a database at the head costs one query, no Alembic)
reads the same head as Alembic, and leaves everything else to Alembic."""

from __future__ import annotations

import subprocess
import sys

from alembic.script import ScriptDirectory
from sqlalchemy import text

from server.config import Settings
from server.db import make_engine
from server.migrations import alembic_config, at_head, head_revision, upgrade_to_head


def test_the_head_read_from_the_files_is_alembics() -> None:
    assert head_revision() == ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_only_a_database_at_the_head_skips_alembic(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    try:
        assert not at_head(engine)  # a new database: Alembic creates everything
        upgrade_to_head(engine)
        assert at_head(engine)
        with engine.begin() as conn:  # a database one revision behind goes to Alembic again
            conn.execute(text("UPDATE alembic_version SET version_num = '0017'"))
        assert not at_head(engine)
    finally:
        engine.dispose()


def test_opening_an_up_to_date_database_does_not_import_alembic(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    upgrade_to_head(engine)
    engine.dispose()
    probe = (
        "import sys; from server.db import make_engine; from server.migrations import upgrade_to_head; "
        f"upgrade_to_head(make_engine({settings.DATABASE_URL!r})); print('alembic' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"
