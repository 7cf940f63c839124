#!/usr/bin/env bash
# Starts a throwaway PostgreSQL 15 cluster on 127.0.0.1 for the store tests and prints the
# line to export (`export SUBAGENTS_TEST_POSTGRES_URL=postgres://...`). Usage:
#   eval "$(bash .ci/postgres.sh start DIR)"     # DIR holds the cluster; removed by `stop`
#   bash .ci/postgres.sh stop DIR
# Installs Debian's postgresql-15 when initdb is missing. PostgreSQL refuses to run as root, so
# as root the cluster belongs to the `postgres` user (created by the package) instead.
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?cluster directory}
# A free port unless PGPORT_TEST names one, so a developer's own server never collides.
port=${PGPORT_TEST:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}

find_bin() {
    for d in /usr/lib/postgresql/*/bin /usr/local/bin /usr/bin; do
        [ -x "$d/$1" ] && { echo "$d/$1"; return; }
    done
    return 1
}
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
start)
    if ! find_bin initdb >/dev/null; then
        echo "installing postgresql-15 (Debian package)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2 && apt-get install -y -qq postgresql-15 >&2
    fi
    initdb=$(find_bin initdb); pg_ctl=$(find_bin pg_ctl)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_owner "$initdb" -D "$dir/data" -U subagents --auth=trust -E UTF8 >/dev/null
    as_owner "$pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c fsync=off" start >&2
    as_owner "$(find_bin createdb)" -h 127.0.0.1 -p "$port" -U subagents subagents_test
    echo "export SUBAGENTS_TEST_POSTGRES_URL=postgres://subagents@127.0.0.1:$port/subagents_test"
    ;;
stop)
    if [ -d "$dir/data" ]; then
        as_owner "$(find_bin pg_ctl)" -D "$dir/data" -m immediate stop >&2 || true
    fi
    rm -rf "$dir"
    ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
