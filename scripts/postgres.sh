#!/usr/bin/env bash
# A real PostgreSQL server in a temporary directory, for berth's tests and benches on PostgreSQL.
#
#   scripts/postgres.sh install          apt-get Debian's postgresql when missing (idempotent)
#   scripts/postgres.sh up DIR PORT      initdb a cluster in DIR, start it on 127.0.0.1:PORT (and a
#                                        unix socket in DIR), wait until it answers; prints its URL
#   scripts/postgres.sh stop DIR         stop the server, keep DIR (a "database went away" test)
#   scripts/postgres.sh start DIR        start it again on the same port
#   scripts/postgres.sh down DIR         stop it and remove DIR
#
# The cluster belongs to the postgres account (PostgreSQL refuses to run as root), trusts
# connections from loopback (a throwaway test server, never a real one), and skips fsync (only an
# OS crash could lose data; commits still reach the WAL before they return, so `stop` — an
# immediate shutdown, as a crash — loses nothing committed).
set -euo pipefail

die() { echo "postgres.sh: $*" >&2; exit 1; }
# apt_install: the package install the four scripts share.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/apt.sh"

bindir() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [ -n "$d" ] && [ -x "$d/initdb" ] || return 1
  echo "$d"
}

as_owner() { # run as the postgres account when we are root
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cmd_install() {
  # Any installed server version will do (the binaries are what counts, not the meta-package).
  bindir >/dev/null || apt_install postgresql
  bindir >/dev/null || die "no PostgreSQL server binaries after install"
}

cmd_up() { # dir port
  local dir="$1" port="$2" bin
  bin="$(bindir)" || die "PostgreSQL is not installed (scripts/postgres.sh install)"
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
    # The postgres account must be able to reach DIR (a mktemp parent is root's alone).
    runuser -u postgres -- test -x "$dir" || chmod o+x "$(dirname "$dir")"
  fi
  chmod 700 "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { tail -n 20 "$dir/initdb.log" >&2; die "initdb failed"; }
  cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 300
fsync = off
full_page_writes = off
shared_buffers = 128MB
EOF
  echo "$port" >"$dir/port"
  cmd_start "$dir"
  echo "postgres://postgres@127.0.0.1:$port/postgres"
}

cmd_start() { # dir
  local dir="$1" bin
  bin="$(bindir)"
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start >/dev/null ||
    { tail -n 20 "$dir/server.log" >&2; die "PostgreSQL did not start"; }
}

cmd_stop() { # dir
  local dir="$1" bin
  bin="$(bindir)"
  [ -d "$dir/data" ] || return 0
  as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
}

cmd_down() { # dir
  local dir="$1"
  cmd_stop "$dir"
  rm -rf "$dir"
}

case "${1:-}" in
  install) cmd_install ;;
  up) [ $# -eq 3 ] || die "usage: postgres.sh up DIR PORT"; cmd_up "$2" "$3" ;;
  start) [ $# -eq 2 ] || die "usage: postgres.sh start DIR"; cmd_start "$2" ;;
  stop) [ $# -eq 2 ] || die "usage: postgres.sh stop DIR"; cmd_stop "$2" ;;
  down) [ $# -eq 2 ] || die "usage: postgres.sh down DIR"; cmd_down "$2" ;;
  *) die "usage: postgres.sh install | up DIR PORT | start DIR | stop DIR | down DIR" ;;
esac
