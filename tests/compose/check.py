"""The compose check: docker-compose.yml run for real on this machine, graded end to end.

Run it as ``scripts/compose-check`` (after ``scripts/test`` installed the tools). Steps, each
printed with its duration:

1. Start ``dockerd`` if none answers (and stop it at the end if this check started it).
2. Base images: use ``python:3.11-slim-bookworm`` and ``postgres:15`` when present or
   pullable; otherwise build stand-ins under those names from a debootstrapped bookworm
   (tests/compose/standins/; test tooling only, users pull the official images).
3. ``docker build`` the real Dockerfile. Where PyTorch's CPU index is unreachable, the
   build's pip reads a wheelhouse served on loopback (the host's own CPU torch wheel and
   PyPI wheels, through ``--build-arg TORCH_INDEX / PIP_INDEX_URL``; the Dockerfile is unchanged).
4. ``docker-compose up`` the real docker-compose.yml, plus tests/compose/docker-compose.check.yml
   (what it changes and why is written in it), in a scratch project directory holding a
   generated deploy/ppo-grader.env, so the checkout's own env file is never read or touched.
   Wait until every service is healthy.
5. Create an instructor and a learner with ``ppo-grader users add`` inside the api container.
6. From the host, with the real ``ppo-submit``: a correct and a wrong actor-loss and a
   correct GAE file; assert verdicts, scores and the mistake named.
7. ``--scale worker=2``; 20 more submissions, every one graded.
8. A slow submission; kill the worker container that claimed it; the other worker finishes it.
9. ``docker-compose down -v``; no container, network or volume of the project is left, and
   no dangling image (the base images and the grader image stay: they are the cache).

All traffic stays on this machine: the API is published on 127.0.0.1 only, the containers
talk over the compose project's own network, the wheelhouse listens on 127.0.0.1.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

PROJECT = os.environ.get("COMPOSE_CHECK_PROJECT", "ppogradercheck")
API_PORT = int(os.environ.get("COMPOSE_CHECK_API_PORT", "18743"))
#: Fixed, because the torch layer's build cache is keyed on the TORCH_INDEX build argument.
WHEEL_PORT = int(os.environ.get("COMPOSE_CHECK_WHEEL_PORT", "18744"))
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ppo-grader" / "compose-check"
IMAGE = "ppo-grader:latest"
TORCH_PIN = "torch==2.13.0+cpu"
MINBASE = "ppo-grader-standin/bookworm:minbase"
STANDINS = {"python:3.11-slim-bookworm": "python.Dockerfile", "postgres:15": "postgres.Dockerfile"}
DEBIAN_MIRROR = os.environ.get("COMPOSE_CHECK_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SCALED_SUBMISSIONS = 20
SLOW_SECONDS = 8
#: Slow submissions tried before the check gives up finding one still running at the kill.
KILL_TRIES = 3

_START = time.monotonic()


class CheckFailed(AssertionError):
    """A step of the check did not do what it must."""


def say(message: str) -> None:
    print(f"[compose-check {time.monotonic() - _START:7.1f}s] {message}", flush=True)


def run(cmd: Sequence[str], *, check: bool = True, env: dict[str, str] | None = None,
        timeout: float = 900, cwd: Path | None = None, quiet: bool = False) -> subprocess.CompletedProcess[str]:
    """Run a command, capturing its output; on failure show it and raise."""
    done = subprocess.run(list(cmd), capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
    if check and done.returncode != 0:
        raise CheckFailed(f"{' '.join(cmd)} exited {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    if not quiet and done.returncode != 0:
        say(f"(exit {done.returncode}) {' '.join(cmd)}: {done.stderr.strip()[-500:]}")
    return done


@contextmanager
def step(title: str) -> Iterator[None]:
    began = time.monotonic()
    say(f"-> {title}")
    yield
    say(f"<- {title}: {time.monotonic() - began:.1f}s")


def wait_for(what: str, probe: Callable[[], bool], timeout: float, every: float = 1.0) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise CheckFailed(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


# -- 1. the Docker engine ------------------------------------------------------------------


def docker_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


def start_dockerd() -> subprocess.Popen[bytes] | None:
    """Start dockerd unless one answers; returns the process this check started, if any."""
    if docker_answers():
        say("dockerd already running")
        return None
    if shutil.which("dockerd") is None:
        raise CheckFailed("dockerd is not installed (scripts/test installs docker.io)")
    CACHE.mkdir(parents=True, exist_ok=True)
    log = open(CACHE / "dockerd.log", "ab")
    proc = subprocess.Popen(["dockerd"], stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    wait_for("dockerd to answer", lambda: proc.poll() is None and docker_answers() or proc.poll() is not None, 90)
    if proc.poll() is not None:
        raise CheckFailed(f"dockerd exited {proc.returncode}; see {CACHE / 'dockerd.log'}")
    say(f"started dockerd (pid {proc.pid}, log {CACHE / 'dockerd.log'})")
    return proc


def stop_dockerd(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    say("stopped the dockerd this check started")


def versions() -> str:
    engine = run(["docker", "version", "--format", "client {{.Client.Version}}, engine {{.Server.Version}}"]).stdout.strip()
    compose = run(["docker-compose", "version", "--short"]).stdout.strip()
    return f"docker {engine}; docker-compose {compose}"


# -- 2. base images ------------------------------------------------------------------------


def image_exists(name: str) -> bool:
    return run(["docker", "image", "inspect", name], check=False, quiet=True).returncode == 0


def build_minbase() -> None:
    """A minimal bookworm root filesystem from Debian's mirror, imported as an image."""
    if shutil.which("debootstrap") is None:
        raise CheckFailed("debootstrap is not installed (scripts/test installs it)")
    with tempfile.TemporaryDirectory(prefix="ppo-minbase-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        run(["debootstrap", "--variant=minbase", "bookworm", str(rootfs), DEBIAN_MIRROR], timeout=1200)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (rootfs / junk).glob("*"):
                if path.is_file():
                    path.unlink()
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(
            ["docker", "import", "--change", "ENV LANG=C.UTF-8", "--change", 'CMD ["bash"]', "-", MINBASE],
            stdin=tar.stdout, capture_output=True, text=True,
        )
        tar.wait()
        if imported.returncode != 0 or tar.returncode != 0:
            raise CheckFailed(f"docker import failed: {imported.stderr}")


def ensure_base_images() -> None:
    for name, dockerfile in STANDINS.items():
        if image_exists(name):
            label = run(["docker", "image", "inspect", "--format",
                         '{{index .Config.Labels "org.ppo-grader.stand-in"}}', name]).stdout.strip()
            say(f"{name}: present ({'stand-in, cached' if label and label != '<no value>' else 'official'})")
            continue
        if run(["docker", "pull", name], check=False, quiet=True, timeout=120).returncode == 0:
            say(f"{name}: pulled")
            continue
        say(f"{name}: no registry reachable; building a stand-in from Debian's packages")
        if not image_exists(MINBASE):
            build_minbase()
        run(["docker", "build", "-q", "--force-rm", "--network", "host", "-t", name, "-f", dockerfile, "."], cwd=HERE / "standins")


# -- 3. the grader image -------------------------------------------------------------------


def reachable(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=5).close()
        return True
    except Exception:
        return False


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def image_requirements() -> list[str]:
    """What the Dockerfile's pip installs fetch: torch (pinned), the package's dependencies
    with its postgres extra (read from pyproject.toml the way the Dockerfile reads them),
    and the build backend."""
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    deps = [d for d in project["dependencies"] if not re.match(r"torch\b", d)]
    return [TORCH_PIN, *deps, *project["optional-dependencies"]["postgres"], *pyproject["build-system"]["requires"]]


def prepare_wheelhouse() -> Path:
    """Every wheel the image's build needs, fetched by the host's pip (its configuration,
    its local CPU torch wheel, its certificates), laid out as a PEP 503 index."""
    house = CACHE / "wheelhouse"
    files = house / "files"
    requirements = image_requirements()
    # The Dockerfile installs under constraints.txt less its torch line; so does the download,
    # or the wheelhouse could hold a newer version than the image's pip is allowed to take.
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#") and not line.startswith("torch==")]
    stamp = house / "requirements.txt"
    wanted = "\n".join(requirements + pins)
    if not stamp.exists() or stamp.read_text() != wanted:
        files.mkdir(parents=True, exist_ok=True)
        house.mkdir(parents=True, exist_ok=True)
        (house / "constraints.txt").write_text("\n".join(pins) + "\n")
        run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--dest", str(files),
             "-c", str(house / "constraints.txt"), *requirements], timeout=1800)
        stamp.write_text(wanted)
    simple = house / "simple"
    shutil.rmtree(simple, ignore_errors=True)
    projects: dict[str, list[str]] = {}
    for wheel in sorted(files.glob("*.whl")):
        projects.setdefault(_normalize(wheel.name.split("-")[0]), []).append(wheel.name)
    for project, names in projects.items():
        (simple / project).mkdir(parents=True)
        links = "".join(f'<a href="../../files/{urllib.parse.quote(n)}">{html.escape(n)}</a>\n' for n in names)
        (simple / project / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    return house


@contextmanager
def serve_wheelhouse(house: Path) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", WHEEL_PORT), functools.partial(Quiet, directory=str(house)))
    except OSError as exc:
        raise CheckFailed(f"cannot serve the wheelhouse on 127.0.0.1:{WHEEL_PORT} ({exc.strerror}); "
                          "set COMPOSE_CHECK_WHEEL_PORT to a free port") from None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{WHEEL_PORT}/simple"
    finally:
        server.shutdown()
        server.server_close()


def build_image() -> None:
    """``docker build`` the real Dockerfile. Where PyTorch's CPU index is unreachable (here)
    the build's pip installs read a loopback wheelhouse instead (build arguments only);
    that also spares the build the host's TLS-intercepting proxy, whose certificate the
    base image does not trust."""
    args = ["docker", "build", "--force-rm", "--network", "host", "-t", IMAGE]
    if reachable("https://download.pytorch.org/whl/cpu/torch/") and not os.environ.get("COMPOSE_CHECK_WHEELHOUSE"):
        run([*args, str(ROOT)], timeout=1800)
        return
    house = prepare_wheelhouse()
    with serve_wheelhouse(house) as index:
        say(f"PyTorch's CPU index is unreachable: pip in the build reads the host's wheels, served at {index}")
        run([*args, "--build-arg", f"TORCH_INDEX={index}", "--build-arg", f"PIP_INDEX_URL={index}", str(ROOT)],
            timeout=1800)


def image_size() -> str:
    size = int(run(["docker", "image", "inspect", "--format", "{{.Size}}", IMAGE]).stdout)
    return f"{size / 1e6:.0f} MB"


# -- 4. compose ----------------------------------------------------------------------------


class Compose:
    """docker-compose on the real file plus the check's override, in a scratch directory."""

    def __init__(self, workdir: Path) -> None:
        from tests.compose.compose_v1_shim import ComposeV1Shim

        self.workdir = workdir
        deploy = workdir / "deploy"
        deploy.mkdir(parents=True)
        shutil.copy(ROOT / "deploy" / "seccomp-bwrap.json", deploy / "seccomp-bwrap.json")
        self.password = secrets.token_urlsafe(24)
        env_lines = [
            f"PPO_GRADER_SECRET_KEY={secrets.token_urlsafe(48)}",
            f"POSTGRES_PASSWORD={self.password}",
            f"PPO_GRADER_DATABASE_URL=postgresql+psycopg://ppo:{self.password}@db:5432/ppo_grader",
            f"PPO_GRADER_METRICS_TOKEN={secrets.token_urlsafe(24)}",
            # 20 submissions from one learner at once, and a dead worker noticed in seconds.
            "PPO_GRADER_MAX_QUEUED_PER_USER=100",
            "PPO_GRADER_RATE_LIMIT=1000/minute",
            "PPO_GRADER_WORKER_HEARTBEAT_SECONDS=2",
            "PPO_GRADER_WORKER_STALLED_SECONDS=8",
            "PPO_GRADER_WORKER_REAPER_SECONDS=2",
        ]
        (deploy / "ppo-grader.env").write_text("\n".join(env_lines) + "\n")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(workdir),
            "PPO_GRADER_PUBLISH": f"127.0.0.1:{API_PORT}",
        }
        self.shim: ComposeV1Shim | None = None
        if run(["docker-compose", "version", "--short"]).stdout.startswith("1."):
            self.shim = ComposeV1Shim()
            self.env["DOCKER_HOST"] = self.shim.url
            say(f"docker-compose v1: systempaths=unconfined translated as compose v2 does it ({self.shim.url})")

    def close(self) -> None:
        if self.shim is not None:
            self.shim.close()

    def __call__(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        cmd = ["docker-compose", "--project-name", PROJECT, "--project-directory", str(self.workdir),
               "-f", str(ROOT / "docker-compose.yml"), "-f", str(HERE / "docker-compose.check.yml"), *args]
        return run(cmd, env=self.env, check=check, timeout=timeout, cwd=self.workdir)

    def containers(self, service: str) -> list[str]:
        out = self("ps", "-q", service).stdout.split()
        return out

    def health(self) -> dict[str, str]:
        """Container name -> health (or state, for a service without a health check)."""
        ids = self("ps", "-q").stdout.split()
        if not ids:
            return {}
        fmt = "{{.Name}} {{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}/{{.State.ExitCode}}{{end}}"
        out = run(["docker", "inspect", "--format", fmt, *ids]).stdout.split("\n")
        return dict(line.lstrip("/").split(" ", 1) for line in out if line.strip())

    def wait_healthy(self, timeout: float = 420) -> None:
        """Until every container is healthy (or exited 0). ``unhealthy`` is not final: a slow
        start on a busy machine recovers at the next passing probe; an exit is final."""
        last: dict[str, str] = {}

        def ready() -> bool:
            last.update(self.health())
            failed = {n: s for n, s in last.items() if s.startswith("exited/") and s != "exited/0"}
            if failed:
                raise CheckFailed(f"services failed: {failed}\n{self('logs', '--tail', '60', check=False).stdout[-6000:]}")
            return bool(last) and all(s in ("healthy", "exited/0") for s in last.values())

        try:
            wait_for("every service to be healthy", ready, timeout, every=2)
        except CheckFailed as exc:
            raise CheckFailed(f"{exc}: {last}\n{self('logs', '--tail', '60', check=False).stdout[-6000:]}") from None

    def logs(self, container: str) -> list[dict]:
        done = run(["docker", "logs", container], check=False, quiet=True)
        entries = []
        for line in (done.stdout + done.stderr).splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
        return [e for e in entries if isinstance(e, dict)]


# -- 5-8. grading through the stack ------------------------------------------------------------


class Learner:
    """The real ppo-submit from the host's .venv, pointed at the published API."""

    def __init__(self, token: str, workdir: Path) -> None:
        self.exe = shutil.which("ppo-submit", path=str(Path(sys.executable).parent)) or shutil.which("ppo-submit")
        if self.exe is None:
            raise CheckFailed("ppo-submit is not installed on the host (scripts/bootstrap installs it into .venv)")
        self.workdir = workdir
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(workdir),
            "XDG_CONFIG_HOME": str(workdir / "config"),
            "PPO_GRADER_URL": f"http://127.0.0.1:{API_PORT}",
            "PPO_GRADER_TOKEN": token,
        }

    def submit(self, name: str, source: str, *extra: str, timeout: float = 120) -> tuple[int, dict]:
        path = self.workdir / name
        path.write_text(source)
        done = run([self.exe, str(path), "--json", *extra], check=False, quiet=True, env=self.env, timeout=timeout + 30)
        try:
            return done.returncode, json.loads(done.stdout)
        except ValueError as exc:
            raise CheckFailed(f"ppo-submit printed no JSON (exit {done.returncode}): {done.stdout}\n{done.stderr}") from exc

    def show(self, submission_id: int) -> dict:
        done = run([self.exe, "show", str(submission_id), "--json"], check=False, quiet=True, env=self.env)
        return json.loads(done.stdout)


