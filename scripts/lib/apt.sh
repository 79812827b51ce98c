# Sourced by scripts/engines.sh, dockerd.sh, postgres.sh and sshd.sh (relative to their own
# directory): their one way to install Debian packages for the tests and benches.
#
#   apt_install PACKAGE...   installs the PACKAGEs dpkg does not list as installed, quietly and
#                            without recommends; nothing to do (the usual case) needs no root.
#
# Messages go through the sourcing script's `die` (its name in front), and its `log` when it has
# one (engines.sh and dockerd.sh say what they install; the others never did).

apt_install() {
  local need=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "installing ${need[*]} needs root"
  export DEBIAN_FRONTEND=noninteractive
  if declare -F log >/dev/null; then log "installing ${need[*]}"; fi
  # Try the cached package lists first (a clean machine's are empty or stale: then refresh them
  # once). No package's own service starts here: there is no init system (policy-rc.d says no).
  if ! apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}
