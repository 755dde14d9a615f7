#!/usr/bin/env bash
# A private, throw-away PostgreSQL 15 cluster for tests: its own data folder under a temp dir, trust auth on
# 127.0.0.1 only (no other interface, no socket outside its folder), a free port, durability off for speed.
# It never touches Debian's default cluster (5432) and does not need it.
#
#   eval "$(scripts/pg-cluster.sh start)"   # prints: export DATABASE_URL=... PG_CLUSTER_DIR=...
#   scripts/pg-cluster.sh stop [dir]        # stops the cluster and deletes its folder ($PG_CLUSTER_DIR by default)
#   scripts/pg-cluster.sh run -- <cmd...>   # start, run <cmd> with DATABASE_URL set, stop (keeps <cmd>'s exit code)
#
# initdb refuses to run as root; as root the cluster runs as the `postgres` user (created by Debian's package),
# or as a system user `agentgraph-pg` created on first use. Binaries: $PG_BIN, else /usr/lib/postgresql/15/bin,
# else `pg_config --bindir`. Messages go to stderr; only the export line goes to stdout.
# PG_SHARED_BUFFERS (e.g. 4GB) sets shared_buffers; unset, PostgreSQL's default (128MB) stays. Benchmarks at sizes
# whose tables outgrow 128MB set it as a production server would be tuned (about a quarter of the machine's memory).
set -euo pipefail

PG_SUPERUSER=postgres

say() { echo "pg-cluster: $*" >&2; }
die() {
  say "$*"
  exit 1
}

find_bin() {
  local dir
  for dir in "${PG_BIN:-}" /usr/lib/postgresql/15/bin; do
    if [[ -n "$dir" && -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
      echo "$dir"
      return 0
    fi
  done
  if command -v pg_config >/dev/null 2>&1; then
    dir=$(pg_config --bindir)
    if [[ -x "$dir/initdb" ]]; then
      echo "$dir"
      return 0
    fi
  fi
  die "no PostgreSQL server binaries found (set PG_BIN, or: apt-get install -y postgresql-15)"
}

# The OS user the server runs as, and a way to run a command as that user.
run_user() {
  if [[ $(id -u) -ne 0 ]]; then
    id -un
    return 0
  fi
  if id postgres >/dev/null 2>&1; then
    echo postgres
    return 0
  fi
  if ! id agentgraph-pg >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin agentgraph-pg
  fi
  echo agentgraph-pg
}

as_user() {
  local user=$1
  shift
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u "$user" -- "$@"
  else
    "$@"
  fi
}

port_in_use() {
  # bash's /dev/tcp: connecting succeeds if something listens there.
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

cmd_start() {
  local bin user dir port attempt
  bin=$(find_bin)
  user=$(run_user)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/agentgraph-pg.XXXXXX")
  chown "$user" "$dir"
  chmod 700 "$dir"
  if ! as_user "$user" "$bin/initdb" -D "$dir/data" -U "$PG_SUPERUSER" --auth=trust --encoding=UTF8 \
    --locale=C.UTF-8 --no-instructions >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2
    rm -rf "$dir"
    die "initdb failed"
  fi
  # Loopback only, trust only there; the socket lives in the private folder.
  cat >"$dir/data/pg_hba.conf" <<EOF
local all all trust
host  all all 127.0.0.1/32 trust
EOF
  cat >>"$dir/data/postgresql.conf" <<EOF

# agentgraph test cluster (scripts/pg-cluster.sh): throw-away data, so durability is off.
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
EOF
  if [[ -n "${PG_SHARED_BUFFERS:-}" ]]; then
    [[ "$PG_SHARED_BUFFERS" =~ ^[0-9]+(kB|MB|GB)$ ]] || die "PG_SHARED_BUFFERS must look like 4GB or 512MB"
    echo "shared_buffers = $PG_SHARED_BUFFERS" >>"$dir/data/postgresql.conf"
  fi
  for attempt in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 40000))
    port_in_use "$port" && continue
    if as_user "$user" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $port" -w -t 60 start \
      >/dev/null 2>&1; then
      echo "$port" >"$dir/port"
      say "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, data in $dir (user $user)"
      echo "export DATABASE_URL=postgres://$PG_SUPERUSER@127.0.0.1:$port/postgres PG_CLUSTER_DIR=$dir"
      return 0
    fi
    say "start on port $port failed (attempt $attempt); trying another port"
  done
  tail -n 30 "$dir/server.log" >&2 || true
  rm -rf "$dir"
  die "could not start PostgreSQL"
}

cmd_stop() {
  local dir=${1:-${PG_CLUSTER_DIR:-}} bin user
  [[ -n "$dir" ]] || die "stop: give the cluster folder or set PG_CLUSTER_DIR"
  [[ -d "$dir" ]] || return 0
  [[ "$(basename "$dir")" == agentgraph-pg.* ]] || die "stop: $dir is not a cluster folder made by this script"
  bin=$(find_bin)
  user=$(stat -c %U "$dir")
  if [[ -f "$dir/data/postmaster.pid" ]]; then
    as_user "$user" "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 ||
      as_user "$user" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

cmd_run() {
  [[ "${1:-}" == "--" ]] && shift
  [[ $# -gt 0 ]] || die "run: give a command after --"
  local exports rc=0
  exports=$(cmd_start)
  eval "$exports"
  trap 'cmd_stop "$PG_CLUSTER_DIR"' EXIT
  "$@" || rc=$?
  return "$rc"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop "${2:-}" ;;
  run)
    shift
    cmd_run "$@"
    ;;
  *)
    echo "usage: $0 start | stop [dir] | run -- <command...>" >&2
    exit 2
    ;;
esac
