#!/usr/bin/env bash
# Makes `prometheus` and `promtool` available (Debian package `prometheus`, which ships both) and prints their paths.
#
# Already on PATH: prints the paths and does nothing else.
# Otherwise (root needed): `apt-get update` once, then installs the package without its recommends (no
# prometheus-node-exporter). The package's postinst would start a system Prometheus on 0.0.0.0:9090; that is
# prevented with a policy-rc.d for the duration of the install (when the machine has none already), and any
# Prometheus process that the install started anyway is stopped, by its process id.
#
# Exit codes: 0 ready; 1 cannot install (not root, package missing, ...); 75 no package registry reachable.
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

# Keep the package's init scripts from starting a service: invoke-rc.d asks policy-rc.d, and 101 means "no".
POLICY=/usr/sbin/policy-rc.d
OWN_POLICY=0
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\n# written by xgate deploy/prometheus/install.sh for the duration of an install\nexit 101\n' >"$POLICY"
  chmod 755 "$POLICY"
  OWN_POLICY=1
fi
cleanup() { if [ "$OWN_POLICY" = 1 ]; then rm -f "$POLICY"; fi; }
trap cleanup EXIT

prometheus_pids() {  # the ids of running processes whose program is prometheus, one a line
  local dir
  for dir in /proc/[0-9]*; do
    [ "$(cat "$dir/comm" 2>/dev/null)" = prometheus ] && echo "${dir#/proc/}"
  done
  return 0
}
before=$(prometheus_pids)

LOG=$(mktemp)
registry_unreachable() {  # registry_unreachable LOG -> 0 when apt's output says it could not reach a registry
  grep -qiE "could not resolve|temporary failure resolving|failed to fetch|unable to connect|connection (timed out|refused)|network is unreachable" "$1"
}
if ! apt-get update -qq >"$LOG" 2>&1 || registry_unreachable "$LOG"; then
  cat "$LOG" >&2
  if registry_unreachable "$LOG"; then
    echo "install.sh: no package registry reachable (apt-get update failed)" >&2
    exit 75
  fi
  exit 1
fi
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >"$LOG" 2>&1; then
  cat "$LOG" >&2
  if registry_unreachable "$LOG"; then
    echo "install.sh: no package registry reachable (apt-get install prometheus failed)" >&2
    exit 75
  fi
  exit 1
fi
rm -f "$LOG"

# Stop a Prometheus that the install started anyway (one not running before it).
for pid in $(prometheus_pids); do
  if ! grep -qx "$pid" <<<"$before"; then
    echo "install.sh: stopping the Prometheus (pid $pid) that the package started" >&2
    kill -TERM "$pid" 2>/dev/null || true
  fi
done

print_paths
