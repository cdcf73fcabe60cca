"""Serving installs only what serving needs; the tests add their tools; torch is a range in
the package and the CPU 2.13.0 build in every install this repository makes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST_ONLY = ("chromium", "docker", "debootstrap", "playwright", "schemathesis", "install-extra", "iptables")


def _code(path: Path) -> str:
    """The script without its comments."""
    return "\n".join(line.split("#", 1)[0] for line in path.read_text().splitlines())


def test_serve_installs_the_runtime_only() -> None:
    serve, bootstrap = _code(ROOT / "scripts" / "serve"), _code(ROOT / "scripts" / "bootstrap")
    assert "scripts/bootstrap" in serve and "scripts/test" not in serve
    for word in TEST_ONLY:
        assert word not in serve and word not in bootstrap, word
    assert re.search(r"apt-get install .*--no-install-recommends bubblewrap", bootstrap)
    assert "-c constraints.txt" in bootstrap and "[dev" not in bootstrap


def test_test_script_adds_the_test_tools() -> None:
    test, extra = _code(ROOT / "scripts" / "test"), _code(ROOT / ".ci" / "install-extra.sh")
    assert "scripts/bootstrap" in test and ".ci/install-extra.sh" in test and "[dev,postgres]" in test
    for tool in ("docker.io", "docker-compose", "debootstrap", "chromium", "schemathesis", "playwright"):
        assert tool in extra, tool
    assert "playwright install" not in extra


def test_torch_is_a_range_in_the_package_and_pinned_to_cpu_2_13_in_installs() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (torch,) = [d for d in deps if re.match(r"torch\b", d)]
    assert ">=" in torch and "==" not in torch
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert [p for p in pins if p.startswith("torch")] == ["torch==2.13.0+cpu"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ARG TORCH_VERSION=2.13.0\n" in dockerfile
    assert "ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu\n" in dockerfile
    # The image's other dependencies install under the same constraints (less the torch pin).
    assert "pip install --no-cache-dir -c /tmp/constraints.txt -r /tmp/requirements.txt" in dockerfile
    assert "grep -v '^torch==' constraints.txt" in dockerfile
