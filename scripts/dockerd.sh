#!/usr/bin/env bash
# A real Docker Engine (Debian's docker.io) of its own on this machine, for the tests that need what
# podman's test engines do not give (scripts/engines.sh runs them on network `none`): bridge
# networks whose containers reach each other by name, ports published on 127.0.0.1, and later
# Swarm. Every daemon has its own socket, data root, exec root and pid file under DIR/NAME, so it
# never meets another engine on the machine (no /var/run/docker.sock, no /var/lib/docker).
#
#   scripts/dockerd.sh install            apt-get docker.io when missing (idempotent, quiet)
#   scripts/dockerd.sh up DIR [NAME]      start daemon NAME (default d) under DIR, import the busybox image, wait
#   scripts/dockerd.sh down DIR [NAME]    stop daemon NAME (default: every daemon under DIR) and remove its files
#   scripts/dockerd.sh env DIR [NAME]     print DOCKERD_SOCKET=... / DOCKERD_IMAGE=...
#   scripts/dockerd.sh docker DIR NAME ARGS...   run Debian's docker CLI against daemon NAME
#   scripts/dockerd.sh caddy-image DIR [NAME]    import a Caddy image (localhost/berth-caddy:2.6) built
#                                         from Debian's caddy package (cached: $BERTH_CADDY_ROOTFS)
#   scripts/dockerd.sh swarm-init DIR [NAME]     make daemon NAME a one-node swarm (its manager), on
#                                         127.0.0.1, overlay subnets from DOCKERD_SWARM_POOL
#
# Settings (checked on these machines): --iptables=false and --ip-masq=false (the daemon leaves the
# host's firewall alone; containers on one user-defined bridge still reach each other by name, and
# the userland proxy publishes ports), --bridge=none (no docker0 shared with other daemons), an
# address pool of its own (DOCKERD_ADDRESS_POOL). DOCKERD_EXTRA_ARGS is passed on as it is
# (a Swarm test adds what it needs there).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
IMAGE="${BERTH_ENGINE_IMAGE:-localhost/berth-busybox:latest}"
CADDY_IMAGE="${BERTH_CADDY_IMAGE:-localhost/berth-caddy:2.6}"
CADDY_ROOTFS="${BERTH_CADDY_ROOTFS:-/tmp/berth-caddy-rootfs.tar}"
POOL="${DOCKERD_ADDRESS_POOL:-base=10.213.0.0/16,size=24}"
PACKAGES=(docker.io curl)
# Debian's CLI, not whatever `docker` comes first on PATH.
DOCKER=/usr/bin/docker

log() { [ -n "${DOCKERD_QUIET:-}" ] || echo "dockerd: $*" >&2; }
die() { echo "dockerd: $*" >&2; exit 1; }
# apt_install: the package install the four scripts share.
. "$HERE/lib/apt.sh"

cmd_install() { apt_install "${PACKAGES[@]}"; }

abs() { mkdir -p "$1" && (cd "$1" && pwd); }

run_docker() { # dir name args...
  local d="$1/$2"; shift 2
  DOCKER_CONFIG="$d/client" "$DOCKER" --host "unix://$d/docker.sock" "$@"
}

wait_ping() { # socket deadline-seconds log
  local sock="$1" until=$((SECONDS + $2))
  while [ $SECONDS -lt $until ]; do
    if [ -S "$sock" ] && [ "$(curl -fsS --max-time 2 --unix-socket "$sock" http://d/_ping 2>/dev/null)" = "OK" ]; then return 0; fi
    sleep 0.1
  done
  echo "dockerd: $sock did not answer /_ping; daemon log:" >&2
  tail -n 30 "$3" >&2 || true
  return 1
}

