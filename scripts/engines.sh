#!/usr/bin/env bash
# Two independent Docker-compatible engines on one machine, for berth's runtime tests and benches.
#
#   scripts/engines.sh install     apt-get the engine packages when missing (idempotent, quiet)
#   scripts/engines.sh up DIR      start engines a and b under DIR, import the busybox image, wait
#   scripts/engines.sh down DIR    stop both engines and remove everything under DIR they made
#   scripts/engines.sh env DIR     print ENGINE_A_SOCKET=... / ENGINE_B_SOCKET=... / ENGINE_IMAGE=...
#   scripts/engines.sh podman E DIR ARGS...   run podman on engine E (a or b)
#   scripts/engines.sh podman-args E DIR      print what running podman on engine E directly needs
#   scripts/engines.sh rootfs OUT  build the busybox rootfs tarball the engines' base image comes from
#                                  (other scripts' engines import it too: scripts/dockerd.sh)
#   scripts/engines.sh pg-image DIR  import a PostgreSQL image (localhost/berth-postgres:15) into the
#                                  engines under DIR, built once from Debian's postgresql package
#                                  (cached tarball: $BERTH_PG_ROOTFS, default /tmp/berth-postgres-rootfs.tar)
#   scripts/engines.sh buildpack-images DIR  import the build packs' base images into engine a under
#                                  DIR (localhost/berth-bp-node, -python, -static :test), built once
#                                  from the host's node + npm, Debian's python3 + pip, and busybox
#                                  httpd (cached tarballs /tmp/berth-bp-*-rootfs-*.tar)
#   scripts/engines.sh mosquitto-image DIR  import eclipse-mosquitto:2 (the one-click template's image)
#                                  into the engines under DIR, built once from Debian's mosquitto
#                                  packages (apt-get download; cached: /tmp/berth-mosquitto-rootfs.tar)
#
# Each engine is `podman system service` with its own storage root, run root, tmp dir (libpod
# state, file locks, events), network config dir and volume path, so the two share nothing: a
# volume or container on one is invisible to the other. Settings needed on these machines
# (checked on these machines): runtime runc, cgroup manager cgroupfs, nofile 1024:1024,
# network none. With no registry reachable, the image comes from `podman import` of a rootfs
# built from Debian's busybox-static.
set -euo pipefail

IMAGE="${BERTH_ENGINE_IMAGE:-localhost/berth-busybox:latest}"
# overlay needs DIR on a filesystem that is not itself overlayfs; `vfs` works anywhere (slower).
STORAGE_DRIVER="${BERTH_ENGINE_STORAGE_DRIVER:-overlay}"
ENGINES=(a b)
# catatonit: the init podman runs for `--init` (a run option berth accepts).
# python3-pip: the Python build pack's test image is made from Debian's python3 and pip.
PACKAGES=(podman runc conmon busybox-static containernetworking-plugins curl catatonit python3-pip)

log() { [ -n "${ENGINES_QUIET:-}" ] || echo "engines: $*" >&2; }
die() { echo "engines: $*" >&2; exit 1; }
# apt_install: the package install the four scripts share.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/apt.sh"

cmd_install() { apt_install "${PACKAGES[@]}"; }

# podman global flags for engine $1 under $2. Passed on every podman invocation (the service, the
# import) and carried by podman into each container's exit command (conmon → `podman container
# cleanup`), so the cleanup process acts on the right engine too.
engine_flags() {
  local d="$2/$1"
  printf '%s\n' \
    --root "$d/root" --runroot "$d/run" --tmpdir "$d/tmp" \
    --volumepath "$d/root/volumes" --network-config-dir "$d/net" \
    --runtime runc --cgroup-manager cgroupfs --events-backend file --storage-driver "$STORAGE_DRIVER"
}

