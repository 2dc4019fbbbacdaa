# Shared shell helpers for the infrastructure scripts. Sourced, never run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_BIN="${DROVER_TOOLS_DIR:-$ROOT/.tools/bin}"
RUN_DIR="${DROVER_RUN_DIR:-$ROOT/.run/infra}"
# shellcheck source=versions.env
source "$ROOT/scripts/versions.env"

log() { printf '[drover] %s\n' "$*" >&2; }

# free_port: ask the kernel for an unused loopback port.
free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_port PORT SECONDS NAME PIDFILE: wait until the port accepts connections or the process dies.
wait_port() {
  local port=$1 secs=$2 name=$3 pidfile=$4 i
  for ((i = 0; i < secs * 10; i++)); do
    port_open "$port" && return 0
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then log "$name exited during start-up; see $RUN_DIR/$name.log"; tail -20 "$RUN_DIR/$name.log" >&2 || true; return 1; fi
    sleep 0.1
  done
  log "$name did not open port $port within ${secs}s"; return 1
}

# alive PIDFILE: true when the pid file names a live process.
alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
