#!/usr/bin/env bash
# Starts a Docker engine for the image builds and the compose deploy test (`make docker`).
#
# 1. When `docker info` already answers, there is nothing to do.
# 2. Otherwise install what is missing from Debian (docker.io for dockerd and the CLI, debootstrap for the
#    base image of build.sh); this needs root and apt-get, and says so when either is missing.
# 3. Start dockerd in the background (its log: .cache/docker/dockerd.log) with the overlay2 storage driver,
#    or vfs where overlay2 cannot mount (vfs copies every layer: slower and larger, but it works anywhere).
# 4. Wait until `docker info` answers, and print the engine's version and storage driver.
# Exit 1 with the reason when no engine can be started: `make deploy-test` never passes without one.
set -euo pipefail

cd "$(dirname "$0")/../.."
STATE=.cache/docker
LOG=$STATE/dockerd.log
WAIT_S=${DOCKERD_WAIT_S:-60}

say() { echo "docker: $*"; }
fail() { echo "docker: $*" >&2; exit 1; }

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

# Step 1
if command -v docker >/dev/null 2>&1 && engine_answers; then
  say "engine ok ($(docker info --format '{{.ServerVersion}}, storage driver {{.Driver}}'))"
  exit 0
fi

# Step 2
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || fail "no Docker engine answers and ${missing[*]} is missing; installing it needs root.
docker: run 'make docker' as root, or install Docker and start it yourself (the user needs access to its socket)."
  command -v apt-get >/dev/null 2>&1 || fail "no Docker engine answers and there is no apt-get to install ${missing[*]}.
docker: install Docker (and debootstrap) with your system's package manager, start it, and run this again."
  say "installing ${missing[*]} from Debian (apt-get)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null || fail "apt-get could not install ${missing[*]} (see its errors above)."
fi
[ "$(id -u)" -eq 0 ] || fail "dockerd is installed but no engine answers; starting one needs root (or start Docker yourself)."

# Step 3
mkdir -p "$STATE"
start_dockerd() {  # start_dockerd DRIVER: started and answering within WAIT_S, or stopped again
  local driver=$1 pid waited=0
  say "starting dockerd (storage driver $driver; log $LOG)"
  setsid dockerd --storage-driver="$driver" --log-level=warn >>"$LOG" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$STATE/dockerd.pid"
  # Step 4
  until engine_answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
      say "dockerd exited with storage driver $driver (the end of its log:)"; tail -n 5 "$LOG" | sed 's/^/  /'
      return 1
    fi
    if [ "$waited" -ge "$WAIT_S" ]; then
      say "dockerd did not answer within ${WAIT_S}s with storage driver $driver; stopping it"
      kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
      return 1
    fi
    sleep 1; waited=$((waited + 1))
  done
}
if start_dockerd overlay2 || start_dockerd vfs; then
  say "engine ok ($(docker info --format '{{.ServerVersion}}, storage driver {{.Driver}}'))"
else
  fail "could not start a Docker engine (see $LOG)."
fi
