#!/usr/bin/env bash
# Builds the Silo OCI image from this repository's build output, with no base image:
# rootfs.sh assembles the root file system, buildah copies it into a `scratch` container,
# configures and commits it.
#
#   build.sh [--tag NAME[:TAG]] [--silod PATH --silo PATH | --bin-dir DIR] [--no-strip]
#            [--output TRANSPORT:DEST]
#
# --tag defaults to silo:VERSION (VERSION: project(VERSION) in CMakeLists.txt, else what
# `silo --version` says, plus -gREV[-dirty] from git unless HEAD carries the tag vVERSION).
# --bin-dir is a CMake build's cmd/ folder (default build/release/cmd). --output also
# writes the image out, e.g. oci-archive:silo.tar or docker-archive:silo.tar (buildah push).
# Needs buildah (Debian's package) and root, or run it under `buildah unshare` with
# subuids that cover 65532. Builds go to buildah's default storage unless
# CONTAINERS_STORAGE_CONF says otherwise. Prints the image's name on stdout.
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=${here%/deploy/container}
tag="" output="" strip=--strip bin_dir=""
rootfs_args=()
readonly silo_uid=65532

die() { echo "build.sh: $*" >&2; exit 1; }
usage() { sed -n '6,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=$2; shift 2;;
    --silod|--silo) rootfs_args+=("$1" "$2"); shift 2;;
    --bin-dir) bin_dir=$2; shift 2;;
    --no-strip) strip=""; shift;;
    --output) output=$2; shift 2;;
    -h|--help) usage 0;;
    *) die "unknown argument $1 (see --help)";;
  esac
done
command -v buildah >/dev/null || die "buildah is missing (apt-get install buildah)"
bin_dir=${bin_dir:-$repo/build/release/cmd}
silo_bin=$bin_dir/silo/silo
for ((i = 0; i < ${#rootfs_args[@]}; i += 2)); do
  [ "${rootfs_args[$i]}" != --silo ] || silo_bin=${rootfs_args[$i + 1]}
done

git_in_repo() { git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; }

project_version() {
  local v
  v=$(sed -n 's/^project(silo[^)]*VERSION \([0-9][0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
  if [ -z "$v" ] && [ -x "$silo_bin" ]; then
    v=$("$silo_bin" --version 2>/dev/null | awk '{print $NF; exit}') || v=""
  fi
  [ -n "$v" ] || v=0.0.0
  if git_in_repo && ! git -C "$repo" describe --tags --exact-match --match "v$v" >/dev/null 2>&1
  then
    v+="-g$(git -C "$repo" rev-parse --short HEAD)"
    [ -z "$(git -C "$repo" status --porcelain --untracked-files=no)" ] || v+="-dirty"
  fi
  echo "$v"
}

version=$(project_version)
tag=${tag:-silo:$version}
revision=""
if git_in_repo; then
  revision=$(git -C "$repo" rev-parse HEAD)
  # The commit's time: the same source gives the same file times and creation date.
  export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct)}
fi
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date +%s)}
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

work=$(mktemp -d "${TMPDIR:-/tmp}/silo-image.XXXXXX")
ctr=""
cleanup() {
  [ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"$here/rootfs.sh" $strip "${rootfs_args[@]}" "$work/rootfs" ${bin_dir:+"$bin_dir"}

ctr=$(buildah from --quiet scratch)
buildah copy --quiet "$ctr" "$work/rootfs" / >/dev/null
# buildah copy makes everything root's; a second copy of /var/lib (holding only silo/)
# gives the data folder to the silo user, whoever ran rootfs.sh.
buildah copy --quiet --chown "$silo_uid:$silo_uid" "$ctr" "$work/rootfs/var/lib" /var/lib \
  >/dev/null
labels=(
  org.opencontainers.image.title=silo
  "org.opencontainers.image.description=Silo: an S3-compatible object store (silod and the silo CLI)"
  "org.opencontainers.image.version=$version"
  "org.opencontainers.image.created=$created"
)
[ -z "$revision" ] || labels+=("org.opencontainers.image.revision=$revision")
label_args=()
for l in "${labels[@]}"; do label_args+=(--label "$l"); done
# No shell in the image, so entrypoint and cmd are JSON arrays (exec form). SIGTERM makes
# silod drain (up to 20 s): give `podman stop`/`docker stop` a -t of 30.
buildah config \
  --user "$silo_uid:$silo_uid" \
  --entrypoint '["/usr/bin/silod"]' \
  --cmd '["--role","all","--data-dir","/var/lib/silo","--host","0.0.0.0","--port","8080"]' \
  --port 8080/tcp \
  --workingdir /var/lib/silo \
  --volume /var/lib/silo \
  --env PATH=/usr/bin \
  --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --stop-signal SIGTERM \
  --created-by "deploy/container/build.sh" \
  "${label_args[@]}" \
  "$ctr"
buildah commit --quiet --rm --format oci --timestamp "$SOURCE_DATE_EPOCH" "$ctr" "$tag" >/dev/null
ctr=""
if [ -n "$output" ]; then
  buildah push --quiet "$tag" "$output" >/dev/null
fi
size=$(buildah images --format '{{.Size}}' "$tag" | head -1)
echo "build.sh: built $tag ($size)${output:+, written to $output}" >&2
echo "$tag"
