#!/usr/bin/env bash
# Installs the servers drover's tests and `make run` need, idempotently:
#   nats-server and FerretDB with `go install` into .tools/bin (cached: skipped when the pinned
#   version is already there), redis-server and kubectl (kubernetes-client) from Debian's packages when missing.
source "$(dirname "$0")/lib.sh"
mkdir -p "$TOOLS_BIN"

go_tool() { # go_tool NAME MODULE VERSION VERSION_CMD
  local name=$1 module=$2 version=$3 stamp="$TOOLS_BIN/.$1.version"
  if [[ -x $TOOLS_BIN/$name && -f $stamp && $(cat "$stamp") == "$version" ]]; then return 0; fi
  command -v go >/dev/null || { log "go is required to build $name ($module@$version)"; exit 1; }
  log "building $name $version with go install (first run takes a few minutes; cached afterwards)"
  GOBIN="$TOOLS_BIN" GOFLAGS="${GOFLAGS:-} -buildvcs=false" go install "$module@$version"
  echo "$version" >"$stamp"
}

go_tool nats-server github.com/nats-io/nats-server/v2 "$NATS_SERVER_VERSION"
# FerretDB: `go install .../cmd/ferretdb@v1.24.2` builds, but the binary panics at start-up because the
# module zip lacks build/version/version.txt (written by FerretDB's own release tooling). So build the
# same module source from a copy with that one file added, and with scripts/patches/ferretdb-* applied
# (why: docs/decisions.md, "FerretDB patched").
ferretdb_tool() {
  local stamp="$TOOLS_BIN/.ferretdb.version" want
  want="$FERRETDB_VERSION+$(cat "$ROOT"/scripts/patches/ferretdb-"$FERRETDB_VERSION"-*.patch | sha256sum | cut -c1-12)"
  if [[ -x $TOOLS_BIN/ferretdb && -f $stamp && $(cat "$stamp") == "$want" ]]; then return 0; fi
  log "building ferretdb $FERRETDB_VERSION from its Go module (first run takes a few minutes; cached afterwards)"
  local dir src
  dir=$(go mod download -json "github.com/FerretDB/FerretDB@$FERRETDB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  src="$ROOT/.tools/src/ferretdb-$FERRETDB_VERSION"
  rm -rf "$src"; mkdir -p "$(dirname "$src")"; cp -r "$dir" "$src"; chmod -R u+w "$src"
  echo "$FERRETDB_VERSION" >"$src/build/version/version.txt"
  for p in "$ROOT"/scripts/patches/ferretdb-"$FERRETDB_VERSION"-*.patch; do patch -s -d "$src" -p1 <"$p"; done
  (cd "$src" && GOFLAGS="-mod=mod -buildvcs=false" go build -o "$TOOLS_BIN/ferretdb" ./cmd/ferretdb)
  echo "$want" >"$stamp"
}
ferretdb_tool

# Debian's nats-server 2.9.10, older than drover's minimum (2.12), extracted (not installed: nothing on
# PATH, no service) so the int tier can prove drover refuses it against a real server.
old_nats_tool() {
  local out="$TOOLS_BIN/nats-server-debian" tmp
  [[ -x $out ]] && return 0
  log "fetching Debian's nats-server package (an unsupported version the server-version test must see refused)"
  tmp=$(mktemp -d)
  (cd "$tmp" && { apt-get download -qq nats-server 2>/dev/null || { apt-get update -qq && apt-get download -qq nats-server 2>/dev/null; }; } \
    && dpkg-deb -x nats-server_*.deb x) || { rm -rf "$tmp"; log "could not fetch Debian's nats-server package"; exit 1; }
  cp "$tmp/x/usr/sbin/nats-server" "$out"; rm -rf "$tmp"
}
old_nats_tool

if ! command -v redis-server >/dev/null; then
  log "installing redis-server from Debian's packages"
  # Keep the package's init script from starting a system-wide Redis we would then leave running.
  policy=/usr/sbin/policy-rc.d; created=0
  if [[ ! -e $policy ]]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; created=1; fi
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null) || { [[ $created == 1 ]] && rm -f "$policy"; exit 1; }
  [[ $created == 1 ]] && rm -f "$policy"
fi
# The k8s tier runs kubectl against the local cluster (`kubectl get pods -o wide`, `apply --dry-run=server`).
if ! command -v kubectl >/dev/null; then
  log "installing kubectl from Debian's packages (kubernetes-client)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client >/dev/null
fi
# The e2e tier's dashboard test drives Debian's Chromium with playwright-core (test/e2e/dashboard.e2e.test.ts).
# Not pinned to one package version: bookworm-security replaces it and drops the old one from the mirror.
if [[ ! -x $CHROMIUM_PATH ]]; then
  log "installing chromium from Debian's packages (the dashboard's browser test)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
log "tools: nats-server $NATS_SERVER_VERSION, ferretdb $FERRETDB_VERSION, $(redis-server --version | awk '{print $1" "$3}')"
