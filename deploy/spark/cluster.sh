#!/usr/bin/env bash
# A standalone Spark cluster on 127.0.0.1: one master and two workers, from the pyspark wheel's own jars.
#
# usage: cluster.sh start|stop|restart|status
#
# No Spark download: the master and the workers are launched with the wheel's bin/spark-class (SPARK_HOME is
# the installed pyspark package; the wheel has no sbin/start-master.sh). Each worker offers one core and
# $XGATE_SPARK_WORKER_MEMORY to executors. "Ready" means the master's JSON status (its web UI's /json/) lists
# every worker ALIVE, not an open port. Applications use the master URL `status` prints,
# spark://127.0.0.1:$XGATE_SPARK_PORT; their executors run the Python that the application names
# (spark.pyspark.python, or PYSPARK_PYTHON on the driver), see deploy/spark/README.md.
#
# Environment:
#   XGATE_SPARK_PORT           master RPC port (default 7077)
#   XGATE_SPARK_WEBUI_PORT     master web UI port, where /json/ is read (default 8080); the workers' UIs take
#                              free ports
#   XGATE_SPARK_WORKERS        number of workers (default 2)
#   XGATE_SPARK_WORKER_CORES   cores each worker offers (default 1)
#   XGATE_SPARK_WORKER_MEMORY  memory each worker offers to executors (default 2g)
#   XGATE_SPARK_DAEMON_MEMORY  heap of the master and worker JVMs themselves (default 512m)
#   XGATE_SPARK_HOME           the Spark installation (default: the pyspark package of $PYTHON)
#   PYTHON                     the Python whose pyspark is used (default: the checkout's .venv, else python3)
#   XGATE_BROKER_STATE         state directory (lib.sh): logs, pid files and the workers' work directories
#                              (work-N/APP_ID/EXECUTOR_ID: each executor's stdout and stderr, kept after stop,
#                              cleared when the worker starts again) live in $STATE_DIR/spark-PORT
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../brokers/lib.sh
source "$here/../brokers/lib.sh"

PORT="${XGATE_SPARK_PORT:-7077}"
WEBUI_PORT="${XGATE_SPARK_WEBUI_PORT:-8080}"
WORKERS="${XGATE_SPARK_WORKERS:-2}"
WORKER_CORES="${XGATE_SPARK_WORKER_CORES:-1}"
WORKER_MEMORY="${XGATE_SPARK_WORKER_MEMORY:-2g}"
DIR="$STATE_DIR/spark-$PORT"
MASTER_URL="spark://127.0.0.1:$PORT"
mkdir -p "$DIR"

spark_home() {  # the installed pyspark package: its jars/ and bin/spark-class are a Spark distribution's
  if [ -n "${XGATE_SPARK_HOME:-}" ]; then echo "$XGATE_SPARK_HOME"; return 0; fi
  local python="${PYTHON:-}"
  if [ -z "$python" ]; then
    if [ -x "$here/../../.venv/bin/python" ]; then python="$here/../../.venv/bin/python"; else python=python3; fi
  fi
  "$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null || {
    echo "spark: $python has no pyspark (pip install 'xgate[spark]'), or set XGATE_SPARK_HOME" >&2
    return 1
  }
}

master_json() {  # the master's /json/ status on stdout; nonzero when it does not answer
  python3 - "$WEBUI_PORT" <<'EOF'
import sys, urllib.request
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/json/", timeout=3) as response:
        sys.stdout.write(response.read().decode())
except OSError:
    sys.exit(1)
EOF
}

alive_workers() {  # the number of workers the master reports ALIVE (0 when it does not answer)
  local json
  json="$(master_json 2>/dev/null)" || { echo 0; return 0; }
  echo "$json" | python3 -c '
import json, sys
try:
    status = json.load(sys.stdin)
except ValueError:
    print(0)
else:
    print(sum(1 for worker in status.get("workers", []) if worker.get("state") == "ALIVE"))
'
}

pid_file() { echo "$DIR/$1.pid"; }  # pid_file master|worker-N
pid_alive() { [ -f "$(pid_file "$1")" ] && kill -0 "$(cat "$(pid_file "$1")")" 2>/dev/null; }

