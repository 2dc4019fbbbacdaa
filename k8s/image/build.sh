#!/usr/bin/env bash
# Builds drover's images as archives, without a container daemon (umoci + skopeo from Debian):
#   pause    registry.k8s.io/pause:3.10, the sandbox image, from k8s/local-cluster/bin/pause (built
#            by `make k8s-build` from the pinned k8s.io/kubernetes module), user 65535
#   runtime  drover/runtime:<content hash> (and drover/runtime:dev): this machine's node binary (the one the tests run) with the
#            shared libraries ldd lists, services/runtime/main.ts bundled by esbuild into one CommonJS file
#            (no node_modules; the process hosts' bundle, platform/hosts/runtime-bundle.ts) started by
#            runtime-loader.cjs through a V8 code cache made here, user drover (10001), entrypoint
#            `node /app/runtime-loader.cjs /app/runtime.cjs`; the examples' tenant workers bundled at
#            /app/examples/<name>/worker.mjs
# Output in $DROVER_IMAGE_DIR (default .run/images): <name>.tar (docker-archive, loads with
# `ctr -n k8s.io images import`, `kind load image-archive`, `minikube image load`, `skopeo copy`),
# <name>.ref (the image reference), and the OCI layout in oci/. Cached by the inputs' hash.
# Usage: k8s/image/build.sh [pause|runtime|all]   (prints the reference of each image built)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${DROVER_IMAGE_DIR:-$ROOT/.run/images}"
BIN="${DROVER_K8S_BIN_DIR:-$ROOT/k8s/local-cluster/bin}"
log() { printf '[drover] %s\n' "$*" >&2; }
for t in umoci skopeo; do command -v $t >/dev/null || "$ROOT/k8s/local-cluster/node/install.sh"; done
mkdir -p "$OUT"

# build_image NAME REF STAGE_FN CONFIG_ARGS...: a one-layer image from the rootfs STAGE_FN fills.
build_image() {
  local name=$1 ref=$2 stage=$3; shift 3
  local extra=()
  [[ -n ${EXTRA_TAG:-} ]] && extra=(--additional-tag "$EXTRA_TAG")
  local work; work=$(mktemp -d "$OUT/.work-$name.XXXXXX")
  local layout="$work/oci"
  umoci init --layout "$layout"
  umoci new --image "$layout:$name"
  umoci unpack --image "$layout:$name" "$work/bundle" >/dev/null
  "$stage" "$work/bundle/rootfs"
  umoci repack --image "$layout:$name" "$work/bundle"
  umoci config --image "$layout:$name" --os linux --architecture amd64 "$@"
  rm -f "$OUT/$name.tar"
  skopeo copy --quiet "${extra[@]}" "oci:$layout:$name" "docker-archive:$OUT/$name.tar:$ref"
  rm -rf "$OUT/oci-$name"; mv "$layout" "$OUT/oci-$name"; rm -rf "$work"
  echo "$ref" >"$OUT/$name.ref"
}

stage_pause() {
  install -m 0755 "$BIN/pause" "$1/pause"
}
pause() {
  [[ -x $BIN/pause ]] || { log "$BIN/pause is missing: run make k8s-build"; exit 1; }
  local want; want=$(cat "$BIN/pause" "$0" | sha256sum | cut -c1-16)
  if [[ -f $OUT/pause.tar && $(cat "$OUT/pause.stamp" 2>/dev/null) == "$want" ]]; then cat "$OUT/pause.ref"; return; fi
  build_image pause registry.k8s.io/pause:3.10 stage_pause \
    --config.entrypoint /pause --config.user 65535:65535
  echo "$want" >"$OUT/pause.stamp"
  cat "$OUT/pause.ref"
}

