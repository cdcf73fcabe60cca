#!/usr/bin/env bash
# Extra tools some tests use when present (called by a colleague's CI script).
set -euo pipefail
# Debian's docker-compose (v1): `docker-compose config` validates docker-compose.yml
# without a Docker engine (tests/scaleout/test_compose.py).
if ! command -v docker-compose >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq docker-compose
fi
# schemathesis: the property-based API fuzz run (tests/instructor/test_openapi_fuzz.py, slow).
.venv/bin/pip install -q "schemathesis>=4,<5"
# The instructors' leaderboard page is tested in Debian's headless Chromium driven by
# Playwright (tests/instructor/test_web.py, slow). The Python package bundles its driver;
# never `playwright install` (it downloads its own browsers): the test uses /usr/bin/chromium.
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
if ! .venv/bin/python -c "import playwright" >/dev/null 2>&1; then
  .venv/bin/pip install -q playwright
fi
