"""The service commands, as the tests start them and as docker-compose.yml runs them
(tests/scaleout/test_compose.py checks that the two agree)."""

API_COMMAND = ["ppo-grader", "serve", "--host", "0.0.0.0", "--port", "8000"]
WORKER_COMMAND = ["ppo-grader", "worker", "--queue", "cpu", "--concurrency", "1"]
GPU_WORKER_COMMAND = ["ppo-grader", "worker", "--queue", "gpu", "--concurrency", "1"]
MIGRATE_COMMAND = ["ppo-grader", "migrate"]