def report_line(name: str, code: int, result: dict) -> str:
    failed = [c["name"] for c in result.get("checks") or [] if not c["passed"]]
    return (f"{name}: submission {result.get('id')} exercise={result.get('exercise')} status={result.get('status')} "
            f"verdict={result.get('verdict')} score={result.get('score')} exit={code}"
            + (f" failed checks={failed}" if failed else ""))


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def grade_the_three(learner: Learner) -> None:
    from exercises.registry import get_exercise

    actor = get_exercise("actor-loss")
    code, result = learner.submit("actor_correct.py", actor.reference_source)
    say(report_line("actor-loss, correct", code, result))
    expect(code == 0 and result["verdict"] == "graded" and result["score"] == 100, "the correct actor loss must score 100")
    expect(all(c["passed"] for c in result["checks"]), "every check of the correct actor loss passes")

    mutant = next(m for m in actor.mistakes if m.key == "max-for-min")
    code, result = learner.submit("actor_wrong.py", mutant.source(actor.function_name))
    say(report_line("actor-loss, wrong (max for min)", code, result))
    expect(code == 1 and result["verdict"] == "graded" and result["score"] < 100, "the wrong actor loss scores < 100")
    named = [c["message"] for c in result["checks"] if not c["passed"] and mutant.title in c["message"]]
    expect(bool(named), f"a failed check names the mistake {mutant.title!r}")
    at = named[0].index(mutant.title)
    say(f"  mistake named: ...{named[0][max(0, at - 60):at + len(mutant.title) + 20]!r}")

    gae = get_exercise("gae")
    code, result = learner.submit("gae.py", gae.reference_source)
    say(report_line("gae, correct", code, result))
    expect(code == 0 and result["verdict"] == "graded" and result["score"] == 100, "the correct GAE must score 100")


