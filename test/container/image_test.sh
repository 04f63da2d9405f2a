#!/usr/bin/env bash
# The container image (deploy/container/): builds it with build.sh from this build's silod
# and silo, checks its size, config and contents (user 65532, no shell), runs it with podman
# and talks to it: /v1/health, a signed bucket create, object PUT and GET (curl --aws-sigv4),
# the image's own `silo` CLI, then `podman stop` must end it by SIGTERM within the drain
# timeout.
#
# Where podman cannot run containers (each fix below is tried first), the image's root file
# system runs in a fresh mount and PID namespace instead (unshare + chroot, as user 65532),
# with the same checks; the test says so. Without buildah it runs rootfs.sh's output that
# way. Exit 77 (skip): not root, or neither buildah nor unshare.
#
# Env: SILO_BIN_DIR (folder of silod; silo is ../silo/silo), SILO_IMAGE_MAX_MB (default
# 150), SILO_IMAGE_TEST_NO_PODMAN=1 forces the namespace run. Images, containers and the
# storage live in a private folder (CONTAINERS_STORAGE_CONF) removed on exit.
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin_dir=${SILO_BIN_DIR:-$repo/build/release/cmd/silod}
silod=$bin_dir/silod
silo=$bin_dir/../silo/silo
max_mb=${SILO_IMAGE_MAX_MB:-150}
readonly silo_uid=65532 access_key=silo-test secret_key=silo-test-secret
readonly health_timeout_s=60 stop_limit_s=25  # silod drains for up to 20 s

log() { echo "image_test: $*"; }
fail() { log "FAIL: $*"; exit 1; }
skip() { log "SKIP: $*"; exit 77; }
has() { command -v "$1" >/dev/null; }

[ -x "$silod" ] || fail "$silod is missing (set SILO_BIN_DIR)"
[ -x "$silo" ] || fail "$silo is missing"
has buildah || has unshare || skip "neither buildah nor unshare is installed"
[ "$EUID" = 0 ] || skip "needs root (container storage, mount namespaces, chroot)"
has curl || fail "curl is missing"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/silo-image-test.XXXXXX")
tag=localhost/silo-image-test:$$
name=silo-image-test-$$
podman=(podman)
ns_pid=""
cleanup() {
  set +e
  if [ -n "$ns_pid" ] && kill -0 "$ns_pid" 2>/dev/null; then
    kill -KILL "$ns_pid"  # unshare --kill-child takes silod with it
    wait "$ns_pid" 2>/dev/null
  fi
  if has podman; then
    "${podman[@]}" rm --force --all --volumes --time 0 >/dev/null 2>&1
    "${podman[@]}" volume prune --force >/dev/null 2>&1
  fi
  if has buildah; then
    buildah rm --all >/dev/null 2>&1
    buildah rmi --all --force >/dev/null 2>&1
  fi
  # Whatever is still mounted under the private storage (a run killed half-way).
  awk -v dir="$tmp" 'index($2, dir) == 1 {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m"; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM  # ctest's timeout: still clean up

# Private container storage and engine state: parallel runs do not meet, nothing is left.
write_storage_conf() {
  printf '[storage]\ndriver = "%s"\ngraphroot = "%s"\nrunroot = "%s"\n' \
    "$1" "$tmp/storage" "$tmp/run" >"$tmp/storage.conf"
}
write_storage_conf overlay
printf '[engine]\ntmp_dir = "%s"\nevents_logger = "file"\ncgroup_manager = "cgroupfs"\n' \
  "$tmp/libpod" >"$tmp/containers.conf"
export CONTAINERS_STORAGE_CONF=$tmp/storage.conf CONTAINERS_CONF=$tmp/containers.conf

# --- build ---------------------------------------------------------------------------
root=""
if has buildah; then
  log "building $tag with deploy/container/build.sh"
  if ! "$repo/deploy/container/build.sh" --tag "$tag" --silod "$silod" --silo "$silo" \
      --output "oci-archive:$tmp/image.tar" >"$tmp/build.log" 2>&1; then
    cat "$tmp/build.log"
    log "build on the overlay driver failed: again on vfs"
    buildah rm --all >/dev/null 2>&1 || true
    rm -rf "$tmp/storage" "$tmp/run"
    write_storage_conf vfs
    "$repo/deploy/container/build.sh" --tag "$tag" --silod "$silod" --silo "$silo" \
      --output "oci-archive:$tmp/image.tar" >"$tmp/build.log" 2>&1 ||
      { cat "$tmp/build.log"; fail "build.sh failed"; }
  fi
  cat "$tmp/build.log"
  inspect() { buildah inspect --type image --format "$1" "$tag"; }
  user=$(inspect '{{.OCIv1.Config.User}}')
  [ "$user" = "$silo_uid:$silo_uid" ] || fail "image user is '$user', not $silo_uid:$silo_uid"
  entrypoint=$(inspect '{{.OCIv1.Config.Entrypoint}}')
  [ "$entrypoint" = "[/usr/bin/silod]" ] || fail "image entrypoint is $entrypoint"
  [[ $(inspect '{{.OCIv1.Config.ExposedPorts}}') == *8080/tcp* ]] || fail "port 8080 not exposed"
  [[ $(inspect '{{.OCIv1.Config.Env}}') == *SSL_CERT_FILE=* ]] || fail "SSL_CERT_FILE not set"
  [[ $(inspect '{{.OCIv1.Config.Labels}}') == *org.opencontainers.image.version:* ]] ||
    fail "no org.opencontainers.image.version label"
  image_ctr=$(buildah from --quiet "$tag")
  root=$(buildah mount "$image_ctr")
  log "image config: user $user, entrypoint $entrypoint, cmd $(inspect '{{.OCIv1.Config.Cmd}}')"
else
  log "buildah is missing: checking rootfs.sh's output instead of an image"
  "$repo/deploy/container/rootfs.sh" --strip --silod "$silod" --silo "$silo" "$tmp/rootfs"
  root=$tmp/rootfs
fi

# --- size and contents ---------------------------------------------------------------
size=$(du -sb "$root" | cut -f1)
size_mb=$(( (size + 999999) / 1000000 ))
log "image size: $size_mb MB uncompressed (limit $max_mb MB)$( [ ! -f "$tmp/image.tar" ] ||
  echo ", oci-archive $(( ($(stat -c %s "$tmp/image.tar") + 999999) / 1000000 )) MB")"
