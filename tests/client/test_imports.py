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


def test_help_loads_neither_rich_nor_httpx() -> None:
    """Start-up is mostly imports: ``--help`` and argument parsing must not pay for Rich (tables,
    live status) or httpx (requests), which load when a command first needs them."""
    code = (
        "import sys\n"
        "from ppo_submit.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = [m for m in ('rich', 'httpx', 'platformdirs', 'ppo_submit.render')\n"
        "          if m in sys.modules and type(sys.modules[m]).__name__ != '_LazyModule']\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, capture_output=True)


def test_the_written_version_is_the_installed_one() -> None:
    from importlib.metadata import version

    import ppo_submit

    assert ppo_submit.__version__ == version("ppo-submit")


def test_notebook_support_loads_ipython_and_nbformat_only_when_used() -> None:
    """``import ppo_submit`` / ``ppo_submit.notebook`` and the CLI cost nothing more for notebooks:
    IPython loads when a kernel calls ``submit``, nbformat when a ``.ipynb`` is read or written."""
    code = (
        "import sys\n"
        "import ppo_submit, ppo_submit.notebook, ppo_submit.cli\n"
        "from ppo_submit.cli import main\n"
        "try:\n"
        "    main(['submit', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = [m for m in ('IPython', 'nbformat', 'ipykernel', 'torch', 'ppo_submit.closure')\n"
        "          if m in sys.modules and type(sys.modules[m]).__name__ != '_LazyModule']\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, capture_output=True)
