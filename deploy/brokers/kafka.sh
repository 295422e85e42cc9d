#!/usr/bin/env bash
# Apache Kafka (KRaft, one node acting as broker and controller) on 127.0.0.1:${XGATE_KAFKA_PORT:-9092}.
#
# usage: kafka.sh start|stop|restart|status|libs
#   libs: resolve the jars if the pom changed and print their directory (for `java -cp "DIR/*" TOOL`)
#
# The broker is assembled from Maven Central: a small pom naming org.apache.kafka:kafka_2.13, Kafka's own
# command-line tools (org.apache.kafka:kafka-tools: the console producer and consumer and ProducerPerformance,
# which tests/integration/test_proxy_clients.py runs against `xgate proxy`) and a log4j2 binding, resolved once
# with the machine's `mvn dependency:copy-dependencies` into $CACHE/libs (a second start reuses it; a changed
# pom resolves again, beside the old jars and swapped in, so a broker running from them is not disturbed).
# Storage is formatted once in $DATA (cluster id kept beside it) and kept across stop, restart and start.
# "Ready" means the broker answered a Metadata request naming itself, not an open port.
#
# Environment:
#   XGATE_KAFKA_PORT             broker listener (default 9092)
#   XGATE_KAFKA_CONTROLLER_PORT  KRaft controller listener (default broker port + 1)
#   XGATE_KAFKA_VERSION          kafka_2.13 version resolved from Maven Central (default below)
#   XGATE_KAFKA_CACHE            where the jars go (default ~/.cache/xgate/kafka-VERSION)
#   XGATE_BROKER_STATE           state directory (lib.sh): data, config, log and pid live in $STATE_DIR/kafka-PORT
#   XGATE_KAFKA_PROPERTIES       a file of server.properties lines appended last (they win): extra listeners,
#                                TLS or SASL settings a test configures
#   XGATE_KAFKA_HEAP             JVM heap and other JVM options (default -Xms1g -Xmx1g, as Kafka's own
#                                kafka-server-start.sh). The collector settings are those of Kafka's launcher too
#                                (G1, 20 ms pause target): with 512 MiB the broker made 7-15 times as many young
#                                collections under the benchmarks' traffic, the longest 118-262 ms, and each one
#                                stalls every client at once (docs/performance.md)
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

VERSION="${XGATE_KAFKA_VERSION:-4.1.1}"
PORT="${XGATE_KAFKA_PORT:-9092}"
CONTROLLER_PORT="${XGATE_KAFKA_CONTROLLER_PORT:-$((PORT + 1))}"
CACHE="${XGATE_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xgate/kafka-$VERSION}"
DIR="$STATE_DIR/kafka-$PORT"
DATA="$DIR/data"
CONFIG="$DIR/server.properties"
PID_FILE="$DIR/kafka.pid"
LOG="$DIR/kafka.out"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
mkdir -p "$DIR"

broker_pom() {  # the pom naming the broker's jars: Kafka, its tools and a log4j2 binding for its slf4j 1.7 logging
  cat <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.xgate</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>2.24.3</version></dependency>
  </dependencies>
</project>
EOF
}

resolve_jars() {  # the broker's jars in $CACHE/libs, resolved with Maven the first time (or when the pom changed)
  local pom
  pom="$(broker_pom)"
  if [ -f "$CACHE/libs/.complete" ] && [ "$pom" == "$(cat "$CACHE/pom.xml" 2>/dev/null)" ]; then return 0; fi
  command -v mvn >/dev/null || { echo "kafka: Maven (mvn) is needed once to fetch Kafka $VERSION" >&2; return 1; }
  mkdir -p "$CACHE"
  echo "$pom" >"$CACHE/pom.xml"
  echo "kafka: resolving Kafka $VERSION from Maven Central into $CACHE/libs (once)" >&2
  rm -rf "$CACHE/libs.new"
  if ! mvn -q -B -f "$CACHE/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$CACHE/libs.new" >"$CACHE/mvn.log" 2>&1; then
    echo "kafka: mvn could not resolve kafka_2.13:$VERSION; its log:" >&2
    tail -n 20 "$CACHE/mvn.log" >&2
    return 1
  fi
  touch "$CACHE/libs.new/.complete"
  # swapped in whole: a broker started from the old jars finds the same ones under the same names
  rm -rf "$CACHE/libs.old"
  if [ -d "$CACHE/libs" ]; then mv "$CACHE/libs" "$CACHE/libs.old"; fi
  mv "$CACHE/libs.new" "$CACHE/libs"
  rm -rf "$CACHE/libs.old"
}

