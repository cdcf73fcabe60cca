"""The client installs and imports on its own: no torch, no server code."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from .fakes import SERVER, TOKEN, FakeGrader


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
        "loaded = [m for m in ('IPython', 'nbformat', 'ipykernel', 'torch', 'notebook_format.closure')\n"
        "          if m in sys.modules and type(sys.modules[m]).__name__ != '_LazyModule']\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, capture_output=True)


class _Bridge(http.server.BaseHTTPRequestHandler):
    """Serves the fake grader over real HTTP, so that the real ``main()`` runs in a fresh
    interpreter exactly as a learner's terminal starts it."""

    grader = FakeGrader(polls_before_done=0)

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = httpx.Request(self.command, f"{SERVER}{self.path}", headers=dict(self.headers.items()),
                                content=self.rfile.read(length))
        response = self.grader.handle(request)
        self.send_response(response.status_code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(response.content)))
        self.end_headers()
        self.wfile.write(response.content)

    do_GET = do_POST = _serve

    def log_message(self, format: str, *args: object) -> None:
        pass


#: Modules a ``ppo-submit FILE`` of a ``.py`` file must not load: httpx's own command-line tool
#: (with click and Pygments), the notebook machinery, and anything of the grader's.
_HEAVY = ("httpx._main", "click", "pygments", "ppo_submit.notebook_file", "notebook_format.closure",
          "nbformat", "torch", "server", "exercises", "sandbox")


def test_submitting_a_file_loads_only_what_it_needs(tmp_path: Path) -> None:
    """The real entry point submits a ``.py`` file over real HTTP and shows its verdict, having
    loaded none of ``_HEAVY`` and no CA bundle (a plain-HTTP server never uses one)."""
    solution = tmp_path / "solution.py"
    solution.write_text("def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\n"
                        "    return 0\n")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Bridge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    code = (
        "import ssl, sys\n"
        "loads = []\n"
        "real = ssl.SSLContext.load_verify_locations\n"
        "def counting(self, *args, **kwargs):\n"
        "    loads.append(args)\n"
        "    return real(self, *args, **kwargs)\n"
        "ssl.SSLContext.load_verify_locations = counting\n"
        "from ppo_submit.cli import main\n"
        f"sys.argv = ['ppo-submit', {str(solution)!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        f"heavy = [m for m in {_HEAVY!r} if m in sys.modules and sys.modules[m] is not None\n"
        "         and type(sys.modules[m]).__name__ != '_LazyModule']\n"
        "assert not heavy, heavy\n"
        "assert not loads, loads\n"
    )
    env = {**os.environ, "PPO_GRADER_URL": f"http://127.0.0.1:{server.server_address[1]}",
           "PPO_GRADER_TOKEN": TOKEN, "XDG_CONFIG_HOME": str(tmp_path), "NO_COLOR": "1"}
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, timeout=60, capture_output=True, text=True)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    assert "Score: 100 / 100" in done.stdout