NODE_BIN=$(command -v node)
stage_runtime() {
  local root=$1 lib
  mkdir -p "$root/usr/local/bin" "$root/app" "$root/etc" "$root/tmp"
  chmod 1777 "$root/tmp"
  install -m 0755 "$NODE_BIN" "$root/usr/local/bin/node"
  # The dynamic loader and every library node links, at the paths ldd resolves them to.
  for lib in $(ldd "$NODE_BIN" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"
  done
  install -m 0644 "$OUT/runtime.cjs" "$root/app/runtime.cjs"
  install -m 0644 "$ROOT/platform/hosts/runtime-loader.cjs" "$root/app/runtime-loader.cjs"
  # The bundle's V8 code cache, for this node and no node flags (the Pod's command has none), made by one start
  # that ends at its configuration check (none given) and writes the cache as it exits: the root filesystem of a
  # runtime Pod is read-only, so a Pod cannot write one. A Pod whose V8 rejects it compiles from source.
  (cd "$root/app" && env -i DROVER_RUNTIME_CODE_CACHE_AT_EXIT=1 timeout 60 "$NODE_BIN" runtime-loader.cjs "$root/app/runtime.cjs" \
    >/dev/null 2>&1) || true
  compgen -G "$root/app/runtime.cjs.*.v8cache" >/dev/null || log "runtime image: no code cache was written"
  chmod a+r "$root"/app/runtime*
  # The example tenants' worker modules, where a tenant's settings name them inside the image.
  cp -r "$OUT/workers/examples" "$root/app/examples"
  chmod -R a+rX "$root/app/examples"
  printf 'root:x:0:0:root:/root:/sbin/nologin\ndrover:x:10001:10001:drover runtime:/app:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\ndrover:x:10001:\n' >"$root/etc/group"
}
runtime() {
  (cd "$ROOT" && "$NODE_BIN" --import tsx k8s/image/runtime-bundle.ts "$OUT/runtime.cjs")
  # Tenant worker modules (docs/sdk.md): examples/<name>/worker.ts → /app/examples/<name>/worker.mjs,
  # with drover/sdk bundled in (no node_modules in the image).
  rm -rf "$OUT/workers"
  local w
  for w in "$ROOT"/examples/*/worker.ts; do
    "$ROOT/node_modules/.bin/esbuild" "$w" --bundle --platform=node --format=esm --target=node20 --log-level=warning \
      --alias:drover/sdk="$ROOT/sdk/index.ts" --outfile="$OUT/workers/examples/$(basename "$(dirname "$w")")/worker.mjs"
  done
  local hash; hash=$(cat "$OUT/runtime.cjs" "$ROOT/platform/hosts/runtime-loader.cjs" "$OUT"/workers/examples/*/worker.mjs "$NODE_BIN" "$0" | sha256sum | cut -c1-16)
  local ref="drover/runtime:$hash"
  if [[ -f $OUT/runtime.tar && $(cat "$OUT/runtime.ref" 2>/dev/null) == "$ref" ]]; then echo "$ref"; return; fi
  # Also tagged drover/runtime:dev, the config's default runtimeImage (contracts/config.ts): the newest build.
  EXTRA_TAG=drover/runtime:dev build_image runtime "$ref" stage_runtime \
    --config.entrypoint /usr/local/bin/node --config.entrypoint /app/runtime-loader.cjs \
    --config.entrypoint /app/runtime.cjs --config.user 10001:10001 \
    --config.workingdir /app --config.env PATH=/usr/local/bin:/usr/bin:/bin --config.env NODE_ENV=production \
    --config.label "org.opencontainers.image.source=drover" --config.label "dev.drover.node-version=$("$NODE_BIN" --version)"
  log "runtime image $ref: $(du -h "$OUT/runtime.tar" | cut -f1) ($OUT/runtime.tar)"
  echo "$ref"
}

case "${1:-all}" in
  pause) pause ;;
  runtime) runtime ;;
  all) pause; runtime ;;
  *) log "usage: k8s/image/build.sh [pause|runtime|all]"; exit 2 ;;
esac