launch() {  # launch NAME CLASS ARGS...: one daemon through spark-class, its output in $DIR/NAME.log
  local name=$1 home
  shift
  home="$(spark_home)"
  # setsid: the daemon outlives the shell (and the test or bench) that started it
  (export SPARK_HOME="$home" SPARK_LOCAL_IP=127.0.0.1 SPARK_DAEMON_MEMORY="${XGATE_SPARK_DAEMON_MEMORY:-512m}" \
     SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false"  # no REST submission port: spark-submit uses RPC
   setsid nohup "$home/bin/spark-class" "$@" >"$DIR/$name.log" 2>&1 </dev/null &
   echo $! >"$(pid_file "$name")")
}

ours_running() {  # 0 when every daemon this script started is still alive
  local i
  pid_alive master || return 1
  for ((i = 1; i <= WORKERS; i++)); do pid_alive "worker-$i" || return 1; done
}

start() {
  if [ "$(alive_workers)" -ge "$WORKERS" ]; then return 0; fi  # already up (ours, or one answering like it)
  if port_open "$PORT" && ! pid_alive master; then
    echo "spark: 127.0.0.1:$PORT is held by a process this script did not start" >&2
    return 1
  fi
  if ! pid_alive master; then
    launch master org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$PORT" --webui-port "$WEBUI_PORT"
    wait_port "$PORT" 60 "spark master" || { echo "spark: see $DIR/master.log" >&2; tail -n 15 "$DIR/master.log" >&2; return 1; }
  fi
  local i
  for ((i = 1; i <= WORKERS; i++)); do
    pid_alive "worker-$i" && continue
    # the executors' directories of earlier runs (their logs and a copy of each application's jars, ~10 MB an
    # application) are kept after stop for reading, and cleared when the worker starts again
    rm -rf "$DIR/work-$i"
    mkdir -p "$DIR/work-$i"
    launch "worker-$i" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --webui-port 0 \
      --cores "$WORKER_CORES" --memory "$WORKER_MEMORY" --work-dir "$DIR/work-$i" "$MASTER_URL"
  done
  for ((i = 0; i < 1200; i++)); do  # up to 120 s: three JVMs starting on a loaded machine are slow
    if [ "$(alive_workers)" -ge "$WORKERS" ]; then return 0; fi
    ours_running || break
    sleep 0.1
  done
  echo "spark: the master (web UI 127.0.0.1:$WEBUI_PORT/json/) did not report $WORKERS workers ALIVE; logs in $DIR:" >&2
  local name
  for name in master $(for ((i = 1; i <= WORKERS; i++)); do echo "worker-$i"; done); do
    if pid_alive "$name"; then echo "--- $name (running), $DIR/$name.log:" >&2
    else echo "--- $name (exited), $DIR/$name.log:" >&2; fi
    tail -n 5 "$DIR/$name.log" >&2
  done
  return 1
}

stop_one() {  # stop_one NAME: SIGTERM, up to 20 s, then SIGKILL
  local pid i
  pid_alive "$1" || { rm -f "$(pid_file "$1")"; return 0; }
  pid="$(cat "$(pid_file "$1")")"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 200; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$(pid_file "$1")"
}

stop() {
  local i
  # workers first: a worker's executors are its children and end with it
  for ((i = 1; i <= WORKERS; i++)); do stop_one "worker-$i"; done
  stop_one master
  wait_closed "$PORT" 10 && wait_closed "$WEBUI_PORT" 10 || {
    echo "spark: 127.0.0.1:$PORT or :$WEBUI_PORT is held by a process this script did not start; left running" >&2
    return 1
  }
}

status() {  # what runs: the master URL and each worker, as the master reports them
  local json
  if ! json="$(master_json 2>/dev/null)"; then
    echo "spark: no master answers on 127.0.0.1:$WEBUI_PORT (state in $DIR)"
    return 1
  fi
  python3 - "$json" <<'EOF'
import json, sys
status = json.loads(sys.argv[1])
print(f"master {status.get('url')} {status.get('status')}: {status.get('aliveworkers', 0)} workers alive, "
      f"{status.get('coresused', 0)} of {status.get('cores', 0)} cores used, "
      f"{len(status.get('activeapps', []))} application(s) running")
for worker in status.get("workers", []):
    print(f"  worker {worker.get('host')}:{worker.get('port')} {worker.get('state')}: "
          f"{worker.get('cores')} core(s), {worker.get('memory')} MB, UI {worker.get('webuiaddress')}")
EOF
  [ "$(alive_workers)" -ge "$WORKERS" ]
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop && start ;;
  status) status ;;
  *) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac
