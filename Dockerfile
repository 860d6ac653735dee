# syntax=docker/dockerfile:1
# One image for every aipool process: the queue workers, beat, flower, the health endpoint and the
# simulator. The command picks the role; the default is a router worker.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY . .
# Wheels only: the runtime stage gets the installed package, not the source tree or build tools.
RUN pip wheel --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    AIPOOL_TIMEZONE=Asia/Taipei \
    PROMETHEUS_MULTIPROC_DIR=/tmp/prometheus \
    AIPOOL_METRICS_PORT=9808
COPY --from=build /wheels /wheels
RUN pip install /wheels/*.whl && rm -rf /wheels
# A fixed non-root uid, so Kubernetes' runAsNonRoot can verify it and volumes can be chowned to it.
RUN useradd --uid 10001 --user-group --create-home --home-dir /home/aipool aipool \
    && mkdir -p /tmp/prometheus && chown aipool:aipool /tmp/prometheus
USER 10001:10001
WORKDIR /home/aipool
# API keys are never part of the image: they arrive at run time from /run/secrets/<name> (compose
# secrets, Kubernetes secret volumes) or the environment.
EXPOSE 9808
CMD ["celery", "-A", "workers.app", "worker", "-Q", "router", "-n", "router@%h", \
     "--concurrency=4", "--prefetch-multiplier=1", "-O", "fair", "--loglevel=INFO"]
