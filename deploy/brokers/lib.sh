# Shared helpers for the broker scripts: every broker binds 127.0.0.1 only and is reused when it already answers.
# shellcheck shell=bash

STATE_DIR="${XGATE_BROKER_STATE:-${TMPDIR:-/tmp}/xgate-brokers}"
mkdir -p "$STATE_DIR"

port_open() {  # port_open PORT -> 0 when something accepts TCP on 127.0.0.1:PORT
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && exec 3>&- 3<&-
}

wait_port() {  # wait_port PORT SECONDS NAME
  local port=$1 seconds=$2 name=$3 i
  for ((i = 0; i < seconds * 10; i++)); do
    port_open "$port" && return 0
    sleep 0.1
  done
  echo "$name did not open 127.0.0.1:$port within ${seconds}s" >&2
  return 1
}

wait_closed() {  # wait_closed PORT SECONDS
  local port=$1 seconds=$2 i
  for ((i = 0; i < seconds * 10; i++)); do
    port_open "$port" || return 0
    sleep 0.1
  done
  return 1
}

apt_install() {  # apt_install PACKAGE...: install Debian packages when their binaries are missing
  if [ "$(id -u)" != 0 ]; then
    echo "need root to apt-get install $*" >&2
    return 1
  fi
  if [ ! -f "$STATE_DIR/apt-updated" ]; then
    apt-get update -qq >/dev/null && touch "$STATE_DIR/apt-updated"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
