#!/bin/sh
# Runs an aipool command with its connection settings read from secret files.
#
# Compose and Kubernetes mount each secret as a read-only file; a setting NAME whose NAME_FILE is
# set is exported from that file, so no password is in the pod spec, the compose file, the
# container's environment listing or a process's arguments (Flower reads FLOWER_BASIC_AUTH from
# its environment). A setting already in the environment is left as it is.
set -eu
for name in REDIS_URL DATABASE_URL CELERY_BROKER_URL FLOWER_BASIC_AUTH; do
  eval "file=\${${name}_FILE:-}"
  if [ -n "$file" ]; then
    value="$(cat "$file")"
    export "$name=$value"
    unset "${name}_FILE"
  fi
done
# Kubernetes names the Redis once, in the ConfigMap (REDIS_HOST, REDIS_PORT, REDIS_DB, which KEDA
# reads too), and mounts only its password: REDIS_URL is put together here, the password
# percent-encoded. REDIS_SCHEME=rediss and REDIS_URL_OPTIONS (e.g.
# ssl_ca_certs=/run/tls/redis/ca.crt&ssl_cert_reqs=required) turn on TLS (docs/operations.md).
if [ -n "${REDIS_PASSWORD_FILE:-}" ] && [ -z "${REDIS_URL:-}" ]; then
  password="$(python3 -c 'import sys, urllib.parse
print(urllib.parse.quote(open(sys.argv[1], encoding="utf-8").read().strip(), safe=""))' \
    "$REDIS_PASSWORD_FILE")"
  options="${REDIS_URL_OPTIONS:+?$REDIS_URL_OPTIONS}"
  export REDIS_URL="${REDIS_SCHEME:-redis}://:$password@${REDIS_HOST:?names no Redis (REDIS_PASSWORD_FILE is set)}:${REDIS_PORT:-6379}/${REDIS_DB:-0}$options"
  unset REDIS_PASSWORD_FILE
fi
exec "$@"