cmd_up() {
  local dir name d pid
  dir="$(abs "${1:?usage: $0 up DIR [NAME]}")"; name="${2:-d}"; d="$dir/$name"
  [ -x /usr/sbin/dockerd ] || die "docker.io not installed (run: $0 install)"
  [ ${#d} -le 80 ] || die "DIR too long for a unix socket path: $d"
  mkdir -p "$d/root" "$d/exec" "$d/client"
  if [ -f "$d/dockerd.pid" ] && kill -0 "$(cat "$d/dockerd.pid")" 2>/dev/null; then
    log "$name already running"
  else
    rm -f "$d/docker.sock"
    # setsid: the daemon outlives this script and is not killed with the caller's process group.
    # shellcheck disable=SC2086
    setsid /usr/sbin/dockerd --host "unix://$d/docker.sock" --data-root "$d/root" --exec-root "$d/exec" \
      --pidfile "$d/dockerd.pid" --iptables=false --ip-masq=false --bridge=none \
      --default-address-pool "$POOL" --log-level warn ${DOCKERD_EXTRA_ARGS:-} \
      >"$d/dockerd.log" 2>&1 </dev/null &
    wait_ping "$d/docker.sock" 60 "$d/dockerd.log"
  fi
  if ! run_docker "$dir" "$name" image inspect "$IMAGE" >/dev/null 2>&1; then
    local rootfs="${BERTH_BUSYBOX_ROOTFS:-/tmp/berth-busybox-rootfs-$(stat -c %s-%Y /bin/busybox 2>/dev/null || echo none).tar}"
    bash "$HERE/engines.sh" rootfs "$rootfs"
    run_docker "$dir" "$name" import --change 'CMD ["/bin/sh"]' \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' "$rootfs" "$IMAGE" >/dev/null
  fi
  log "up: $d/docker.sock ($IMAGE)"
}

stop_one() { # dir name
  local d="$1/$2" pid bridges="" b
  [ -d "$d" ] || return 0
  if [ -S "$d/docker.sock" ]; then
    # Every container goes first, so no shim or container process outlives the daemon.
    local ids
    ids="$(run_docker "$1" "$2" ps -aq 2>/dev/null || true)"
    # shellcheck disable=SC2086
    [ -z "$ids" ] || run_docker "$1" "$2" rm -f $ids >/dev/null 2>&1 || true
    # Its bridges live in the host's namespace and outlive it: named now, deleted once it is down.
    local nets
    nets="$(run_docker "$1" "$2" network ls -q --filter driver=bridge 2>/dev/null || true)"
    # shellcheck disable=SC2086
    [ -z "$nets" ] || bridges="$(run_docker "$1" "$2" network inspect --format '{{with index .Options "com.docker.network.bridge.name"}}{{.}}{{else}}br-{{printf "%.12s" .Id}}{{end}}' $nets 2>/dev/null | grep -vx 'docker0' || true)"
  fi
  if [ -f "$d/dockerd.pid" ]; then
    pid="$(cat "$d/dockerd.pid")"
    # Only our own daemon: its command line names this socket.
    if kill -0 "$pid" 2>/dev/null && grep -qF "$d/docker.sock" "/proc/$pid/cmdline" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  # Mounts the daemon left (overlay layers, netns files) must go before the files can.
  { grep -F " $d/" /proc/mounts || true; } | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$d" 2>/dev/null || { sleep 1; rm -rf "$d"; }
  for b in $bridges; do ip link delete "$b" 2>/dev/null || true; done
}

cmd_down() {
  local dir="${1:?usage: $0 down DIR [NAME]}" n
  [ -d "$dir" ] || return 0
  dir="$(cd "$dir" && pwd)"
  if [ -n "${2:-}" ]; then stop_one "$dir" "$2"; return 0; fi
  for n in "$dir"/*/; do [ -f "$n/dockerd.pid" ] && stop_one "$dir" "$(basename "$n")"; done
  rmdir "$dir" 2>/dev/null || true
}

cmd_env() {
  local dir name
  dir="$(cd "${1:?usage: $0 env DIR [NAME]}" && pwd)"; name="${2:-d}"
  echo "DOCKERD_SOCKET=$dir/$name/docker.sock"
  echo "DOCKERD_IMAGE=$IMAGE"
}

# Caddy as the official image lays it out (/usr/bin/caddy, /etc/caddy/Caddyfile, data in /data,
# config in /config, its command), from Debian's package: the binary and every library it links,
# busybox for a shell, and the CA bundle for ACME.
build_caddy_rootfs_tar() { # out.tar
  local out="$1" work rfs lib
  [ -s "$out" ] && return 0
  [ -x /bin/busybox ] || die "/bin/busybox missing (run: scripts/engines.sh install)"
  work="$(mktemp -d)"
  (cd "$work" && { apt-get download caddy >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get download caddy >/dev/null 2>&1; }; }) || { rm -rf "$work"; die "apt-get download caddy failed"; }
  dpkg-deb -x "$work"/caddy_*.deb "$work/deb"
  rfs="$work/rootfs"
  mkdir -p "$rfs"/{bin,etc/caddy,etc/ssl/certs,tmp,root,proc,sys,dev,data,config,srv,usr/bin}
  chmod 755 "$rfs"; chmod 1777 "$rfs/tmp"
  cp /bin/busybox "$rfs/bin/busybox"
  for lib in $(/bin/busybox --list); do [ "$lib" = busybox ] || ln -sf busybox "$rfs/bin/$lib"; done
  ln -s bin "$rfs/sbin"
  cp "$work/deb/usr/bin/caddy" "$rfs/usr/bin/caddy"
  cp "$work/deb/etc/caddy/Caddyfile" "$rfs/etc/caddy/Caddyfile"
  [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$rfs/etc/ssl/certs/"
  ldd "$rfs/usr/bin/caddy" | awk '/=>/ {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | grep '^/' | sort -u | while read -r lib; do
    mkdir -p "$rfs$(dirname "$lib")"; cp -L "$lib" "$rfs$lib"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rfs/etc/group"
  tar -C "$rfs" --numeric-owner --owner=0 --group=0 -cf "$out.$$.tmp" .
  mv "$out.$$.tmp" "$out"
  rm -rf "$work"
}

cmd_caddy_image() {
  local dir name
  dir="$(cd "${1:?usage: $0 caddy-image DIR [NAME]}" && pwd)"; name="${2:-d}"
  run_docker "$dir" "$name" image inspect "$CADDY_IMAGE" >/dev/null 2>&1 && return 0
  build_caddy_rootfs_tar "$CADDY_ROOTFS"
  run_docker "$dir" "$name" import --change 'ENV XDG_CONFIG_HOME=/config' --change 'ENV XDG_DATA_HOME=/data' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'WORKDIR /srv' \
    --change 'EXPOSE 80 443 2019' \
    --change 'CMD ["caddy", "run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"]' \
    "$CADDY_ROOTFS" "$CADDY_IMAGE" >/dev/null
  log "caddy-image: $CADDY_IMAGE"
}

# A one-node swarm on loopback: the daemon is its manager. Overlay networks take their subnets from
# a pool of their own (Docker's default, 10.0.0.0/8, would overlap anything). VXLAN on a UDP port of
# its own (DOCKERD_SWARM_DATA_PATH_PORT, else a random one): two swarms on one host number their
# overlays alike, and the kernel refuses a second VXLAN device with the same id and port ("error
# creating vxlan interface: file exists"), so every task of the later swarm was rejected. Idempotent.
cmd_swarm_init() {
  local dir name
  dir="$(cd "${1:?usage: $0 swarm-init DIR [NAME]}" && pwd)"; name="${2:-d}"
  if [ "$(run_docker "$dir" "$name" info --format '{{.Swarm.LocalNodeState}}')" = active ]; then return 0; fi
  # The swarm's gateway bridge under a name of this daemon's own: by default every swarm on the
  # host wants the one interface docker_gwbridge, and two at once break each other's tasks.
  run_docker "$dir" "$name" network inspect docker_gwbridge >/dev/null 2>&1 ||
    run_docker "$dir" "$name" network create -o com.docker.network.bridge.name="gw-$(basename "$dir" | tail -c 7)" \
      -o com.docker.network.bridge.enable_icc=false -o com.docker.network.bridge.enable_ip_masquerade=true docker_gwbridge >/dev/null
  run_docker "$dir" "$name" swarm init --advertise-addr 127.0.0.1 --listen-addr 127.0.0.1:0 \
    --data-path-port "${DOCKERD_SWARM_DATA_PATH_PORT:-$((20000 + RANDOM % 20000))}" \
    --default-addr-pool "${DOCKERD_SWARM_POOL:-10.214.0.0/16}" --default-addr-pool-mask-length 24 >/dev/null
  log "swarm-init: $dir/$name is a swarm manager"
}

case "${1:-}" in
  install) cmd_install ;;
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  env) shift; cmd_env "$@" ;;
  caddy-image) shift; cmd_caddy_image "$@" ;;
  swarm-init) shift; cmd_swarm_init "$@" ;;
  docker) shift; dir="$(cd "${1:?dir}" && pwd)"; name="${2:?name}"; shift 2; run_docker "$dir" "$name" "$@" ;;
  *) echo "usage: $0 install | up DIR [NAME] | down DIR [NAME] | env DIR [NAME] | docker DIR NAME ARGS... | caddy-image DIR [NAME] | swarm-init DIR [NAME]" >&2; exit 2 ;;
esac
