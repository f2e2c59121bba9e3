#!/usr/bin/env bash
# Fetches Debian's kubernetes source package (for its generated.proto and types.go files) into a cache
# directory outside the repository, and prints the unpacked staging/src/k8s.io directory. Nothing from it is
# committed: scripts/gen-protobuf.mjs reads field numbers from it, and the protobuf oracle test loads its
# .proto files with protobufjs.
#
# The deb-src entry is made from the machine's own apt sources (deb822 .sources or one-line .list files),
# under a private apt state directory, so the system's apt configuration is left alone.
# Usage: scripts/fetch-kubernetes-src.sh [cache-dir]   (default ${XDG_CACHE_HOME:-$HOME/.cache}/orch-kubernetes-src)
set -euo pipefail
cache="${1:-${ORCH_KUBERNETES_SRC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/orch-kubernetes-src}}"
mkdir -p "$cache"
found() { find "$cache" -maxdepth 1 -type d -name 'kubernetes-*' | sort | tail -1; }
dir="$(found)"
if [ -n "$dir" ] && [ -f "$dir/staging/src/k8s.io/api/core/v1/generated.proto" ] && [ -f "$dir/staging/src/k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/generated.proto" ]; then
  echo "$dir/staging/src/k8s.io"
  exit 0
fi

apt="$cache/apt"
mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial"
: > "$apt/parts/src.list"
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  grep -qi '^Types:.*\bdeb\b' "$f" || continue
  sed -E 's/^Types:.*/Types: deb-src/' "$f" > "$apt/parts/$(basename "$f")"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  grep -E '^deb ' "$f" | sed -E 's/^deb /deb-src /' >> "$apt/parts/src.list" || true
done
cat > "$apt/apt.conf" <<CONF
Dir::Etc::SourceList "/dev/null";
Dir::Etc::SourceParts "$apt/parts";
Dir::State::Lists "$apt/lists";
Dir::Cache "$apt/cache";
APT::Sandbox::User "root";
CONF
export APT_CONFIG="$apt/apt.conf"
if ! ls "$cache"/kubernetes_*.orig.tar.gz >/dev/null 2>&1; then
  apt-get update -qq >&2 || true
fi
orig="$(ls "$cache"/kubernetes_*.orig.tar.gz 2>/dev/null | tail -1)"
if [ -z "$orig" ]; then
  (cd "$cache" && apt-get source --download-only -qq kubernetes >&2)
  orig="$(ls "$cache"/kubernetes_*.orig.tar.gz | tail -1)"
fi
# Only the files the generator and the tests read.
tar -C "$cache" -xzf "$orig" --wildcards \
  '*/staging/src/k8s.io/api/*/generated.proto' '*/staging/src/k8s.io/api/*/types.go' \
  '*/staging/src/k8s.io/apimachinery/pkg/*/generated.proto' '*/staging/src/k8s.io/apimachinery/pkg/*/types.go' \
  '*/staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/*.go' \
  '*/staging/src/k8s.io/kube-aggregator/pkg/apis/*/generated.proto' '*/staging/src/k8s.io/kube-aggregator/pkg/apis/*/types.go'
dir="$(found)"
[ -n "$dir" ] || { echo "no kubernetes source unpacked in $cache" >&2; exit 1; }
echo "$dir/staging/src/k8s.io"
