# ppo-grader service image: API, workers and the bubblewrap jail.   docs/deploy.md
#   docker build -t ppo-grader .
# torch comes from the PyTorch CPU index, so no multi-GB CUDA build lands on a CPU host.
# The GPU worker image swaps in a CUDA build with build arguments, for example
#   docker build -t ppo-grader:cuda --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu130 .
# (any TORCH_VERSION the package's range in pyproject.toml admits; the CUDA wheel brings its own
# CUDA runtime, the host needs only the NVIDIA driver and Container Toolkit).
FROM python:3.11-slim-bookworm

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
# Builds behind a PyPI mirror: --build-arg PIP_INDEX_URL=https://mirror.example/simple
# (pip reads it from the environment; unset, pip uses PyPI).
ARG PIP_INDEX_URL

# bubblewrap: the jail (unprivileged user namespaces, no setuid bit needed). No libpq:
# psycopg[binary] ships its own. Health checks use Python, so no curl either.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# Layers from the slowest-changing down: torch (hundreds of MB), then the dependencies named
# in pyproject.toml, then the project's own code, so editing the code rebuilds seconds, not
# minutes.
RUN pip install --no-cache-dir --index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}"
# The dependencies install under constraints.txt, the versions CI tested, so an image built
# next month gets the same libraries (the Public Suffix List, the JOSE library...). Its torch
# line is left out: torch is already installed above, from the index the build chose.
COPY pyproject.toml constraints.txt ./
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['postgres']))" > /tmp/requirements.txt \
    && grep -v '^torch==' constraints.txt > /tmp/constraints.txt \
    && pip install --no-cache-dir -c /tmp/constraints.txt -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt /tmp/constraints.txt
COPY server ./server
COPY exercises ./exercises
COPY sandbox ./sandbox
# The dashboard's upload reads notebooks with notebook_format, the parser ppo-submit uses too
# (it lives beside the client; the server's pyproject.toml ships it): the same notebook gets
# the same answer both ways. Not the client itself.
COPY client/notebook_format ./client/notebook_format
RUN pip install --no-cache-dir --no-deps . && rm -rf build *.egg-info

# An unprivileged user runs everything, the jail included: bubblewrap creates its own
# user namespace, so no capability is needed (compose drops them all).
RUN useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin grader \
    && mkdir -p /app/data && chown grader /app/data
USER 10001:10001
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PPO_GRADER_LOG_FORMAT=json
EXPOSE 8000
CMD ["ppo-grader", "serve", "--host", "0.0.0.0", "--port", "8000"]
