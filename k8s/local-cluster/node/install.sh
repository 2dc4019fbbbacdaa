#!/usr/bin/env bash
# Installs what a real local-cluster node and `make image` need from Debian's packages, when missing:
#   containerd (1.6, with ctr), runc, containernetworking-plugins (bridge, host-local, loopback in
#   /usr/lib/cni), umoci and skopeo (daemon-less OCI image building), gcc (the pause binary).
# The packages' init scripts are kept from starting a system-wide containerd: every node starts its
# own (k8s/local-cluster/node/), with its own root, state and socket.
set -euo pipefail
log() { printf '[drover] %s\n' "$*" >&2; }
need=()
for pair in containerd:containerd runc:runc /usr/lib/cni/bridge:containernetworking-plugins umoci:umoci skopeo:skopeo gcc:gcc; do
  probe=${pair%%:*} pkg=${pair#*:}
  if [[ $probe == /* ]]; then [[ -x $probe ]] || need+=("$pkg"); else command -v "$probe" >/dev/null || need+=("$pkg"); fi
done
((${#need[@]} == 0)) && exit 0
[[ $(id -u) == 0 ]] || { log "installing ${need[*]} needs root (apt-get)"; exit 1; }
log "installing ${need[*]} from Debian's packages"
policy=/usr/sbin/policy-rc.d; created=0
if [[ ! -e $policy ]]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; created=1; fi
cleanup() { if [[ $created == 1 ]]; then rm -f "$policy"; fi; }
trap cleanup EXIT
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