[ "$size_mb" -le "$max_mb" ] || fail "image is $size_mb MB, over $max_mb MB"
for tool in sh bash dash busybox ls cat env; do
  for dir in bin usr/bin sbin usr/sbin; do
    [ ! -e "$root/$dir/$tool" ] && [ ! -L "$root/$dir/$tool" ] ||
      fail "the image has /$dir/$tool (it must hold no shell or coreutils)"
  done
done
[ -s "$root/etc/ssl/certs/ca-certificates.crt" ] || fail "no CA certificates"
grep -q "^silo:x:$silo_uid:$silo_uid:" "$root/etc/passwd" || fail "no silo user in /etc/passwd"
grep -q "^hosts: *files dns" "$root/etc/nsswitch.conf" || fail "nsswitch.conf lacks hosts"
compgen -G "$root/usr/lib/*/libnss_dns.so.2" >/dev/null || fail "no libnss_dns.so.2"
[ "$(stat -c %u:%g "$root/var/lib/silo")" = "$silo_uid:$silo_uid" ] ||
  fail "/var/lib/silo is owned by $(stat -c %u:%g "$root/var/lib/silo")"
[ "$(stat -c %a "$root/tmp")" = 1777 ] || fail "/tmp is mode $(stat -c %a "$root/tmp")"

# --- the checks a running image must pass --------------------------------------------
sigv4=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$access_key:$secret_key"
  -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")

# Waits until $1/v1/health answers 200; fails early once `alive` (a command) says the
# server is gone.
wait_healthy() {
  local base=$1 alive=$2 deadline=$((SECONDS + health_timeout_s))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$base/v1/health")" != 200 ] ||
      return 0
    $alive || return 1
    sleep 0.2
  done
  return 1
}

# Bucket create, object PUT and GET, all signed; an unsigned GET must be refused.
s3_checks() {
  local base=$1 code
  code=$(curl -sS -o "$tmp/reply" -w '%{http_code}' -X PUT "${sigv4[@]}" "$base/v1/buckets/bkt1")
  [ "$code" = 200 ] || fail "PUT /v1/buckets/bkt1: $code $(cat "$tmp/reply")"
  head -c 1048576 /dev/urandom >"$tmp/payload"
  code=$(curl -sS -o "$tmp/reply" -w '%{http_code}' -T "$tmp/payload" "${sigv4[@]}" \
    "$base/bkt1/obj1")
  [ "$code" = 200 ] || fail "PUT /bkt1/obj1: $code $(cat "$tmp/reply")"
  code=$(curl -sS -o "$tmp/got" -w '%{http_code}' "${sigv4[@]}" "$base/bkt1/obj1")
  [ "$code" = 200 ] || fail "GET /bkt1/obj1: $code"
  cmp -s "$tmp/payload" "$tmp/got" || fail "GET /bkt1/obj1 returned other bytes"
  code=$(curl -sS -o /dev/null -w '%{http_code}' "$base/bkt1/obj1")
  [ "$code" = 403 ] || fail "an unsigned GET got $code, not 403"
  log "signed bucket create, 1 MiB PUT and GET: ok; unsigned GET refused"
}

