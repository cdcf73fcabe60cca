"""Names the dead-code check (tests/test_lint.py::test_nothing_is_dead_code, vulture) cannot
see used, each with who uses it. Read by vulture as source, never imported or run. Keep it
short: code nothing calls is deleted, not listed here."""

# ruff: noqa
# Called by a framework, by protocol or by name:
_.process_bind_param  # SQLAlchemy's TypeDecorator (server/models/base.py: UTCDateTime)
_.process_result_value
_.collect  # prometheus_client's collector protocol (server/health/metrics.py)
type_  # Alembic's include_name(name, type_, parent_names) (server/migrations/__init__.py)
_.connect_unix_socket  # httpcore's NetworkBackend protocol (server/lti/http.py: the deadline backend)
exc_type  # the context-manager protocol's __exit__ arguments (client/ppo_submit/api.py)
_.list_commands  # click's group protocol (server/cli/__init__.py: the root lists its commands unbuilt)

# Kept on purpose for the tests and operators that use them:
_.health  # ppo_submit.api.Client.health, GET /health from the client library (tests/client/test_api.py)
_.sandbox_pools  # the judge's warm jail pools, which the hostile tests inspect (tests/hostile/conftest.py)
installation_root  # server.location: a checkout's own folder (tests/server/test_location.py)
feedback_html  # server.submissions.report_page: the web fragment the feedback snapshots read
