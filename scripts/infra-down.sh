#!/usr/bin/env bash
# Stops exactly the servers infra-up started (by their pid files and recorded start times), and nothing else.
source "$(dirname "$0")/lib.sh"
trap 'log "infra-down: \"$BASH_COMMAND\" (line $LINENO) exited $?"' ERR
for name in redis ferretdb nats nats-{1..9}; do
  pidfile="$RUN_DIR/$name.pid"
  [[ -f $pidfile ]] || continue
  pid=$(cat "$pidfile")
  if owned "$pidfile"; then
    # It may have exited by itself since (Ctrl-C reaches make run's whole group): gone is what we want.
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    log "$name stopped (pid $pid)"
  elif alive "$pidfile"; then
    log "$name: pid $pid is alive but is not the process infra-up started (stale pid file); leaving it alone"
  fi
  rm -f "$pidfile" "$RUN_DIR/$name.port" "$RUN_DIR/$name.start"
done