write_config() {
  local d="$2/$1" ulimits='"nofile=1024:1024"' nproc
  mkdir -p "$d/root" "$d/run" "$d/tmp" "$d/net"
  # As root, podman gives every container a default RLIMIT_NPROC, and runc fails with "error
  # setting rlimit type 6: operation not permitted" when that is above the service's own hard
  # limit. Observed here: a shell with nproc 96365 started a service that ran with 32768
  # (= kernel.pid_max), and containers asked for 96365. Pin nproc to min(hard limit, pid_max).
  local pidmax
  nproc="$(ulimit -Hu)"
  pidmax="$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)"
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pidmax" ]; then nproc="$pidmax"; fi
  ulimits="$ulimits, \"nproc=$nproc:$nproc\""
  # containers.conf: CONTAINERS_CONF replaces the system files, so nothing in /etc leaks in.
  cat >"$d/containers.conf" <<EOF
[containers]
default_ulimits = [$ulimits]
netns = "none"
log_driver = "k8s-file"
cgroups = "enabled"

[network]
network_backend = "cni"
network_config_dir = "$d/net"
cni_plugin_dirs = ["/usr/lib/cni"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$d/tmp/events.log"
tmp_dir = "$d/tmp"
volume_path = "$d/root/volumes"
static_dir = "$d/root/libpod"
# File locks under tmp_dir, not the default host-wide /dev/shm/libpod_lock segment: with shm,
# the second engine's first-start refresh would free the first engine's locks.
lock_type = "file"
image_default_transport = "docker://"
EOF
  cat >"$d/storage.conf" <<EOF
[storage]
driver = "$STORAGE_DRIVER"
graphroot = "$d/root"
runroot = "$d/run"
EOF
}

engine_env() {
  local d="$2/$1"
  echo "CONTAINERS_CONF=$d/containers.conf"
  echo "CONTAINERS_STORAGE_CONF=$d/storage.conf"
  echo "CONTAINERS_REGISTRIES_CONF=$d/registries.conf"
}

run_podman() { # engine dir podman-args...
  local e="$1" dir="$2"; shift 2
  local flags=() envs=()
  mapfile -t flags < <(engine_flags "$e" "$dir")
  mapfile -t envs < <(engine_env "$e" "$dir")
  env "${envs[@]}" podman "${flags[@]}" "$@"
}

build_rootfs_tar() { # out.tar
  local out="$1" rfs
  [ -s "$out" ] && return 0
  [ -x /bin/busybox ] || die "/bin/busybox missing (run: $0 install)"
  rfs="$(mktemp -d)"
  chmod 755 "$rfs"
  mkdir -p "$rfs"/{bin,etc,tmp,root,proc,sys,dev}
  chmod 1777 "$rfs/tmp"
  cp /bin/busybox "$rfs/bin/busybox"
  # One relative symlink per applet (sh, tar, sha256sum, find, ...), all in /bin. (`busybox
  # --install -s DIR` would point them at this temporary directory's absolute path.)
  local a
  for a in $(/bin/busybox --list); do
    [ "$a" = busybox ] || ln -sf busybox "$rfs/bin/$a"
  done
  ln -s bin "$rfs/sbin"
  mkdir -p "$rfs/usr"
  ln -s ../bin "$rfs/usr/bin"
  ln -s ../bin "$rfs/usr/sbin"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rfs/etc/group"
  # A private temporary name: several test workers may build the shared file at once.
  tar -C "$rfs" --numeric-owner --owner=0 --group=0 -cf "$out.$$.tmp" .
  mv "$out.$$.tmp" "$out"
  rm -rf "$rfs"
}

PG_IMAGE="${BERTH_PG_IMAGE:-localhost/berth-postgres:15}"
PG_ROOTFS="${BERTH_PG_ROOTFS:-/tmp/berth-postgres-rootfs.tar}"

# A PostgreSQL image with no registry: Debian's postgresql files, every library ldd lists for
# them, busybox for a shell, and an entrypoint that acts as the official image does on the
# variables berth sets (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB; data in
# /var/lib/postgresql/data). It runs as postgres (uid 999) and listens on every address.
build_pg_rootfs_tar() { # out.tar
  local out="$1" rfs bindir ver f lib
  [ -s "$out" ] && return 0
  bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [ -x "$bindir/postgres" ] || die "no Debian postgresql (run: scripts/postgres.sh install)"
  [ -x /bin/busybox ] || die "/bin/busybox missing (run: $0 install)"
  ver="$(basename "$(dirname "$bindir")")"
  rfs="$(mktemp -d)"
  chmod 755 "$rfs"
  mkdir -p "$rfs"/{bin,etc,tmp,root,proc,sys,dev,usr/lib/postgresql,usr/share/postgresql,usr/share,usr/local/bin,var/run/postgresql,var/lib/postgresql/data}
  chmod 1777 "$rfs/tmp"
  cp /bin/busybox "$rfs/bin/busybox"
  for f in $(/bin/busybox --list); do [ "$f" = busybox ] || ln -sf busybox "$rfs/bin/$f"; done
  ln -s bin "$rfs/sbin"
  cp -a "/usr/lib/postgresql/$ver" "$rfs/usr/lib/postgresql/$ver"
  cp -a "/usr/share/postgresql/$ver" "$rfs/usr/share/postgresql/$ver"
  # No JIT (its LLVM libraries are most of the size); UTC is the only time zone berth's tests use.
  rm -rf "$rfs/usr/lib/postgresql/$ver/lib/llvmjit"* "$rfs/usr/lib/postgresql/$ver/lib/bitcode"
  mkdir -p "$rfs/usr/share/zoneinfo"
  for f in UTC GMT Etc; do [ -e "/usr/share/zoneinfo/$f" ] && cp -a "/usr/share/zoneinfo/$f" "$rfs/usr/share/zoneinfo/"; done
  for f in "$bindir"/* "$rfs/usr/lib/postgresql/$ver"/lib/*.so; do
    [ -f "$f" ] || continue
    ldd "$f" 2>/dev/null | awk '/=>/ {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | grep '^/' || true
  done | sort -u | while read -r lib; do
    mkdir -p "$rfs$(dirname "$lib")"
    cp -L "$lib" "$rfs$lib"
    # The library directories that are symlinks on merged-/usr systems (/lib → usr/lib).
  done
  for f in lib lib64; do
    if [ -L "/$f" ] && [ -d "$rfs/$f" ] && [ ! -L "$rfs/$f" ]; then
      mkdir -p "$rfs/usr/$f"; cp -a "$rfs/$f/." "$rfs/usr/$f/"; rm -rf "${rfs:?}/$f"; ln -s "usr/$f" "$rfs/$f"
    fi
  done
  for f in "$bindir"/*; do ln -sf "/usr/lib/postgresql/$ver/bin/$(basename "$f")" "$rfs/usr/local/bin/$(basename "$f")"; done
  printf 'root:x:0:0:root:/root:/bin/sh\npostgres:x:999:999:postgres:/var/lib/postgresql:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rfs/etc/passwd"
  printf 'root:x:0:\npostgres:x:999:\nnogroup:x:65534:\n' >"$rfs/etc/group"
  cat >"$rfs/usr/local/bin/docker-entrypoint.sh" <<'SH'
#!/bin/sh
# The official image's behaviour on first start, enough for berth's tests.
set -e
export PGDATA="${PGDATA:-/var/lib/postgresql/data/pgdata}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA"
  chmod 700 "$PGDATA"
  pw="$(mktemp)"
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" >"$pw"
  initdb -D "$PGDATA" -U "${POSTGRES_USER:-postgres}" --pwfile="$pw" -E UTF8 --locale=C --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pw"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "${POSTGRES_DB:-postgres}" != postgres ]; then
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    psql -v ON_ERROR_STOP=1 -U "${POSTGRES_USER:-postgres}" -d postgres -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
SH
  chmod 755 "$rfs/usr/local/bin/docker-entrypoint.sh"
  chown -R 999:999 "$rfs/var/lib/postgresql" "$rfs/var/run/postgresql"
  tar -C "$rfs" --numeric-owner -cf "$out.$$.tmp" .
  mv "$out.$$.tmp" "$out"
  rm -rf "$rfs"
}

cmd_pg_image() {
  local dir="${1:?usage: $0 pg-image DIR}" e
  dir="$(cd "$dir" && pwd)"
  build_pg_rootfs_tar "$PG_ROOTFS"
  for e in "${ENGINES[@]}"; do
    [ -S "$dir/$e/engine.sock" ] || continue
    run_podman "$e" "$dir" image exists "$PG_IMAGE" 2>/dev/null && continue
    # Test files sharing one pair may import it at the same moment: theirs counts as well.
    run_podman "$e" "$dir" import --quiet --change 'USER postgres' \
      --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'ENV TZ=UTC' \
      --change 'STOPSIGNAL SIGINT' --change 'CMD ["/usr/local/bin/docker-entrypoint.sh"]' \
      "$PG_ROOTFS" "$PG_IMAGE" >/dev/null || run_podman "$e" "$dir" image exists "$PG_IMAGE"
  done
  log "pg-image: $PG_IMAGE"
}

# A rootfs with busybox for a shell, `files` copied as they are and every library ldd lists for
# `elfs` (binaries and shared objects); what the build packs' test images start from.
rootfs_with() { # rfs elf...
  local rfs="$1" f lib; shift
  chmod 755 "$rfs"
  mkdir -p "$rfs"/{bin,etc,tmp,root,proc,sys,dev,usr/local/bin}
  chmod 1777 "$rfs/tmp"
  cp /bin/busybox "$rfs/bin/busybox"
  for f in $(/bin/busybox --list); do [ "$f" = busybox ] || ln -sf busybox "$rfs/bin/$f"; done
  ln -s bin "$rfs/sbin"
  for f in "$@"; do
    [ -f "$f" ] || continue
    ldd "$f" 2>/dev/null | awk '/=>/ {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | grep '^/' || true
  done | sort -u | while read -r lib; do
    mkdir -p "$rfs$(dirname "$lib")"
    cp -L "$lib" "$rfs$lib"
  done
  for f in lib lib64; do
    if [ -L "/$f" ] && [ -d "$rfs/$f" ] && [ ! -L "$rfs/$f" ]; then
      mkdir -p "$rfs/usr/$f"; cp -a "$rfs/$f/." "$rfs/usr/$f/"; rm -rf "${rfs:?}/$f"; ln -s "usr/$f" "$rfs/$f"
    fi
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rfs/etc/group"
}

# node:22-slim's stand-in: the host's node binary and its npm (the one `npm ci` ran with).
build_node_rootfs_tar() { # out.tar
  local out="$1" rfs node npmdir
  [ -s "$out" ] && return 0
  node="$(readlink -f "$(command -v node)")"
  npmdir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
  [ -x "$node" ] && [ -f "$npmdir/bin/npm-cli.js" ] || die "node and npm are needed for the node image"
  rfs="$(mktemp -d)"
  rootfs_with "$rfs" "$node"
  mkdir -p "$rfs/usr/local/lib/node_modules"
  cp "$node" "$rfs/usr/local/bin/node"
  cp -a "$npmdir" "$rfs/usr/local/lib/node_modules/npm"
  printf '#!/bin/sh\nexec node /usr/local/lib/node_modules/npm/bin/npm-cli.js "$@"\n' >"$rfs/usr/local/bin/npm"
  chmod 755 "$rfs/usr/local/bin/npm"
  tar -C "$rfs" --numeric-owner -cf "$out.$$.tmp" .
  mv "$out.$$.tmp" "$out"
  rm -rf "$rfs"
}

# python:3.12-slim's stand-in: Debian's python3 with its standard library and pip (no
# EXTERNALLY-MANAGED marker: as in the official image, pip installs into the image).
build_python_rootfs_tar() { # out.tar
  local out="$1" rfs py ver
  [ -s "$out" ] && return 0
  py="$(readlink -f /usr/bin/python3)"
  ver="$(basename "$py")"
  [ -x "$py" ] && [ -d /usr/lib/python3/dist-packages/pip ] || die "Debian's python3 and python3-pip are needed for the python image (run: $0 install)"
  rfs="$(mktemp -d)"
  rootfs_with "$rfs" "$py" /usr/lib/"$ver"/lib-dynload/*.so
  mkdir -p "$rfs/usr/bin" "$rfs/usr/lib/python3/dist-packages"
  cp "$py" "$rfs/usr/bin/$ver"
  cp -a "/usr/lib/$ver" "$rfs/usr/lib/$ver"
  rm -rf "$rfs/usr/lib/$ver/test" "$rfs/usr/lib/$ver/EXTERNALLY-MANAGED" "$rfs/usr/lib/$ver"/config-*
  cp -a /usr/lib/python3/dist-packages/pip /usr/lib/python3/dist-packages/pip-*.dist-info "$rfs/usr/lib/python3/dist-packages/"
  for f in python python3; do ln -sf "/usr/bin/$ver" "$rfs/usr/local/bin/$f"; done
  tar -C "$rfs" --numeric-owner -cf "$out.$$.tmp" .
  mv "$out.$$.tmp" "$out"
  rm -rf "$rfs"
}

BP_NODE_IMAGE=localhost/berth-bp-node:test
BP_PYTHON_IMAGE=localhost/berth-bp-python:test
BP_STATIC_IMAGE=localhost/berth-bp-static:test

cmd_buildpack_images() {
  local dir="${1:?usage: $0 buildpack-images DIR}" node_tar py_tar
  dir="$(cd "$dir" && pwd)"
  # Named by the binaries they copy (size and time), so an upgraded node or python makes new ones.
  node_tar="/tmp/berth-bp-node-rootfs-$(stat -c %s-%Y "$(readlink -f "$(command -v node)")").tar"
  py_tar="/tmp/berth-bp-python-rootfs-$(stat -c %s-%Y "$(readlink -f /usr/bin/python3)" 2>/dev/null || echo none).tar"
  build_node_rootfs_tar "$node_tar"
  build_python_rootfs_tar "$py_tar"
  local env='ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  # Test files sharing one pair may import at the same moment: theirs counts as well.
  run_podman a "$dir" image exists "$BP_NODE_IMAGE" 2>/dev/null ||
    run_podman a "$dir" import --quiet --change "$env" --change 'ENV HOME=/root' --change 'CMD ["node"]' "$node_tar" "$BP_NODE_IMAGE" >/dev/null ||
    run_podman a "$dir" image exists "$BP_NODE_IMAGE"
  run_podman a "$dir" image exists "$BP_PYTHON_IMAGE" 2>/dev/null ||
    run_podman a "$dir" import --quiet --change "$env" --change 'CMD ["python3"]' "$py_tar" "$BP_PYTHON_IMAGE" >/dev/null ||
    run_podman a "$dir" image exists "$BP_PYTHON_IMAGE"
  # nginx:alpine's contract: /usr/share/nginx/html served on port 80 by the image's own command.
  run_podman a "$dir" image exists "$BP_STATIC_IMAGE" 2>/dev/null ||
    run_podman a "$dir" import --quiet --change "$env" --change 'CMD ["httpd", "-f", "-p", "80", "-h", "/usr/share/nginx/html"]' \
      "$dir/busybox-rootfs.tar" "$BP_STATIC_IMAGE" >/dev/null ||
    run_podman a "$dir" image exists "$BP_STATIC_IMAGE"
  log "buildpack-images: $BP_NODE_IMAGE $BP_PYTHON_IMAGE $BP_STATIC_IMAGE"
}

MOSQUITTO_IMAGE="docker.io/library/eclipse-mosquitto:2"
MOSQUITTO_ROOTFS="${BERTH_MOSQUITTO_ROOTFS:-/tmp/berth-mosquitto-rootfs.tar}"

# The MQTT broker of the `mosquitto` one-click template with no registry: Debian's mosquitto and
# mosquitto_passwd (packages fetched with apt-get download, unpacked, never installed), every
# library ldd lists for them, busybox for the template's shell entrypoint, and the official
# image's layout (/mosquitto/{config,data,log}, user mosquitto, uid 1883).
build_mosquitto_rootfs_tar() { # out.tar
  local out="$1" rfs debs f lib
  [ -s "$out" ] && return 0
  [ -x /bin/busybox ] || die "/bin/busybox missing (run: $0 install)"
  debs="$(mktemp -d)"
  chmod 777 "$debs"
  (cd "$debs" && { apt-get download -qq mosquitto libmosquitto1 libcjson1 libdlt2 libwrap0 >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get download -qq mosquitto libmosquitto1 libcjson1 libdlt2 libwrap0 >/dev/null 2>&1; }; }) || die "apt-get download of mosquitto failed"
  mkdir "$debs/x"
  for f in "$debs"/*.deb; do dpkg-deb -x "$f" "$debs/x"; done
  rfs="$(mktemp -d)"
  chmod 755 "$rfs"
  mkdir -p "$rfs"/{bin,etc,tmp,root,proc,sys,dev,usr/bin,usr/sbin,mosquitto/config,mosquitto/data,mosquitto/log}
  chmod 1777 "$rfs/tmp"
  cp /bin/busybox "$rfs/bin/busybox"
  for f in $(/bin/busybox --list); do [ "$f" = busybox ] || ln -sf busybox "$rfs/bin/$f"; done
  cp "$debs/x/usr/sbin/mosquitto" "$rfs/usr/sbin/"
  cp "$debs/x/usr/bin/mosquitto_passwd" "$rfs/usr/bin/"
  for f in "$rfs/usr/sbin/mosquitto" "$rfs/usr/bin/mosquitto_passwd"; do
    LD_LIBRARY_PATH="$debs/x/usr/lib/x86_64-linux-gnu" ldd "$f" 2>/dev/null | awk '/=>/ {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | grep '^/' || true
  done | sort -u | while read -r lib; do
    case "$lib" in
      "$debs/x"/*) mkdir -p "$rfs/usr/lib/x86_64-linux-gnu"; cp -L "$lib" "$rfs/usr/lib/x86_64-linux-gnu/" ;;
      *) mkdir -p "$rfs$(dirname "$lib")"; cp -L "$lib" "$rfs$lib" ;;
    esac
  done
  for f in lib lib64; do
    if [ -L "/$f" ] && [ -d "$rfs/$f" ] && [ ! -L "$rfs/$f" ]; then
      mkdir -p "$rfs/usr/$f"; cp -a "$rfs/$f/." "$rfs/usr/$f/"; rm -rf "${rfs:?}/$f"; ln -s "usr/$f" "$rfs/$f"
    fi
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nmosquitto:x:1883:1883:mosquitto:/var/empty:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rfs/etc/passwd"
  printf 'root:x:0:\nmosquitto:x:1883:\nnogroup:x:65534:\n' >"$rfs/etc/group"
  printf 'listener 1883\nallow_anonymous false\n' >"$rfs/mosquitto/config/mosquitto.conf"
  chown -R 1883:1883 "$rfs/mosquitto"
  tar -C "$rfs" --numeric-owner -cf "$out.$$.tmp" .
  mv "$out.$$.tmp" "$out"
  rm -rf "$rfs" "$debs"
}

cmd_mosquitto_image() {
  local dir="${1:?usage: $0 mosquitto-image DIR}" e
  dir="$(cd "$dir" && pwd)"
  build_mosquitto_rootfs_tar "$MOSQUITTO_ROOTFS"
  for e in "${ENGINES[@]}"; do
    [ -S "$dir/$e/engine.sock" ] || continue
    run_podman "$e" "$dir" image exists "$MOSQUITTO_IMAGE" 2>/dev/null && continue
    run_podman "$e" "$dir" import --quiet --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["/usr/sbin/mosquitto", "-c", "/mosquitto/config/mosquitto.conf"]' \
      "$MOSQUITTO_ROOTFS" "$MOSQUITTO_IMAGE" >/dev/null || run_podman "$e" "$dir" image exists "$MOSQUITTO_IMAGE"
  done
  log "mosquitto-image: $MOSQUITTO_IMAGE"
}

wait_ping() { # socket deadline-seconds log
  local sock="$1" until=$((SECONDS + $2))
  while [ $SECONDS -lt $until ]; do
    if [ -S "$sock" ] && [ "$(curl -fsS --max-time 2 --unix-socket "$sock" http://d/_ping 2>/dev/null)" = "OK" ]; then
      return 0
    fi
    sleep 0.1
  done
  echo "engines: $sock did not answer /_ping; service log:" >&2
  tail -n 30 "$3" >&2 || true
  return 1
}

cmd_up() {
  local dir="${1:?usage: $0 up DIR}" e
  command -v podman >/dev/null || die "podman not installed (run: $0 install)"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  [ ${#dir} -le 80 ] || die "DIR too long for a unix socket path: $dir"
  # Built once per busybox binary and kept in /tmp (a fork per applet link took seconds of every
  # test file's engine start on a busy machine), as the PostgreSQL rootfs is.
  local rootfs
  rootfs="${BERTH_BUSYBOX_ROOTFS:-/tmp/berth-busybox-rootfs-$(stat -c %s-%Y /bin/busybox 2>/dev/null || echo none).tar}"
  build_rootfs_tar "$rootfs"
  # Tests and benches import it from DIR as well (variants of the image).
  cp "$rootfs" "$dir/busybox-rootfs.tar"
  for e in "${ENGINES[@]}"; do
    local d="$dir/$e"
    if [ -f "$d/service.pid" ] && kill -0 "$(cat "$d/service.pid")" 2>/dev/null; then
      log "engine $e already running"
      continue
    fi
    write_config "$e" "$dir"
    : >"$d/registries.conf"
    rm -f "$d/engine.sock"
    local flags=() envs=()
    mapfile -t flags < <(engine_flags "$e" "$dir")
    mapfile -t envs < <(engine_env "$e" "$dir")
    # DPKG_ADMINDIR: an empty package database for the service alone. Podman's GET /version
    # (berth asks it when validating a server and once per engine client) looks up the packages
    # of runc and conmon with `dpkg -S` twice per call, which reads every package's file list:
    # 3-9 s per call on a loaded machine here. Without a database the lookups fail at once and
    # the reply names the package "Unknown"; everything else in it is unchanged.
    mkdir -p "$d/dpkg"
    # setsid: the service outlives this script and is not killed with the caller's process group.
    setsid env "${envs[@]}" DPKG_ADMINDIR="$d/dpkg" podman "${flags[@]}" system service --time=0 "unix://$d/engine.sock" \
      >"$d/service.log" 2>&1 </dev/null &
    echo $! >"$d/service.pid"
  done
  for e in "${ENGINES[@]}"; do
    wait_ping "$dir/$e/engine.sock" 30 "$dir/$e/service.log"
  done
  for e in "${ENGINES[@]}"; do
    if ! run_podman "$e" "$dir" image exists "$IMAGE" 2>/dev/null; then
      run_podman "$e" "$dir" import --quiet --change 'CMD ["/bin/sh"]' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        "$dir/busybox-rootfs.tar" "$IMAGE" >/dev/null
    fi
  done
  # The image must be visible through the API, not only to the CLI.
  for e in "${ENGINES[@]}"; do
    curl -fsS --max-time 5 --unix-socket "$dir/$e/engine.sock" \
      "http://d/images/$IMAGE/json" >/dev/null || die "engine $e does not list $IMAGE"
  done
  log "up: $dir/a/engine.sock $dir/b/engine.sock ($IMAGE)"
}

# conmon processes of these engines: an exec session's conmon waits --exit-delay (300 s) after
# the session ends and outlives the service. Ours name an engine's storage root as an argument.
# Shell builtins only: a `cat` per process on a busy machine (hundreds of processes, each fork
# slow under load) made every `down` take 35 s or more.
engine_conmons() { # dir
  local dir="$1" p e comm arg
  for p in /proc/[0-9]*; do
    comm=""
    { read -r comm <"$p/comm"; } 2>/dev/null || continue
    [ "$comm" = conmon ] || continue
    while IFS= read -r -d '' arg; do
      for e in "${ENGINES[@]}"; do
        if [ "$arg" = "$dir/$e/root" ]; then echo "${p#/proc/}"; continue 3; fi
      done
    done 2>/dev/null <"$p/cmdline"
  done
}

kill_conmons() { # dir
  local dir="$1" pid left
  for pid in $(engine_conmons "$dir"); do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 40); do
    left="$(engine_conmons "$dir")"
    [ -z "$left" ] && return 0
    sleep 0.05
  done
  for pid in $left; do kill -KILL "$pid" 2>/dev/null || true; done
}

cmd_down() {
  local dir="${1:?usage: $0 down DIR}" e pid pids=()
  [ -d "$dir" ] || return 0
  dir="$(cd "$dir" && pwd)"
  for e in "${ENGINES[@]}"; do
    local d="$dir/$e"
    [ -d "$d" ] || continue
    if [ -S "$d/engine.sock" ] && [ -f "$d/service.pid" ] && kill -0 "$(cat "$d/service.pid")" 2>/dev/null; then
      # Remove every container (stops them) so no conmon or container process outlives the engine.
      run_podman "$e" "$dir" rm --all --force --time 0 >/dev/null 2>&1 || true
    fi
    if [ -f "$d/service.pid" ]; then
      pid="$(cat "$d/service.pid")"
      # Only our own service: its command line names this engine's socket.
      if kill -0 "$pid" 2>/dev/null && grep -qF "$d/engine.sock" "/proc/$pid/cmdline" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        pids+=("$pid")
      fi
    fi
  done
  # Both services shut down at once (each takes a second or two).
  for _ in $(seq 100); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && break
    sleep 0.05
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  kill_conmons "$dir"
  for e in "${ENGINES[@]}"; do
    local d="$dir/$e"
    [ -d "$d" ] || continue
    # Storage (overlay mounts under the root) must be released before the files can go.
    run_podman "$e" "$dir" system reset --force >/dev/null 2>&1 || true
    { grep -F " $d/" /proc/mounts || true; } | awk '{print $2}' | sort -r | while read -r m; do
      umount -l "$m" 2>/dev/null || true
    done
  done
  # A container's last files can still be going (conmon's exit) as the first removal walks them.
  rm -rf "$dir" 2>/dev/null || { sleep 1; rm -rf "$dir"; }
}

cmd_env() {
  local dir="${1:?usage: $0 env DIR}"
  dir="$(cd "$dir" && pwd)"
  echo "ENGINE_A_SOCKET=$dir/a/engine.sock"
  echo "ENGINE_B_SOCKET=$dir/b/engine.sock"
  echo "ENGINE_IMAGE=$IMAGE"
}

case "${1:-}" in
  install) cmd_install ;;
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  env) shift; cmd_env "$@" ;;
  pg-image) shift; cmd_pg_image "$@" ;;
  buildpack-images) shift; cmd_buildpack_images "$@" ;;
  mosquitto-image) shift; cmd_mosquitto_image "$@" ;;
  rootfs) shift; build_rootfs_tar "${1:?usage: $0 rootfs OUT}" ;;
  podman) shift; e="${1:?engine}"; dir="${2:?dir}"; shift 2; dir="$(cd "$dir" && pwd)"; run_podman "$e" "$dir" "$@" ;;
  # What `podman` needs to act on engine E: its environment (NAME=value lines), a `--` line, then
  # its global flags, one a line. Tests run podman with them directly (a bash and three forks
  # fewer per call than `podman E DIR ...`, which they call hundreds of times).
  podman-args) shift; e="${1:?engine}"; dir="${2:?dir}"; dir="$(cd "$dir" && pwd)"; engine_env "$e" "$dir"; echo --; engine_flags "$e" "$dir" ;;
  *) echo "usage: $0 install | up DIR | down DIR | env DIR | podman a|b DIR ARGS... | podman-args a|b DIR" >&2; exit 2 ;;
esac
