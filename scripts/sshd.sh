#!/usr/bin/env bash
# A real OpenSSH server on loopback, for berth's SSH transport tests and benches.
#
#   scripts/sshd.sh install          apt-get openssh-server when missing, and make the test user (idempotent)
#   scripts/sshd.sh up DIR PORT      start sshd on 127.0.0.1:PORT with its own config, host key and
#                                    authorized keys under DIR; wait until it answers
#   scripts/sshd.sh rekey DIR        give the server a new host key and restart it (a "reinstalled" host)
#   scripts/sshd.sh down DIR         stop it and remove DIR
#   scripts/sshd.sh hostkey DIR      print the host key's fingerprint as ssh-keygen -lf does
#
# Authorized keys live in DIR/authorized_keys/<user> (one file per login name), so a test grants
# or revokes a key by writing that file. The server runs as root (sshd needs it to switch users),
# listens on loopback only, forwards streams to unix sockets (what berth uses to reach an engine
# socket) and accepts public keys only. TEST_USER is an ordinary account without access to any
# engine socket, for "permission denied" cases.
set -euo pipefail

TEST_USER="${BERTH_SSH_TEST_USER:-berth-ssh-test}"
SSHD=/usr/sbin/sshd

die() { echo "sshd.sh: $*" >&2; exit 1; }
# apt_install: the package install the four scripts share.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/apt.sh"

cmd_install() {
  if [ ! -x "$SSHD" ] || ! command -v ssh-keygen >/dev/null; then apt_install openssh-server; fi
  if ! id "$TEST_USER" >/dev/null 2>&1; then
    [ "$(id -u)" -eq 0 ] || die "creating $TEST_USER needs root"
    # '*' (no password) rather than useradd's locked '!': sshd without PAM refuses locked accounts.
    useradd --system --no-create-home --home-dir /nonexistent --shell /bin/sh --password '*' "$TEST_USER"
  fi
}

write_config() { # dir port
  local dir="$1" port="$2"
  cat >"$dir/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $dir/host_ed25519
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys/%u
AllowStreamLocalForwarding yes
X11Forwarding no
PermitTTY no
UsePAM no
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
LogLevel VERBOSE
EOF
}

start() { # dir
  local dir="$1" port
  port="$(sed -n 's/^Port //p' "$dir/sshd_config")"
  mkdir -p /run/sshd
  setsid "$SSHD" -D -e -f "$dir/sshd_config" >>"$dir/sshd.log" 2>&1 </dev/null &
  echo $! >"$dir/sshd.pid.launcher"
  local until=$((SECONDS + 20))
  while [ $SECONDS -lt $until ]; do
    # The server's version banner is the sign it accepts connections.
    if (exec 3<>"/dev/tcp/127.0.0.1/$port" && head -c 4 <&3 | grep -q SSH-) 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  tail -n 20 "$dir/sshd.log" >&2 || true
  die "sshd did not start on port $port"
}

alive() { # pid: running, and not a zombie left for a parent that does not reap
  local st
  st="$(ps -o stat= -p "$1" 2>/dev/null || true)"
  [ -n "$st" ] && [ "${st#Z}" = "$st" ]
}

ours() { # pid dir: the pid is this directory's sshd (pids are reused: a stale pid file names another process)
  grep -qF "$2/sshd_config" "/proc/$1/cmdline" 2>/dev/null
}

stop() { # dir
  local dir pid pids=()
  dir="$(cd "$1" && pwd)"
  for f in "$dir/sshd.pid.launcher" "$dir/sshd.pid"; do
    pid="$(cat "$f" 2>/dev/null || true)"
    [ -n "$pid" ] && ours "$pid" "$dir" && pids+=("$pid")
  done
  for pid in "${pids[@]}"; do
    # The listener and its per-connection children.
    pkill -TERM -P "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
  done
  local until=$((SECONDS + 10))
  for pid in "${pids[@]}"; do
    while alive "$pid" && [ $SECONDS -lt $until ]; do sleep 0.05; done
  done
  rm -f "$dir/sshd.pid.launcher" "$dir/sshd.pid"
}

cmd_up() {
  local dir="${1:?usage: $0 up DIR PORT}" port="${2:?usage: $0 up DIR PORT}"
  [ -x "$SSHD" ] || die "openssh-server is not installed (run: $0 install)"
  mkdir -p "$dir/authorized_keys"
  dir="$(cd "$dir" && pwd)"
  [ -f "$dir/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C berth-test-host -f "$dir/host_ed25519"
  write_config "$dir" "$port"
  # /run is emptied at boot; sshd checks for its privilege separation directory even with -t.
  mkdir -p /run/sshd
  "$SSHD" -t -f "$dir/sshd_config" || die "sshd rejected its config"
  start "$dir"
}

cmd_rekey() {
  local dir="${1:?usage: $0 rekey DIR}"
  stop "$dir"
  rm -f "$dir/host_ed25519" "$dir/host_ed25519.pub"
  ssh-keygen -q -t ed25519 -N '' -C berth-test-host -f "$dir/host_ed25519"
  start "$dir"
}

cmd_down() {
  local dir="${1:?usage: $0 down DIR}"
  [ -d "$dir" ] || return 0
  stop "$dir"
  rm -rf "$dir"
}

cmd_hostkey() {
  ssh-keygen -lf "${1:?usage: $0 hostkey DIR}/host_ed25519.pub" | cut -d' ' -f2
}

case "${1:-}" in
  install) cmd_install ;;
  up) shift; cmd_up "$@" ;;
  rekey) shift; cmd_rekey "$@" ;;
  down) shift; cmd_down "$@" ;;
  hostkey) shift; cmd_hostkey "$@" ;;
  *) die "usage: $0 install | up DIR PORT | rekey DIR | down DIR | hostkey DIR" ;;
esac