def grade_many(compose: Compose, learner: Learner, count: int) -> None:
    from exercises.registry import get_exercise

    actor = get_exercise("actor-loss")
    def submit(n: int) -> int:
        # A distinct file each time (a comment), graded on its own.
        code, result = learner.submit(f"many_{n}.py", f"# run {n}\n{actor.reference_source}", "--no-wait")
        expect(code == 0 and isinstance(result.get("id"), int), f"submission {n} accepted: {result}")
        return result["id"]

    # Several learners' terminals at once, so that work queues up for both workers.
    with ThreadPoolExecutor(max_workers=5) as pool:
        ids = sorted(pool.map(submit, range(count)))
    results: dict[int, dict] = {}

    def all_done() -> bool:
        for sid in ids:
            if sid not in results:
                shown = learner.show(sid)
                if shown.get("status") != "done":
                    return False  # ask again later, from this one on (each ask starts a client)
                results[sid] = shown
        return True

    wait_for(f"{count} submissions to be graded", all_done, timeout=60 + 15 * count, every=2)
    verdicts = {(r["verdict"], r["score"]) for r in results.values()}
    say(f"{count} submissions {ids[0]}..{ids[-1]}: every one done; (verdict, score) seen: {sorted(verdicts)}")
    expect(verdicts == {("graded", 100)}, f"every one graded 100, got {verdicts}")
    share = {w[:12]: sum(1 for e in compose.logs(w) if e.get("msg") == "graded" and e.get("submission_id") in ids)
             for w in compose.containers("worker")}
    say(f"graded per worker container: {share}")
    expect(sum(share.values()) == count, f"each submission graded exactly once, got {share}")
    expect(all(share.values()), f"both workers took jobs, got {share}")