check_uid() {
  local uid
  uid=$(awk '/^Uid:/ {print $2}' "/proc/$1/status")
  [ "$uid" = "$silo_uid" ] || fail "silod runs as uid $uid, not $silo_uid"
  log "silod runs as uid $uid"
}

# `silo ls bkt1` output from the image's CLI ($@ runs it) must name obj1.
check_cli() {
  "$@" --access-key "$access_key" --secret-key "$secret_key" ls bkt1 >"$tmp/ls" 2>&1 ||
    { cat "$tmp/ls"; fail "the image's silo CLI failed"; }
  grep -q obj1 "$tmp/ls" || { cat "$tmp/ls"; fail "silo ls bkt1 does not list obj1"; }
  log "the image's silo CLI lists the object"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
    2>/dev/null || echo $((20000 + RANDOM % 20000))
}

# --- run with podman -----------------------------------------------------------------
# Starts the container, fixing what this machine needs from the error each try gives:
# - no CAP_SYS_RESOURCE: the default rlimits (nofile 1048576) cannot be set; ask for the
#   caller's own hard limits (nproc capped by pid_max, as conmon gets it);
# - crun 1.8 refuses a hybrid cgroup v1/v2 hierarchy: use runc;
# - cgroups otherwise unusable: --cgroups=disabled;
# - port forwarding (CNI, iptables) broken: slirp4netns, then the host's network.
# Prints the reason on failure.
run_flags=() net=bridge port=8080 why=""
start_container() {
  local tries=0 err
  while [ $tries -lt 8 ]; do
    tries=$((tries + 1))
    local args=(--name "$name" --detach -e SILO_ACCESS_KEY="$access_key"
      -e SILO_SECRET_KEY="$secret_key" "${run_flags[@]}")
    case "$net" in
      host) port=$(free_port); args+=(--network host "$tag" --role all --data-dir /var/lib/silo
        --host 127.0.0.1 --port "$port");;
      slirp) args+=(--network slirp4netns -p "127.0.0.1::8080" "$tag");;
      *) args+=(-p "127.0.0.1::8080" "$tag");;
    esac
    if "${podman[@]}" run "${args[@]}" >"$tmp/run.out" 2>"$tmp/run.err"; then
      return 0
    fi
    err=$(tr '\n' ' ' <"$tmp/run.err")
    log "podman run ${run_flags[*]} (network $net) failed: $err"
    "${podman[@]}" rm --force --volumes --time 0 "$name" >/dev/null 2>&1 || true
    if [[ $err == *rlimit* || $err == *RLIMIT* ]] && [[ " ${run_flags[*]} " != *" --ulimit "* ]]
    then
      local nproc
      nproc=$(ulimit -Hu)
      [ "$nproc" = unlimited ] || [ "$nproc" -gt "$(cat /proc/sys/kernel/pid_max)" ] &&
        nproc=$(cat /proc/sys/kernel/pid_max)
      run_flags+=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit "nproc=$nproc:$nproc")
    elif [[ $err == *"hybrid mode"* ]] && has runc && [[ " ${podman[*]} " != *" runc "* ]]; then
      podman+=(--runtime runc)
    elif [[ $err == *cgroup* ]] && [[ " ${run_flags[*]} " != *" --cgroups=disabled "* ]]; then
      run_flags+=(--cgroups=disabled)
    elif [[ $err =~ (port|network|CNI|cni|iptables|netns|slirp) ]] && [ "$net" = bridge ] &&
      has slirp4netns; then
      net=slirp
    elif [[ $err =~ (port|network|CNI|cni|iptables|netns|slirp) ]] && [ "$net" != host ]; then
      net=host
    else
      why=$err
      return 1
    fi
  done
  why="still failing after $tries tries: $err"
  return 1
}

container_running() {
  [ "$("${podman[@]}" inspect --format '{{.State.Running}}' "$name" 2>/dev/null)" = true ]
}

