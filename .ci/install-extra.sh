#!/usr/bin/env bash
# The test tools beyond pytest (called by scripts/test only; scripts/serve never installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
apt_install() {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
# The compose check (scripts/compose-check, tests/compose): Debian's Docker engine and
# docker-compose (v1), and debootstrap for the stand-in base images when no image registry
# is reachable.
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
# The instructors' leaderboard page is tested in Debian's headless Chromium driven by
# Playwright (tests/server/dashboard/test_web.py, slow). The Python package bundles its driver;
# never `playwright install` (it downloads its own browsers): the test uses /usr/bin/chromium.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# The notebook feedback test (tests/notebook/test_feedback_browser.py) reads the text of
# Chromium's screenshots with Debian's Tesseract OCR, the light and the dark theme alike.
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr)
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-extra: apt-get install ${missing[*]}" >&2
  apt_install "${missing[@]}"
fi
# schemathesis: the property-based API fuzz run (tests/server/test_openapi_fuzz.py, slow).
.venv/bin/python -m pip install -q -c constraints.txt "schemathesis>=4,<5" playwright
# The client's notebook extra (nbformat), for `ppo-submit notebook.ipynb` in the tests.
.venv/bin/python -m pip install -q -c constraints.txt -e "./client[notebook]"