def claimer(workers: list[str], sid: int, claimed_by: Callable[[str, int, int], bool]) -> str:
    """The worker container that claimed submission ``sid`` first (waits up to a minute)."""
    holder: list[str] = []

    def someone_claimed() -> bool:
        holder[:] = [w for w in workers if claimed_by(w, sid, 1)]
        return bool(holder)

    wait_for(f"a worker to claim submission {sid}", someone_claimed, timeout=60, every=0.5)
    return holder[0]


def kill_mid_job(compose: Compose, learner: Learner) -> None:
    from exercises.registry import get_exercise

    actor = get_exercise("actor-loss")
    workers = compose.containers("worker")
    expect(len(workers) == 2, f"two worker containers, got {workers}")

    def claimed_by(container: str, sid: int, attempt: int) -> bool:
        return any(e.get("msg") == "claimed" and e.get("submission_id") == sid and e.get("attempt") == attempt
                   for e in compose.logs(container))

    def graded_by(container: str, sid: int) -> bool:
        return any(e.get("msg") == "graded" and e.get("submission_id") == sid for e in compose.logs(container))

    for tries in range(1, KILL_TRIES + 1):
        code, result = learner.submit(f"slow_{tries}.py", f"import time\ntime.sleep({SLOW_SECONDS})\n"
                                      f"{actor.reference_source}", "--no-wait")
        expect(code == 0, f"slow submission accepted: {result}")
        sid = result["id"]
        victim = claimer(workers, sid, claimed_by)
        # Frozen first, so that what is seen next stays true until the kill: on a loaded machine
        # reading the logs can take longer than the slow job itself, which must not be killed
        # after it finished (nothing would be left for the other worker to take over).
        run(["docker", "pause", victim])
        if learner.show(sid).get("status") != "done" and not graded_by(victim, sid):
            run(["docker", "unpause", victim])
            run(["docker", "kill", victim])
            break
        run(["docker", "unpause", victim])
        say(f"submission {sid} was graded before the kill (slow machine); again with another")
    else:
        raise CheckFailed(f"no slow submission was still running when its worker was frozen ({KILL_TRIES} tries)")
    survivor = next(w for w in workers if w != victim)
    say(f"submission {sid} claimed by container {victim[:12]}; killed it mid-job (SIGKILL)")

    def finished() -> bool:
        return learner.show(sid).get("status") == "done"

    wait_for(f"submission {sid} to be graded elsewhere", finished, timeout=120, every=2)
    shown = learner.show(sid)
    retried = claimed_by(survivor, sid, 2)
    graded = graded_by(survivor, sid)
    say(f"submission {sid}: verdict={shown['verdict']} score={shown['score']}; "
        f"claimed again (attempt 2) by {survivor[:12]}: {retried}; graded there: {graded}")
    expect(shown["verdict"] == "graded" and shown["score"] == 100, "the killed job is graded 100 elsewhere")
    expect(retried and graded, "the surviving worker took the job over and graded it")


