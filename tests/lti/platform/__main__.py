"""``python -m tests.lti.platform``: serve the test platform (``app.py``) on ``PLATFORM_PORT``,
in its own process, with its own keys (made at start)."""

import os

import uvicorn

from tests.lti.platform.app import app_from_env

if __name__ == "__main__":
    uvicorn.run(app_from_env(), host="127.0.0.1", port=int(os.environ["PLATFORM_PORT"]), log_level="warning")
