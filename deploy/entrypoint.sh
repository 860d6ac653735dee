#!/bin/sh
# Runs an aipool command with its connection settings read from secret files.
#
# Compose mounts each secret as a file under /run/secrets; a setting NAME whose NAME_FILE is set
# is exported from that file, so no password is in the container's environment listing, the
# compose file or a process's arguments (Flower reads FLOWER_BASIC_AUTH from its environment).
# A setting already in the environment (Kubernetes' secretKeyRef) is left as it is.
set -eu
for name in REDIS_URL DATABASE_URL CELERY_BROKER_URL FLOWER_BASIC_AUTH; do
  eval "file=\${${name}_FILE:-}"
  if [ -n "$file" ]; then
    value="$(cat "$file")"
    export "$name=$value"
    unset "${name}_FILE"
  fi
done
exec "$@"
