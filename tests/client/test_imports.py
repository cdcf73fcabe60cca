"""The client installs and imports on its own: no torch, no server code."""

from __future__ import annotations

import subprocess
import sys


def test_cli_imports_neither_torch_nor_grader_code() -> None:
    code = (
        "import ppo_submit.cli, sys\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'server', 'exercises', 'sandbox')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
