# ppo-grader service image: API, workers and the bubblewrap jail.
#   docker build -t ppo-grader .
# torch is the CPU build from the PyTorch CPU index (the GPU worker image can swap in a
# CUDA build with --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128).
FROM python:3.11-slim-bookworm

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu

# bubblewrap: the jail (unprivileged user namespaces, no setuid bit needed);
# libpq5 is not needed (psycopg[binary] ships its own); curl-free health checks use Python.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
RUN pip install --no-cache-dir --index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}"
COPY pyproject.toml README.md* ./
COPY server ./server
COPY exercises ./exercises
COPY sandbox ./sandbox
RUN pip install --no-cache-dir ".[postgres]"

# An unprivileged user runs everything, the jail included: bubblewrap creates its own
# user namespace, so no capability is needed (compose drops them all).
RUN useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin grader \
    && mkdir -p /app/data && chown grader /app/data
USER 10001:10001
ENV PYTHONUNBUFFERED=1 PPO_GRADER_LOG_FORMAT=json
EXPOSE 8000
CMD ["ppo-grader", "serve", "--host", "0.0.0.0", "--port", "8000"]
