#!/usr/bin/env bash
# Mosquitto 2 (MQTT 3.1.1 and 5.0) on 127.0.0.1:${XGATE_MQTT_PORT:-1883}: start | stop | restart | status
#
# start   reuses a broker that already answers on the port; otherwise installs mosquitto (apt) when missing
#         and starts one with xgate's configuration (below), then waits for the port.
# stop    stops the broker this script started (and the Debian package's own instance when it holds the
#         port), waiting until it has written its persistence file.
# restart stop + start: persistent sessions, their subscriptions and queued messages survive.
# status  exits 0 when the port answers.
#
# xgate's configuration differs from Mosquitto's defaults where the defaults lose messages:
#   max_queued_messages 1000 silently drops QoS 1/2 messages beyond 1000 per session (offline
#   persistent sessions, and online ones whose in-flight window is full); here 1000000.
#   persistence is on, saved every 10 s and on a clean stop.
# A broker not started by this script (e.g. the machine's `mosquitto -c /etc/mosquitto/mosquitto.conf`)
# is reused as it is, with a warning: run `restart` once to replace it with this configuration.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

PORT="${XGATE_MQTT_PORT:-1883}"
DIR="$STATE_DIR/mosquitto-$PORT"
CONF="$DIR/mosquitto.conf"
PIDFILE="$DIR/mosquitto.pid"
LOG="$DIR/mosquitto.log"
# the Debian package's instance (started by its init script or by hand with the packaged config)
PACKAGED_PIDFILE=/run/mosquitto/mosquitto.pid

pid_alive() {  # pid_alive PIDFILE -> 0 when it names a running mosquitto process
  local pid
  [ -f "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = mosquitto ]
}

stop_pid() {  # stop_pid PIDFILE: SIGTERM, then wait for the process to exit (it saves its database on exit)
  local pid i
  pid_alive "$1" || return 0
  pid=$(cat "$1")
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 150; i++)); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = mosquitto ] || return 0
    sleep 0.1
  done
  echo "mosquitto (pid $pid) did not stop within 15s" >&2
  return 1
}

write_config() {
  local data="$DIR/data"
  # on the standard port, keep the packaged broker's database so that replacing it loses no session
  if [ "$PORT" = 1883 ] && [ -d /var/lib/mosquitto ] && [ "$(id -u)" = 0 ]; then
    data=/var/lib/mosquitto
  fi
  mkdir -p "$DIR" "$data"
  cat >"$CONF" <<EOF
# written by deploy/brokers/mosquitto.sh
listener $PORT 127.0.0.1
allow_anonymous true
pid_file $PIDFILE
persistence true
persistence_location $data/
autosave_interval 10
max_queued_messages 1000000
max_queued_bytes 0
max_inflight_messages 1000
log_dest file $LOG
log_type error
log_type warning
connection_messages false
EOF
  # run as root, mosquitto drops to the mosquitto user: it must be able to write its files
  if [ "$(id -u)" = 0 ] && id mosquitto >/dev/null 2>&1; then
    chown mosquitto: "$DIR" "$data"
    touch "$LOG" && chown mosquitto: "$LOG"
    [ ! -f "$data/mosquitto.db" ] || chown mosquitto: "$data/mosquitto.db"
  fi
}

start() {
  if port_open "$PORT"; then
    if ! pid_alive "$PIDFILE"; then
      echo "mosquitto.sh: reusing the MQTT broker already on 127.0.0.1:$PORT (not started by this script;" \
        "its default max_queued_messages 1000 can drop queued messages): '$0 restart' replaces it" >&2
    fi
    return 0
  fi
  if ! command -v mosquitto >/dev/null 2>&1; then
    apt_install mosquitto || { echo "could not install mosquitto (apt-get install mosquitto)" >&2; return 1; }
    # the package may start its own instance on 1883: ours takes its place
    stop_pid "$PACKAGED_PIDFILE"
    wait_closed "$PORT" 10 || true
  fi
  write_config
  if ! mosquitto -d -c "$CONF"; then
    echo "mosquitto failed to start with $CONF; log: $LOG" >&2
    return 1
  fi
  wait_port "$PORT" 10 mosquitto || { tail -n 5 "$LOG" >&2 2>/dev/null; return 1; }
}

stop() {
  stop_pid "$PIDFILE"
  rm -f "$PIDFILE"
  if [ "$PORT" = 1883 ] && port_open "$PORT" && pid_alive "$PACKAGED_PIDFILE"; then
    stop_pid "$PACKAGED_PIDFILE"
  fi
  if ! wait_closed "$PORT" 10; then
    echo "something not started by this script still listens on 127.0.0.1:$PORT" >&2
    return 1
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop && start ;;
  status) port_open "$PORT" ;;
  *)
    echo "usage: $0 start|stop|restart|status" >&2
    exit 2
    ;;
esac
