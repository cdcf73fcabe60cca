# Stand-in for postgres:15, built by scripts/compose-check only when no image registry is
# reachable (test tooling; users pull the official image). Debian's postgresql-15 with an
# entrypoint that honours the official image's POSTGRES_USER / POSTGRES_PASSWORD /
# POSTGRES_DB and data folder, which is all docker-compose.yml relies on.
FROM ppo-grader-standin/bookworm:minbase
RUN mkdir -p /etc/postgresql-common \
    && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        -o Dpkg::Options::=--force-confold postgresql-15 \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
    && mkdir -p /var/run/postgresql /var/lib/postgresql/data \
    && chown -R postgres:postgres /var/run/postgresql /var/lib/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data LANG=C.UTF-8
LABEL org.ppo-grader.stand-in="postgres:15"
VOLUME /var/lib/postgresql/data
STOPSIGNAL SIGINT
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
