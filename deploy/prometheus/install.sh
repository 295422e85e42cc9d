#!/usr/bin/env bash
# Makes `prometheus` and `promtool` available (Debian package `prometheus`, which ships both) and prints their paths.
#
# Already on PATH: prints the paths and does nothing else.
# Otherwise (root needed): `apt-get update` once, then installs the package without its recommends (no
# prometheus-node-exporter). The package's postinst would start a system Prometheus on 0.0.0.0:9090; a
# policy-rc.d that says "no" is put in place for the install (when the machine has none already), and any
# Prometheus process that the install started anyway is stopped, by its process id.
#
# Exit codes: 0 ready; 1 cannot install (not root, no apt, package missing, ...); 75 no package registry reachable.
set -euo pipefail

print_paths() {
  echo "prometheus: $(command -v prometheus)"
  echo "promtool:   $(command -v promtool)"
  echo "version:    $(promtool --version 2>&1 | head -n 1)"
}

if command -v promtool >/dev/null && command -v prometheus >/dev/null; then
  print_paths
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "install.sh: prometheus/promtool are missing and installing them needs root (apt-get install prometheus)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "install.sh: no apt-get on this machine; install Prometheus 2.x (prometheus + promtool) by other means" >&2
  exit 1
fi

POLICY=/usr/sbin/policy-rc.d
OWN_POLICY=0
UPDATE_LOG=$(mktemp)
INSTALL_LOG=$(mktemp)
cleanup() {
  rm -f "$UPDATE_LOG" "$INSTALL_LOG"
  if [ "$OWN_POLICY" = 1 ]; then rm -f "$POLICY"; fi
}
trap cleanup EXIT

# Keep the package's init scripts from starting a service: invoke-rc.d asks policy-rc.d, and 101 means "no".
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\n# written by xgate deploy/prometheus/install.sh for the duration of an install\nexit 101\n' >"$POLICY"
  chmod 755 "$POLICY"
  OWN_POLICY=1
fi

prometheus_pids() {  # the ids of running processes whose program is prometheus, one a line
  local dir
  for dir in /proc/[0-9]*; do
    [ "$(cat "$dir/comm" 2>/dev/null)" = prometheus ] && echo "${dir#/proc/}"
  done
  return 0
}

registry_unreachable() {  # 0 when apt's output says it could not reach a package registry
  cat "$UPDATE_LOG" "$INSTALL_LOG" | grep -qiE \
    "could not resolve|temporary failure resolving|failed to fetch|unable to connect|connection (timed out|refused)|network is unreachable"
}

fail() {  # fail WHAT: exit 75 when no registry answered, else 1
  if registry_unreachable; then
    echo "install.sh: no package registry reachable ($1 failed)" >&2
    exit 75
  fi
  echo "install.sh: $1 failed" >&2
  exit 1
}

before=$(prometheus_pids)

# `apt-get update` may only warn when a source cannot be reached: then the install decides.
apt-get update -qq >"$UPDATE_LOG" 2>&1 || { cat "$UPDATE_LOG" >&2; fail "apt-get update"; }
cat "$UPDATE_LOG" >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >"$INSTALL_LOG" 2>&1 \
  || { cat "$INSTALL_LOG" >&2; fail "apt-get install prometheus"; }

# Stop a Prometheus that the install started anyway (one that was not running before it).
for pid in $(prometheus_pids); do
  if ! grep -qx "$pid" <<<"$before"; then
    echo "install.sh: stopping the Prometheus (pid $pid) that the package started" >&2
    kill -TERM "$pid" 2>/dev/null || true
  fi
done

print_paths