write_config() {  # server.properties, rewritten on every start so a changed port or extra file applies
  cat >"$CONFIG" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
log.dirs=$DATA
num.partitions=4
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=10
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
# no time-based deletion: tests replay recorded traffic whose timestamps are years old; size-bound instead
log.retention.ms=-1
log.retention.bytes=1073741824
EOF
  if [ -n "${XGATE_KAFKA_PROPERTIES:-}" ]; then cat "$XGATE_KAFKA_PROPERTIES" >>"$CONFIG"; fi
  cat >"$DIR/log4j2.properties" <<EOF
rootLogger.level=INFO
rootLogger.appenderRef.out.ref=out
appender.out.type=Console
appender.out.name=out
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
logger.kafka.name=kafka
logger.kafka.level=WARN
logger.apache.name=org.apache.kafka
logger.apache.level=WARN
logger.started.name=kafka.server.KafkaRaftServer
logger.started.level=INFO
EOF
}

format_storage() {  # once: a data directory formatted by an earlier start is kept as it is
  if [ -f "$DATA/meta.properties" ]; then return 0; fi
  local id
  [ -s "$DIR/cluster.id" ] || "$JAVA" -cp "$CACHE/libs/*" kafka.tools.StorageTool random-uuid 2>/dev/null >"$DIR/cluster.id"
  id="$(tr -d '[:space:]' <"$DIR/cluster.id")"
  "$JAVA" -Dlog4j2.configurationFile="$DIR/log4j2.properties" -cp "$CACHE/libs/*" kafka.tools.StorageTool \
    format -t "$id" -c "$CONFIG" >"$DIR/format.log" 2>&1 \
    || { echo "kafka: formatting $DATA failed:" >&2; tail -n 5 "$DIR/format.log" >&2; return 1; }
}

answers_metadata() {  # 0 when a Kafka broker on the port answers Metadata (v4) and lists at least one broker
  python3 - "$PORT" <<'EOF'
import socket, struct, sys
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3) as s:
        client = b"xgate-ready"
        # header: api_key 3 (Metadata), version 4, correlation id, client id; body: no topics, no auto-create
        body = struct.pack(">hhih", 3, 4, 7, len(client)) + client + struct.pack(">i?", 0, False)
        s.sendall(struct.pack(">i", len(body)) + body)
        head = b""
        while len(head) < 16:
            chunk = s.recv(16 - len(head))
            if not chunk:
                sys.exit(1)
            head += chunk
        _size, correlation, _throttle, brokers = struct.unpack(">iiii", head)
        sys.exit(0 if correlation == 7 and brokers >= 1 else 1)
except OSError:
    sys.exit(1)
EOF
}

pid_alive() { [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }

start() {
  if answers_metadata; then return 0; fi
  if port_open "$PORT"; then
    echo "kafka: 127.0.0.1:$PORT is open but does not answer a Kafka Metadata request" >&2
    return 1
  fi
  if pid_alive; then stop; fi  # a broker of ours that stopped answering
  resolve_jars
  write_config
  format_storage
  # setsid: the broker outlives the shell (and the test) that started it
  (KAFKA_HEAP="${XGATE_KAFKA_HEAP:--Xms1g -Xmx1g}"
   # shellcheck disable=SC2086
   setsid nohup "$JAVA" $KAFKA_HEAP -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
     -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
     -Dlog4j2.configurationFile="$DIR/log4j2.properties" -cp "$CACHE/libs/*" kafka.Kafka "$CONFIG" \
     >"$LOG" 2>&1 </dev/null &
   echo $! >"$PID_FILE")
  local i
  for ((i = 0; i < 1200; i++)); do  # up to 120 s: a first JVM start on a loaded machine is slow
    answers_metadata && return 0
    pid_alive || break
    sleep 0.1
  done
  echo "kafka: the broker did not answer on 127.0.0.1:$PORT; its log ($LOG):" >&2
  tail -n 15 "$LOG" >&2
  return 1
}

stop() {
  if pid_alive; then
    local pid i
    pid="$(cat "$PID_FILE")"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do  # a controlled shutdown flushes the logs; 30 s before SIGKILL
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PID_FILE"
  wait_closed "$PORT" 10 || {
    echo "kafka: 127.0.0.1:$PORT is held by a process this script did not start; left running" >&2
    return 1
  }
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop && start ;;
  status) answers_metadata ;;
  libs) resolve_jars && echo "$CACHE/libs" ;;
  *) echo "usage: $0 start|stop|restart|status|libs" >&2; exit 2 ;;
esac