def add_user(compose: Compose, name: str, role: str) -> str:
    done = compose("exec", "-T", "api", "ppo-grader", "users", "add", name, "--role", role)
    token = done.stdout.strip().splitlines()[-1]
    expect(token.startswith("ppg_"), f"a token for {name}: {done.stdout!r} {done.stderr!r}")
    return token


def leftovers() -> list[str]:
    """Containers, networks and volumes of the check's compose project still present."""
    label = f"label=com.docker.compose.project={PROJECT}"
    found = []
    for kind in (["ps", "-aq"], ["network", "ls", "-q"], ["volume", "ls", "-q"]):
        found += [f"{kind[0]}:{x}" for x in run(["docker", *kind, "--filter", label]).stdout.split()]
    return found


def main() -> int:
    began = time.monotonic()
    dockerd = start_dockerd()
    compose: Compose | None = None
    scratch = Path(tempfile.mkdtemp(prefix="ppo-compose-check-"))
    try:
        say(versions())
        with step("base images"):
            ensure_base_images()
        with step(f"docker build {IMAGE}"):
            build_image()
        say(f"image {IMAGE}: {image_size()}")
        compose = Compose(scratch / "project")
        with step("docker-compose up -d (db, migrate, api, worker) until healthy"):
            compose("up", "-d", "--no-build")
            compose.wait_healthy()
        say("services: " + ", ".join(f"{n}={s}" for n, s in sorted(compose.health().items())))
        probe = compose("exec", "-T", "worker", "python", "-c",
                        "from sandbox import cgroups; print('per-job cgroups' if cgroups.available() else "
                        "'rusage fallback (cgroups not writable in this container)')").stdout.strip()
        say(f"worker memory measurement: {probe}")
        with step("users, created inside the api container"):
            add_user(compose, "teacher", "instructor")
            learner = Learner(add_user(compose, "ada", "learner"), scratch)
        with step("correct and wrong actor-loss, correct GAE, from the host with ppo-submit"):
            grade_the_three(learner)
        with step("docker-compose up -d --scale worker=2"):
            compose("up", "-d", "--no-build", "--scale", "worker=2")
            compose.wait_healthy()
        with step(f"{SCALED_SUBMISSIONS} more submissions over two workers"):
            grade_many(compose, learner, SCALED_SUBMISSIONS)
        with step("kill the worker holding a job; the other one finishes it"):
            kill_mid_job(compose, learner)
        with step("docker-compose down -v"):
            compose("down", "-v", "--remove-orphans")
            compose.close()
            compose = None
        left = leftovers()
        expect(not left, f"left behind: {left}")
        say(f"compose check passed in {time.monotonic() - began:.0f}s")
        return 0
    finally:
        if compose is not None:
            say("cleaning up after a failure: docker-compose down -v")
            logs = compose("logs", "--tail", "40", check=False).stdout
            print(logs[-8000:], flush=True)
            compose("down", "-v", "--remove-orphans", check=False)
            compose.close()
        run(["docker", "image", "prune", "-f"], check=False, quiet=True)  # dangling layers of older builds
        shutil.rmtree(scratch, ignore_errors=True)
        if dockerd is not None:
            stop_dockerd(dockerd)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CheckFailed as failure:
        say(f"FAILED: {failure}")
        sys.exit(1)
