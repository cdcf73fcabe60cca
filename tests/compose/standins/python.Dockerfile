# Stand-in for python:3.11-slim-bookworm, built by scripts/compose-check only when no image
# registry is reachable (test tooling; users pull the official image). Debian's python3.11
# on a debootstrapped bookworm, made to behave like the official image where the project's
# Dockerfile relies on it: `python` and `pip` on PATH, pip allowed to install system-wide.
FROM ppo-grader-standin/bookworm:minbase
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3.11 python3-pip ca-certificates \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
    && rm -f /usr/lib/python3.11/EXTERNALLY-MANAGED \
    && ln -s /usr/bin/python3 /usr/local/bin/python \
    && ln -s /usr/bin/pip3 /usr/local/bin/pip
ENV LANG=C.UTF-8
LABEL org.ppo-grader.stand-in="python:3.11-slim-bookworm"
CMD ["python3"]
