#!/usr/bin/env bash
# Builds the local cluster from Go modules into k8s/local-cluster/bin (cached):
#   kube-apiserver, kubelet, kube-scheduler, kube-controller-manager
#                   from k8s.io/kubernetes (version pinned in go/go.mod, each a `tool` there)
#   etcd-local      go/cmd/etcd-local on go.etcd.io/etcd/server/v3/embed
#   pause           build/pause/linux/pause.c of the same k8s.io/kubernetes module, gcc -static
# installs the real node's Debian packages when missing (node/install.sh: containerd, runc, CNI plugins, umoci, skopeo)
# and fetches the Gateway API module, recording where its CRDs are (bin/gateway-api.dir).
# Skips all work when bin/.stamp matches the hash of the inputs. Needs Go ≥1.24 and the module proxy.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="${DROVER_K8S_BIN_DIR:-$HERE/bin}"
GATEWAY_API_VERSION=v1.6.3
log() { printf '[drover] %s\n' "$*" >&2; }

HERE_NODE="$HERE/node"; "$HERE_NODE/install.sh"
command -v go >/dev/null || { log "go is required to build the local cluster (kube-apiserver, etcd)"; exit 1; }
stamp_of_inputs() {
  cat "$HERE/go/go.mod" "$HERE/go/go.sum" "$HERE/build.sh"; find "$HERE/go/cmd" -type f -name '*.go' -print0 | sort -z | xargs -0 cat
  go version
}
want=$(stamp_of_inputs | sha256sum | cut -c1-16)
if [[ -x $BIN/kube-apiserver && -x $BIN/etcd-local && -x $BIN/kubelet && -x $BIN/kube-scheduler && -x $BIN/kube-controller-manager && -x $BIN/pause && -f $BIN/gateway-api.dir && -d $(cat "$BIN/gateway-api.dir" 2>/dev/null) \
      && $(cat "$BIN/.stamp" 2>/dev/null) == "$want" ]]; then
  exit 0
fi

mkdir -p "$BIN"
cd "$HERE/go"
k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
k8s_minor=$(echo "$k8s_version" | cut -d. -f2)
# Stamp the version the way kubernetes' hack/lib/version.sh does, so /version and kubectl report
# the real release instead of v0.0.0-master.
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor -X $pkg.gitTreeState=clean"
done
start=$(date +%s)
log "building kube-apiserver, kubelet, kube-scheduler, kube-controller-manager $k8s_version and etcd-local from Go modules (cold: several minutes on 2 cores; cached afterwards)"
go build -trimpath -ldflags "-s -w $ldflags" -o "$BIN/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager ./cmd/etcd-local
k8s_dir=$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)
# The sandbox (pause) image's binary, from the same release; static so the image needs no libc.
gcc -Os -static -DVERSION="$k8s_version" -o "$BIN/pause" "$k8s_dir/build/pause/linux/pause.c"
strip "$BIN/pause"
gw_dir=$(GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -d $gw_dir/config/crd/standard ]] || { log "gateway-api $GATEWAY_API_VERSION has no config/crd/standard at '$gw_dir'"; exit 1; }
echo "$gw_dir" >"$BIN/gateway-api.dir"
echo "$want" >"$BIN/.stamp"
log "local cluster binaries built in $(( $(date +%s) - start ))s: $("$BIN/kube-apiserver" --version), gateway-api $GATEWAY_API_VERSION"
