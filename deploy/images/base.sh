#!/usr/bin/env bash
# The base image every onceflow image builds on: Debian bookworm (`make images` runs this).
#
# 1. When BASE_IMAGE (default debian:bookworm-slim) is present or can be pulled, use it.
# 2. Otherwise build the same Debian from Debian's packages: debootstrap a minimal bookworm root
#    filesystem with the apt sources of the official image (main, updates, security), trim it like
#    the slim image (no apt lists, caches, docs or man pages), and `docker import` it as
#    onceflow-debian:bookworm. No other image registry is needed, and no certificate authority of the
#    host is copied in (the root filesystem has none: apt fetches over HTTP and checks signatures).
# Prints the base image's name on its last line, for build.sh.
set -euo pipefail

WANTED=${BASE_IMAGE:-debian:bookworm-slim}
LOCAL=onceflow-debian:bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

say() { echo "base: $*" >&2; }

# Step 1
if docker image inspect "$WANTED" >/dev/null 2>&1 || docker pull -q "$WANTED" >/dev/null 2>&1; then
  say "using $WANTED"; echo "$WANTED"; exit 0
fi
if docker image inspect "$LOCAL" >/dev/null 2>&1; then
  say "$WANTED cannot be pulled; using $LOCAL (built by debootstrap earlier)"; echo "$LOCAL"; exit 0
fi

# Step 2
command -v debootstrap >/dev/null 2>&1 || { say "$WANTED cannot be pulled and debootstrap is missing (make docker installs it)"; exit 1; }
[ "$(id -u)" -eq 0 ] || { say "$WANTED cannot be pulled; building it with debootstrap needs root"; exit 1; }
say "$WANTED cannot be pulled; building $LOCAL with debootstrap from $MIRROR"
root=$(mktemp -d /tmp/onceflow-debian.XXXXXX)
trap 'rm -rf "$root"' EXIT
start=$(date +%s)
debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$root.log" 2>&1 || {
  say "debootstrap failed (the end of its log:)"; tail -n 20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
cat >"$root/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY_MIRROR bookworm-security main
SOURCES
# As the official image: no recommended packages, no cached .debs, no docs or translations.
cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'CONF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
Acquire::Languages "none";
CONF
cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'CONF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
CONF
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/log/*.log "$root"/tmp/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
# The engine mounts these per container.
: >"$root/etc/resolv.conf"; : >"$root/etc/hostname"
tar --numeric-owner -C "$root" -c . | docker import \
  --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --message "debootstrap --variant=minbase bookworm ($MIRROR)" - "$LOCAL" >/dev/null
say "built $LOCAL in $(( $(date +%s) - start ))s ($(docker image inspect -f '{{.Size}}' "$LOCAL" | numfmt --to=iec))"
echo "$LOCAL"
