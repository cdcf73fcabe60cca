"""docker-compose.yml: structure, security settings, and that its services run the same
commands the scale-out tests start. With Debian's ``docker-compose`` installed (CI:
.ci/install-extra.sh) it is also validated by ``docker-compose config``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.scaleout.commands import API_COMMAND, GPU_WORKER_COMMAND, MIGRATE_COMMAND, WORKER_COMMAND

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_and_their_commands_are_the_tested_ones(compose: dict) -> None:
    services = compose["services"]
    assert set(services) == {"db", "migrate", "api", "worker", "gpu-worker"}
    assert services["migrate"]["command"] == MIGRATE_COMMAND
    assert services["api"]["command"] == API_COMMAND
    assert services["worker"]["command"] == WORKER_COMMAND
    assert services["gpu-worker"]["command"] == GPU_WORKER_COMMAND
    assert services["db"]["image"].startswith("postgres:")


def test_migrations_run_once_before_api_and_workers(compose: dict) -> None:
    services = compose["services"]
    assert services["migrate"]["restart"] == "no"
    for name in ("api", "worker", "gpu-worker"):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully"
        assert depends["db"]["condition"] == "service_healthy"


def test_worker_scales_and_gpu_worker_is_a_profile_reserving_nvidia(compose: dict) -> None:
    worker = compose["services"]["worker"]
    assert "container_name" not in worker and "ports" not in worker  # --scale worker=N works
    gpu = compose["services"]["gpu-worker"]
    assert gpu["profiles"] == ["gpu"]
    (device,) = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]


def test_health_checks_secrets_and_production_mode(compose: dict) -> None:
    services = compose["services"]
    for name in ("db", "api", "worker", "gpu-worker"):
        assert "test" in services[name]["healthcheck"], name
    for name in ("migrate", "api", "worker", "gpu-worker"):
        service = services[name]
        assert service["env_file"] == ["deploy/ppo-grader.env"]
        assert service["environment"]["PPO_GRADER_ENVIRONMENT"] == "production"
        assert service["environment"]["PPO_GRADER_QUEUE"] == "procrastinate"
        assert "SECRET_KEY" not in json.dumps(service["environment"])  # only from the env file
    example = (ROOT / "deploy" / "ppo-grader.env.example").read_text()
    assert "PPO_GRADER_SECRET_KEY=" in example and "POSTGRES_PASSWORD=" in example


def test_jail_runs_unprivileged_with_a_custom_seccomp_profile(compose: dict) -> None:
    for name in ("worker", "gpu-worker"):
        service = compose["services"][name]
        assert service["cap_drop"] == ["ALL"] and "cap_add" not in service
        assert not service.get("privileged", False)
        options = service["security_opt"]
        assert "seccomp=./deploy/seccomp-bwrap.json" in options
        assert "systempaths=unconfined" in options and "seccomp=unconfined" not in options
    for name in ("api", "migrate"):
        assert "seccomp=./deploy/seccomp-bwrap.json" not in compose["services"][name]["security_opt"]
    profile = json.loads((ROOT / "deploy" / "seccomp-bwrap.json").read_text())
    allowed = {n for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ALLOW" for n in rule["names"]}
    denied = {n for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ERRNO" for n in rule["names"]}
    assert {"clone", "unshare", "mount", "pivot_root"} <= allowed
    assert {"bpf", "kexec_load", "init_module", "ptrace", "keyctl"} <= denied and not allowed & denied
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "bubblewrap" in dockerfile and "torch==${TORCH_VERSION}" in dockerfile and "USER 10001" in dockerfile
    assert "ARG TORCH_VERSION=2.13.0" in dockerfile and "whl/cpu" in dockerfile


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose not installed (.ci/install-extra.sh)")
def test_docker_compose_config_validates(tmp_path: Path) -> None:
    shutil.copy(ROOT / "docker-compose.yml", tmp_path / "docker-compose.yml")
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    shutil.copy(tmp_path / "deploy" / "ppo-grader.env.example", tmp_path / "deploy" / "ppo-grader.env")
    env = {"PATH": "/usr/bin:/bin"}  # docs/deploy.md's commands as written: no secret in the shell
    for profile in ([], ["--profile", "gpu"]):
        result = subprocess.run(
            ["docker-compose", *profile, "config"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        # What docker-compose itself resolves (YAML merge keys included): the grading
        # services get the jail's options, the others keep Docker's defaults.
        services = yaml.safe_load(result.stdout)["services"]
        for name, service in services.items():
            jail = name in ("worker", "gpu-worker")
            options = {o.replace(":", "=", 1) for o in service.get("security_opt", [])}  # it writes seccomp:...
            assert ("seccomp=./deploy/seccomp-bwrap.json" in options) == jail, name
            assert ("systempaths=unconfined" in options) == jail, name
        assert services["api"]["ports"][0]["published"] == 8000
        # The secrets reach the services from the env file, the database URL with its password.
        assert services["api"]["environment"]["PPO_GRADER_METRICS_TOKEN"] == "change-me-metrics-token"
        for name in ("migrate", "api", "worker"):
            url = services[name]["environment"]["PPO_GRADER_DATABASE_URL"]
            assert url == "postgresql+psycopg://ppo:change-me-database-password@db:5432/ppo_grader", name
        assert services["db"]["environment"]["POSTGRES_PASSWORD"] == "change-me-database-password"


def test_the_compose_file_takes_no_secret_from_the_shell() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    substituted = set(re.findall(r"\$\{([A-Z_]+)", text))
    assert substituted <= {"PPO_GRADER_PUBLISH", "PPO_GRADER_GPU_TORCH_INDEX"}, substituted  # defaults, not secrets
    example = (ROOT / "deploy" / "ppo-grader.env.example").read_text()
    for secret in ("PPO_GRADER_SECRET_KEY=", "POSTGRES_PASSWORD=", "PPO_GRADER_DATABASE_URL=", "PPO_GRADER_METRICS_TOKEN="):
        assert secret in example, secret