# Runs the checks against the started container (not called as a condition, so errexit
# holds inside).
run_with_podman() {
  log "container started: podman ${podman[*]:1} run ${run_flags[*]} (network $net)"
  local base
  if [ "$net" = host ]; then
    base=http://127.0.0.1:$port
  else
    base=http://$("${podman[@]}" port "$name" 8080/tcp | head -1)
  fi
  if ! wait_healthy "$base" container_running; then
    "${podman[@]}" logs "$name" 2>&1 | tail -30
    if container_running && [ "$net" != host ]; then
      # Running but unreachable: the port forwarding does not work here.
      "${podman[@]}" rm --force --volumes --time 0 "$name" >/dev/null
      log "silod runs but $base does not answer: again on the host's network"
      net=host
      start_container || fail "podman run on the host's network: $why"
      run_with_podman
      return
    fi
    fail "$base/v1/health did not answer 200 within ${health_timeout_s}s"
  fi
  log "$base/v1/health: 200"
  s3_checks "$base"
  check_uid "$("${podman[@]}" inspect --format '{{.State.Pid}}' "$name")"
  check_cli "${podman[@]}" exec "$name" /usr/bin/silo -e "http://127.0.0.1:$port"
  local start=$SECONDS code
  "${podman[@]}" stop --time 30 "$name" >/dev/null
  code=$("${podman[@]}" inspect --format '{{.State.ExitCode}}' "$name")
  [ "$code" = 0 ] || { "${podman[@]}" logs "$name" 2>&1 | tail -20; fail "silod exited $code"; }
  [ $((SECONDS - start)) -le $stop_limit_s ] || fail "podman stop took $((SECONDS - start)) s"
  log "podman stop: silod drained and exited 0 in $((SECONDS - start)) s"
  "${podman[@]}" rm --volumes "$name" >/dev/null
}

# --- or in a fresh mount and PID namespace ---------------------------------------------
# The root file system as a runtime would set it up: /proc (--mount-proc, after the
# chroot), a tmpfs /dev with the usual devices, a fresh /var/lib/silo; silod is PID 1 of
# its PID namespace, as user and group 65532 with no capabilities and no other groups.
ns_alive() { kill -0 "$ns_pid" 2>/dev/null; }
run_in_namespace() {
  has unshare || fail "podman cannot run containers here ($why) and unshare is missing"
  local data=$tmp/data port base child
  mkdir -p "$data"
  chown "$silo_uid:$silo_uid" "$data"
  port=$(free_port)
  base=http://127.0.0.1:$port
  unshare --mount --propagation private -- bash -c '
    set -e
    root=$1 data=$2; shift 2
    mount -t tmpfs -o mode=0755,nosuid tmpfs "$root/dev"
    for d in null zero full random urandom tty; do
      touch "$root/dev/$d"
      mount --bind "/dev/$d" "$root/dev/$d"
    done
    mount --bind "$data" "$root/var/lib/silo"
    exec env -i PATH=/usr/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt "$@"
  ' _ "$root" "$data" SILO_ACCESS_KEY="$access_key" SILO_SECRET_KEY="$secret_key" \
    "$(command -v unshare)" --pid --fork --kill-child --mount-proc --root="$root" \
    --wd=/var/lib/silo --setgid "$silo_uid" --setuid "$silo_uid" -- \
    /usr/bin/silod --role all --data-dir /var/lib/silo --host 127.0.0.1 --port "$port" \
    >"$tmp/silod.log" 2>&1 &
  ns_pid=$!
  if ! wait_healthy "$base" ns_alive; then
    tail -30 "$tmp/silod.log"
    fail "$base/v1/health did not answer 200 within ${health_timeout_s}s"
  fi
  log "$base/v1/health: 200"
  child=$(pgrep -P "$ns_pid" | head -1)
  [ -n "$child" ] || fail "no silod under unshare ($ns_pid)"
  [ "$(awk '/^NSpid:/ {print $NF}' "/proc/$child/status")" = 1 ] ||
    fail "silod is not PID 1 of its namespace"
  s3_checks "$base"
  check_uid "$child"
  check_cli chroot --userspec="$silo_uid:$silo_uid" "$root" /usr/bin/silo -e "$base"
  local start=$SECONDS code=0
  kill -TERM "$child"
  while ns_alive && [ $((SECONDS - start)) -le $stop_limit_s ]; do sleep 0.1; done
  ns_alive && fail "silod did not exit within ${stop_limit_s}s of SIGTERM"
  wait "$ns_pid" || code=$?
  ns_pid=""
  [ "$code" = 0 ] || { tail -20 "$tmp/silod.log"; fail "silod exited $code after SIGTERM"; }
  log "SIGTERM: silod drained and exited 0 in $((SECONDS - start)) s"
}

if [ "${SILO_IMAGE_TEST_NO_PODMAN:-0}" = 1 ]; then
  why="SILO_IMAGE_TEST_NO_PODMAN=1"
elif ! has podman; then
  why="podman is not installed"
elif [ -z "${image_ctr:-}" ]; then
  why="no image was built (buildah is missing)"
elif start_container; then
  run_with_podman
  log "PASS: the image ran under podman"
  exit 0
fi
log "podman cannot run containers here ($why): ran the image's root file system in a fresh" \
  "mount and PID namespace instead"
run_in_namespace
log "PASS: the image's root file system ran in a fresh mount and PID namespace"
