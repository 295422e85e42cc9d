#!/usr/bin/env bash
# RabbitMQ 3.x with its AMQP 1.0 plugin on 127.0.0.1:5672, for the AMQP/1.0 adapter.
#
#   rabbitmq.sh start    reuse a broker that answers on 5672 (enabling rabbitmq_amqp1_0 on it if needed),
#                        else install rabbitmq-server (apt) when missing and start it detached
#   rabbitmq.sh stop     rabbitmqctl stop, then wait until the port is closed
#   rabbitmq.sh restart  stop + start: durable queues and persistent messages survive (they live in the node's
#                        mnesia directory under /var/lib/rabbitmq)
#   rabbitmq.sh status   exit 0 when the AMQP 1.0 handshake is answered
#
# "Answers" means the AMQP 1.0 protocol header is echoed back, not merely that the port is open: a node that is
# still booting, or runs without the plugin, speaks only 0-9-1. Queues: the plugin declares /queue/NAME on
# attach (durable when the link asks for a durable terminus, which the adapter does by default), so nothing
# is declared here. The guest user is only allowed from localhost, which is all this script binds.
#
# A private node (tests): RABBITMQ_NODENAME, RABBITMQ_NODE_PORT (= XGATE_RABBITMQ_PORT), RABBITMQ_MNESIA_BASE,
# RABBITMQ_ENABLED_PLUGINS_FILE and RABBITMQ_CONFIG_FILE in the environment reach rabbitmq-server and the CLI tools.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

PORT="${XGATE_RABBITMQ_PORT:-5672}"
PLUGIN=rabbitmq_amqp1_0
CONF_DIR=/etc/rabbitmq
PLUGINS_FILE="${RABBITMQ_ENABLED_PLUGINS_FILE:-$CONF_DIR/enabled_plugins}"
NODE_ARGS=()
[ -n "${RABBITMQ_NODENAME:-}" ] && NODE_ARGS=(-n "$RABBITMQ_NODENAME")

amqp10_answers() {  # the broker echoes the AMQP 1.0 SASL protocol header
  local got
  got=$(
    exec 2>/dev/null  # a refused connection is an answer here, not an error to print
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
    printf 'AMQP\x03\x01\x00\x00' >&3
    timeout 3 head -c 8 <&3 | od -An -tx1 | tr -d ' \n'
    exec 3>&- 3<&-
  ) || return 1
  [ "$got" = "414d515003010000" ]
}

wait_amqp10() {  # wait_amqp10 SECONDS
  local i
  for ((i = 0; i < $1 * 5; i++)); do
    amqp10_answers && return 0
    sleep 0.2
  done
  echo "RabbitMQ on 127.0.0.1:$PORT does not answer AMQP 1.0 within ${1}s (is $PLUGIN enabled? see /var/log/rabbitmq)" >&2
  return 1
}

plugin_listed() {
  [ -f "$PLUGINS_FILE" ] && grep -q "$PLUGIN" "$PLUGINS_FILE"
}

configure_fresh_install() {  # bind 127.0.0.1 only, with a node name that does not depend on the hostname
  mkdir -p "$CONF_DIR"
  if ! grep -qs '^listeners\.tcp' "$CONF_DIR/rabbitmq.conf"; then
    echo "listeners.tcp.local = 127.0.0.1:$PORT" >>"$CONF_DIR/rabbitmq.conf"
  fi
  if ! grep -qs '^NODENAME=' "$CONF_DIR/rabbitmq-env.conf"; then
    {
      echo "NODENAME=rabbit@localhost"
      echo "ERL_EPMD_ADDRESS=127.0.0.1"
      echo 'export ERL_FLAGS="-kernel inet_dist_use_interface {127,0,0,1}"'
    } >>"$CONF_DIR/rabbitmq-env.conf"
  fi
}

start() {
  if port_open "$PORT"; then
    # reused: an open port is not enough (a node without the plugin speaks only 0-9-1 there): make sure the
    # AMQP 1.0 header is answered, enabling the plugin online when it is not, and that it stays on across restarts
    if ! amqp10_answers || ! plugin_listed; then
      echo "rabbitmq.sh: 127.0.0.1:$PORT is open but AMQP 1.0 is not answered or $PLUGIN not listed: enabling it" >&2
      if ! rabbitmq-plugins "${NODE_ARGS[@]}" enable "$PLUGIN" >/dev/null; then
        echo "rabbitmq.sh: could not enable $PLUGIN on the node behind 127.0.0.1:$PORT (rabbitmq-plugins failed)" >&2
        return 1
      fi
    fi
    wait_amqp10 30
    return
  fi
  if ! command -v rabbitmq-server >/dev/null 2>&1; then
    apt_install rabbitmq-server
    # the package may have started a node with its defaults (all interfaces): stop it before configuring
    if port_open "$PORT"; then rabbitmqctl stop >/dev/null 2>&1 || true; wait_closed "$PORT" 30 || true; fi
    configure_fresh_install
  fi
  plugin_listed || rabbitmq-plugins "${NODE_ARGS[@]}" enable --offline "$PLUGIN" >/dev/null
  rabbitmq-server -detached >/dev/null 2>&1
  wait_port "$PORT" 90 RabbitMQ
  wait_amqp10 30
}

stop() {
  if ! port_open "$PORT"; then
    return 0
  fi
  if ! rabbitmqctl "${NODE_ARGS[@]}" stop >/dev/null 2>&1; then
    echo "rabbitmqctl stop failed (is the node on 127.0.0.1:$PORT managed elsewhere?)" >&2
    return 1
  fi
  if ! wait_closed "$PORT" 60; then
    echo "RabbitMQ still listens on 127.0.0.1:$PORT after rabbitmqctl stop" >&2
    return 1
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop && start ;;
  status) amqp10_answers ;;
  *) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac
