# Shared shell helpers for the infrastructure scripts. Sourced, never run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_BIN="${DROVER_TOOLS_DIR:-$ROOT/.tools/bin}"
# The Chromium the dashboard test drives (Debian's package; the real binary, not the /usr/bin wrapper).
CHROMIUM_PATH="${CHROMIUM_PATH:-/usr/lib/chromium/chromium}"
RUN_DIR="${DROVER_RUN_DIR:-$ROOT/.run/infra}"
# shellcheck source=versions.env
source "$ROOT/scripts/versions.env"

log() { printf '[drover] %s\n' "$*" >&2; }

# free_port: ask the kernel for an unused loopback port.
free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
# free_ports N: N distinct unused loopback ports, held open together until all are known (one
# free_port after another may be handed the port the previous one just closed).
free_ports() {
  node -e 'const n=+process.argv[1],ss=[];let up=0;for(let i=0;i<n;i++){const s=require("net").createServer();ss.push(s);s.listen(0,"127.0.0.1",()=>{if(++up<n)return;console.log(ss.map((x)=>x.address().port).join(" "));for(const x of ss)x.close()})}' "$1"
}

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

# start_ticks PID: the process start time (clock ticks since boot, /proc/PID/stat field 22); empty when gone.
# Field 2 (comm) may contain spaces, so count fields after its closing parenthesis.
start_ticks() {
  local stat rest
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  read -ra rest <<<"${stat##*) }"
  echo "${rest[19]:-}"
}

# record_start PIDFILE: remember the start time of the process the pid file names, next to it.
record_start() { start_ticks "$(cat "$1")" >"${1%.pid}.start"; }

# owned PIDFILE: true when the pid file names a live process that is still the one we started: same pid
# AND same start time. A stale pid file (reboot, crash, kill -9) whose pid now belongs to some other
# process is never adopted and never signalled. Pid files written before start times were recorded
# are owned only when the process's command line names the port recorded next to them.
owned() {
  alive "$1" || return 1
  local base=${1%.pid} pid
  pid=$(cat "$1")
  if [[ -f $base.start ]]; then [[ -n $(cat "$base.start") && $(cat "$base.start") == "$(start_ticks "$pid")" ]]; return; fi
  [[ -f $base.port ]] || return 1
  local cmd port
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  port=$(cat "$base.port")
  [[ "$cmd " =~ [\ :]$port\  ]]
}
