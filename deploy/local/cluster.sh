#!/usr/bin/env bash
# A Silo cluster of P proxies and T targets on 127.0.0.1 (CONTRACT.md "Local cluster").
#
#   cluster.sh up [--proxies P] [--targets T] [--mountpaths M] [--dir DIR] [--base-port PORT] [--ha] [--tls] [--netns]
#   cluster.sh status [--dir DIR] [--json]
#   cluster.sh down [--dir DIR]
#   cluster.sh add --role proxy|target [--mountpaths M] [--dir DIR] [--no-join]
#   cluster.sh stop NODE_ID|etcd [--dir DIR]
#   cluster.sh restart NODE_ID|etcd [--dir DIR]
#   cluster.sh cut NODE_ID --from ID,...|etcd|all [--dir DIR]    (--netns clusters)
#   cluster.sh heal NODE_ID [--dir DIR]
#
# Each node lives in DIR/nodes/<id>/: config.json, silod.log, pid, state/ and, on targets,
# mp1..mpM (one directory per mountpath). --base-port 0 lets the kernel pick every port;
# the port a node got is then written into its config so a restart keeps it.
# --ha keeps the maps in a real etcd (DIR/etcd/, Debian's etcd-server) started on
# loopback: every proxy campaigns for primary. etcd listens on 127.0.0.1..127.0.0.9 and
# proxy pN talks to it at 127.0.0.(N+1) (N <= 8), so a test can cut one proxy off from
# etcd with one nftables rule on that address.
# --tls serves HTTPS only: tls-certs.sh makes a CA in DIR/tls (ca.pem, kept when it is
# there) and one certificate for 127.0.0.1 and localhost that every node serves and shows
# the nodes it calls, which check it against the CA (config.json node.tls); clients trust
# DIR/tls/ca.pem (SILO_CA_BUNDLE, AWS_CA_BUNDLE). add and restart keep it (DIR/tls/enabled).
# SILO_TLS_REQUIRE_CLIENT_CERT=true makes the nodes ask every client for a certificate.
# --netns (root; SILO_NETNS=1 does the same) runs each node in a network namespace of its
# own, on a bridge silobrX with the subnet 10.200.X.0/24 (X free at up): the host (etcd,
# clients) is 10.200.X.1, proxy pN 10.200.X.(10+N), target tN 10.200.X.(100+N). cut drops,
# with nftables inside NODE_ID's namespace, what it exchanges with the nodes named (or
# etcd, or all of them); heal lifts it. down removes the namespaces; restart remakes them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The nodes' settings are the config files written here: silod would take a caller's
# SILOD_* variables (docs/configuration.md) over them.
while read -r variable; do unset "$variable"; done < <(compgen -e | grep '^SILOD_' || true)
repo=$(cd "$here/../.." && pwd)
dir=${SILO_CLUSTER_DIR:-/tmp/silo-cluster}
proxies=1 targets=3 mountpaths=2 base_port=8080 ha=0 tls=0 json=0 role="" node_id="" join=1 from=""
netns=${SILO_NETNS:-0}
ready_timeout=${SILO_READY_TIMEOUT:-60}
cache_json=${SILO_CACHE_JSON:-"{}"}  # cluster.cache: remote buckets' defaults, watermarks
access_key=${SILO_ACCESS_KEY:-silo-admin}
secret_key=${SILO_SECRET_KEY:-silo-secret-key}

die() { echo "cluster.sh: $*" >&2; exit 1; }
usage() { sed -n '2,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

cmd=${1:-}; [ -n "$cmd" ] || usage 2; shift
while [ $# -gt 0 ]; do
  case "$1" in
    --proxies) proxies=$2; shift 2;;
    --targets) targets=$2; shift 2;;
    --mountpaths) mountpaths=$2; shift 2;;
    --dir) dir=$2; shift 2;;
    --base-port) base_port=$2; shift 2;;
    --role) role=$2; shift 2;;
    --ha) ha=1; shift;;
    --tls) tls=1; shift;;
    --netns) netns=1; shift;;
    --from) from=$2; shift 2;;
    --no-join) join=0; shift;;
    --json) json=1; shift;;
    -h|--help) usage 0;;
    -*) die "unknown option $1 (see --help)";;
    *) [ -z "$node_id" ] || die "unexpected argument $1"; node_id=$1; shift;;
  esac
done
# Absolute, so a node's command line names its config the same way whatever the caller's
# directory (is_alive matches it).
dir=$(realpath -m -- "$dir")
for v in proxies targets mountpaths base_port; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "--${v//_/-} must be a non-negative integer, not '${!v}'"
done
[ "$tls" = 0 ] || [ "$cmd" = up ] || die "--tls goes with up (add and restart keep what up chose)"
if [ "$netns" = 1 ] && [ "$cmd" = up ]; then
  [ "$(id -u)" = 0 ] || die "--netns needs root (network namespaces, a bridge, nftables)"
  [ "$tls" = 0 ] || die "--netns and --tls do not go together (the certificate names 127.0.0.1 only)"
fi

silod_bin() {
  if [ -n "${SILO_BIN_DIR:-}" ]; then
    [ -x "$SILO_BIN_DIR/silod" ] || die "SILO_BIN_DIR=$SILO_BIN_DIR has no silod"
    echo "$SILO_BIN_DIR/silod"; return
  fi
  local bin="$repo/build/release/cmd/silod/silod"
  if [ ! -x "$bin" ]; then
    echo "cluster.sh: building silod (first use)" >&2
    "$repo/tools/setup.sh" >&2
    (cd "$repo" && cmake --preset release >/dev/null && cmake --build --preset release --target silod) >&2
  fi
  echo "$bin"
}

node_dir() { echo "$dir/nodes/$1"; }
node_ids() { [ -d "$dir/nodes" ] && ls "$dir/nodes" | sort -V || true; }
node_role() { cat "$(node_dir "$1")/role"; }
node_pid() { cat "$(node_dir "$1")/pid" 2>/dev/null || true; }
# Alive: the process exists and is not a zombie (an init that does not reap orphans
# leaves exited nodes as zombies, which kill -0 still finds).
# (A process may vanish between any two of these steps: a stat that cannot be read is gone.)
pid_alive() { local state; [ -n "$1" ] && state=$(cut -d')' -f2 "/proc/$1/stat" 2>/dev/null | cut -c2) && [ -n "$state" ] && [ "$state" != Z ]; }
# Whether pid $1 runs with $2 in its command line (its own config or data directory): a
# pid file left by a process that died may name another one by now (pids wrap, and
# parallel test clusters start many).
runs_with() { pid_alive "$1" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"; }
is_alive() { runs_with "$(node_pid "$1")" "$(node_dir "$1")/config.json"; }
node_port() { sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$(node_dir "$1")/config.json"; }
primary_url() { cat "$dir/primary_url"; }
# The address a node serves on (and is reached at): 127.0.0.1, or its namespace's.
node_host() { cat "$(node_dir "$1")/host" 2>/dev/null || echo 127.0.0.1; }
node_url() { echo "$(scheme)://$(node_host "$1"):$(node_port "$1")"; }
is_ha() { [ -f "$dir/etcd/port" ]; }
is_tls() { [ -f "$dir/tls/enabled" ]; }
scheme() { if is_tls; then echo https; else echo http; fi; }
# curl talking to a node: trusts the cluster's CA, and shows the nodes' certificate in case
# they ask for a client certificate (SILO_TLS_REQUIRE_CLIENT_CERT=true).
node_curl() {
  if is_tls; then curl --cacert "$dir/tls/ca.pem" --cert "$dir/tls/node.pem" --key "$dir/tls/node-key.pem" "$@"; else curl "$@"; fi
}
etcd_pid() { cat "$dir/etcd/pid" 2>/dev/null || true; }
etcd_alive() { runs_with "$(etcd_pid)" "$dir/etcd/data"; }
# A proxy that runs: the one to ask about the cluster (with HA the first may be gone).
live_proxy_url() {
  local id
  for id in $(node_ids); do
    if [ "$(node_role "$id")" = proxy ] && is_alive "$id"; then node_url "$id"; return; fi
  done
  primary_url
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# --netns: DIR/netns/subnet holds X. A node's namespace is siloX-ID, its veth pair svX-ID
# (on the bridge) and eth0 (inside).
is_netns() { [ -f "$dir/netns/subnet" ]; }
subnet() { cat "$dir/netns/subnet"; }
host_address() { echo "10.200.$(subnet).1"; }
node_ns() { echo "silo$(subnet)-$1"; }
pick_subnet() {  # claims a free 10.200.X.0/24 by creating its bridge (atomic: one wins)
  local x links; links=$(ip -o link show)
  for x in $(seq 1 250); do
    # A namespace removed by an earlier down may still be going away, its veth with it.
    [[ $links == *" sv$x-"* ]] && continue
    if ip link add "silobr$x" type bridge 2>/dev/null; then
      mkdir -p "$dir/netns"; echo "$x" >"$dir/netns/subnet"; return 0
    fi
  done
  die "no free 10.200.X.0/24 for --netns (250 bridges silobrX exist)"
}
bridge_up() {  # the bridge and the host's address on it, made again after down
  local br="silobr$(subnet)"
  ip link show "$br" >/dev/null 2>&1 || ip link add "$br" type bridge || die "cannot make bridge $br"
  # A fixed address: by default a bridge takes the lowest of its ports' and changes it as
  # ports come, which leaves the host's address stale in the nodes' ARP caches.
  ip link set "$br" address "02:00:0a:c8:$(printf %02x "$(subnet)"):01"
  ip addr replace "$(host_address)/24" dev "$br"
  ip link set "$br" up
}
node_net_up() {  # id: its namespace, veth and address (made again after down)
  local id=$1 ns veth; ns=$(node_ns "$1"); veth="sv$(subnet)-$id"
  [ -e "/run/netns/$ns" ] && return 0
  ip netns add "$ns" || die "cannot make network namespace $ns"
  ip link del "$veth" 2>/dev/null || true  # left by a namespace still going away
  ip link add "$veth" type veth peer name eth0 netns "$ns" || die "cannot make veth $veth"
  ip link set "$veth" master "silobr$(subnet)" up
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip addr add "$(node_host "$id")/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
}
net_down() {  # removes the namespaces and the bridge (the subnet stays claimed in DIR)
  local id
  for id in $(node_ids); do ip netns del "$(node_ns "$id")" 2>/dev/null || true; done
  ip link del "silobr$(subnet)" 2>/dev/null || true
}
cut_node() {  # id peers: drops what id exchanges with peers (ids, etcd, all), inside its namespace
  local id=$1 ns peer peers rules=""; ns=$(node_ns "$1")
  peers=${2//,/ }
  [ "$peers" = all ] && peers="$(node_ids | grep -vx "$id" | tr '\n' ' ') $(is_ha && echo etcd)"
  for peer in $peers; do
    if [ "$peer" = etcd ]; then
      is_ha || die "the cluster in $dir runs no etcd"
      rules+="add rule inet silo_cut out ip daddr $(host_address) tcp dport $(cat "$dir/etcd/port") drop"$'\n'
    else
      [ -d "$(node_dir "$peer")" ] && [ "$peer" != "$id" ] || die "cut: no other node $peer in $dir"
      rules+="add rule inet silo_cut out ip daddr $(node_host "$peer") drop"$'\n'
      rules+="add rule inet silo_cut in ip saddr $(node_host "$peer") drop"$'\n'
    fi
  done
  ip netns exec "$ns" nft -f - <<NFT || die "nft refused the rules for $id"
add table inet silo_cut
add chain inet silo_cut out { type filter hook output priority 0; }
add chain inet silo_cut in { type filter hook input priority 0; }
$rules
NFT
}

start_etcd() {  # starts (or restarts) the cluster's etcd; waits until it answers
  local port peer urls i
  port=$(cat "$dir/etcd/port"); peer=$(cat "$dir/etcd/peer_port")
  command -v etcd >/dev/null || die "--ha needs etcd (Debian package etcd-server; tools/setup.sh installs it)"
  urls=""; for i in $(seq 1 9); do urls+="${urls:+,}http://127.0.0.$i:$port"; done
  if is_netns; then bridge_up; urls+=",http://$(host_address):$port"; fi
  setsid etcd --name silo --data-dir "$dir/etcd/data" --listen-client-urls "$urls" \
    --advertise-client-urls "http://127.0.0.1:$port" --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "silo=http://127.0.0.1:$peer" \
    >>"$dir/etcd/etcd.log" 2>&1 </dev/null &
  echo $! >"$dir/etcd/pid"
  local deadline=$((SECONDS + ready_timeout))
  until curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
    pid_alive "$(etcd_pid)" || { tail -n 20 "$dir/etcd/etcd.log" >&2; die "etcd exited (log: $dir/etcd/etcd.log)"; }
    [ $SECONDS -lt $deadline ] || die "etcd not ready after ${ready_timeout}s (log: $dir/etcd/etcd.log)"
    sleep 0.1
  done
}

stop_etcd() {
  local pid; pid=$(etcd_pid)
  if etcd_alive; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do pid_alive "$pid" || break; sleep 0.1; done
    if pid_alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
}

meta_store_json() {  # id: the cluster.meta_store section of a node's config
  is_ha || return 0
  local id=$1 n addr=1
  if [[ $id =~ ^p([0-9]+)$ ]]; then n=${BASH_REMATCH[1]}; [ "$n" -le 8 ] && addr=$((n + 1)); fi
  local host="127.0.0.$addr"; if is_netns; then host=$(host_address); fi
  echo "\"meta_store\": {\"kind\": \"etcd\", \"etcd_endpoints\": [\"http://$host:$(cat "$dir/etcd/port")\"], \"primary_lease_s\": ${SILO_PRIMARY_LEASE_S:-3}},"
}

tls_json() {  # the node.tls section of a node's config: every node serves DIR/tls/node.pem
  is_tls || return 0
  echo "\"tls\": {\"cert_file\": \"$dir/tls/node.pem\", \"key_file\": \"$dir/tls/node-key.pem\", \"ca_file\": \"$dir/tls/ca.pem\", \"require_client_cert\": ${SILO_TLS_REQUIRE_CLIENT_CERT:-false}},"
}

write_config() {  # id role port mountpath-count primary-url
  local id=$1 r=$2 port=$3 m=$4 primary=$5 nd; nd=$(node_dir "$id")
  local mps="" i
  if [ "$r" = target ]; then
    for i in $(seq 1 "$m"); do mps+="${mps:+, }\"$nd/mp$i\""; done
  fi
  cat >"$nd/config.json" <<JSON
{
  "node": {
    "id": "$id",
    "role": "$r",
    "host": "$(node_host "$id")",
    "port": $port,
    "data_dir": "$nd/state",
    $( [ "$r" = target ] && echo "\"mountpaths\": [$mps]," )
    $( [ -n "$primary" ] && echo "\"primary_url\": \"$primary\"," )
    $(tls_json)
    "ready_file": "$nd/ready.json",
    "log_level": "${SILO_LOG_LEVEL:-info}"
  },
  "cluster": {
    $(meta_store_json "$id")
    "keepalive_interval_ms": ${SILO_KEEPALIVE_INTERVAL_MS:-1000},
    "keepalive_timeout_ms": ${SILO_KEEPALIVE_TIMEOUT_MS:-5000},
    "rebalance_give_up_s": ${SILO_REBALANCE_GIVE_UP_S:-180},
    "durability": "${SILO_DURABILITY:-fsync}",
    "proxy_mode": "${SILO_PROXY_MODE:-stream}",
    "cache": $cache_json,
    "auth": {"admin_access_key": "$access_key", "admin_secret_key": "$secret_key"}
  }
}
JSON
}

launch() {  # id: start the node in the background; returns at once
  local id=$1 nd; nd=$(node_dir "$id")
  rm -f "$nd/ready.json"
  local in_ns=()
  if is_netns; then bridge_up; node_net_up "$id"; in_ns=(ip netns exec "$(node_ns "$id")"); fi
  # ip netns exec execs silod: $! is the node's pid either way.
  SILO_ACCESS_KEY=$access_key SILO_SECRET_KEY=$secret_key setsid "${in_ns[@]}" "$(silod_bin)" --config "$nd/config.json" >>"$nd/silod.log" 2>&1 </dev/null &
  echo $! >"$nd/pid"
}

wait_ready() {  # id: until its ready file appears; pins a kernel-picked port
  local id=$1 nd deadline; nd=$(node_dir "$id"); deadline=$((SECONDS + ready_timeout))
  until [ -s "$nd/ready.json" ]; do
    # The pid launch just started: until it has exec'd silod its command line is this
    # shell's, so is_alive would call a node that is still starting dead.
    if ! pid_alive "$(node_pid "$id")"; then
      echo "cluster.sh: node $id exited; the end of its log ($nd/silod.log):" >&2
      tail -n 20 "$nd/silod.log" >&2; exit 1
    fi
    [ $SECONDS -lt $deadline ] || die "node $id not ready after ${ready_timeout}s (log: $nd/silod.log)"
    sleep 0.1
  done
  local port; port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$nd/ready.json")
  if [ "$(node_port "$id")" = 0 ]; then
    sed -i "s/\"port\": 0,/\"port\": $port,/" "$nd/config.json"
  fi
}

wait_online() {  # every running node of DIR online in the primary's node map
  local want=0 id deadline=$((SECONDS + ready_timeout))
  for id in $(node_ids); do if is_alive "$id"; then want=$((want + 1)); fi; done
  while :; do
    local map; map=$(node_curl -fsS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$access_key:$secret_key" \
      "$(live_proxy_url)/v1/cluster/map" 2>/dev/null || true)
    local online; online=$(grep -o '"state":"online"' <<<"$map" | wc -l)
    [ "$online" -ge "$want" ] && return 0
    [ $SECONDS -lt $deadline ] || die "only $online of $want nodes online after ${ready_timeout}s"
    sleep 0.1
  done
}

add_node() {  # role mountpaths port [primary] -> prints the new id
  local r=$1 m=$2 port=$3 prefix n id
  prefix=$([ "$r" = proxy ] && echo p || echo t)
  n=1; while [ -d "$(node_dir "$prefix$n")" ]; do n=$((n + 1)); done
  id=$prefix$n
  mkdir -p "$(node_dir "$id")"
  echo "$r" >"$(node_dir "$id")/role"
  if is_netns; then
    local n=${id#?}; [ "$n" -le 89 ] || die "--netns numbers at most 89 proxies and 149 targets"
    echo "10.200.$(subnet).$([ "$r" = proxy ] && echo $((10 + n)) || echo $((100 + n)))" >"$(node_dir "$id")/host"
  fi
  local primary=""; [ -f "$dir/primary_url" ] && primary=$(primary_url)
  [ "${4-x}" = "" ] && primary=""  # --no-join: the node waits for an admin to add it
  write_config "$id" "$r" "$port" "$m" "$primary"
  echo "$id"
}

print_endpoint() {
  # Virtual-host style over TLS would need BUCKET.localhost in the certificate (OpenSSL
  # takes no *.localhost wildcard).
  local styles="path-style or http://BUCKET.localhost:PORT" ca="$dir/tls/ca.pem"
  if is_tls; then styles="HTTPS only, path-style"; fi
  cat <<MSG
Silo is up: $(node_ids | wc -l) nodes in $dir
  endpoint:     $(primary_url)   (S3 API, $styles; native API /v1/...)
  credentials:  SILO_ACCESS_KEY=$access_key SILO_SECRET_KEY=$secret_key$(is_ha && printf '\n  meta store:   etcd at http://127.0.0.1:%s (every proxy may become primary)' "$(cat "$dir/etcd/port")")$(is_tls && printf '\n  trust:        export SILO_CA_BUNDLE=%s AWS_CA_BUNDLE=%s   (or silo --ca-bundle %s)' "$ca" "$ca" "$ca")
  status:       $0 status --dir $dir
  stop:         $0 down --dir $dir
MSG
}

case "$cmd" in
  up)
    [ "$proxies" -ge 1 ] || die "--proxies must be at least 1 (the first proxy is the primary)"
    [ "$mountpaths" -ge 1 ] || die "--mountpaths must be at least 1"
    if [ -d "$dir/nodes" ] && [ -n "$(node_ids)" ]; then
      for id in $(node_ids); do is_alive "$id" && die "a cluster is already running in $dir (down it first)"; done
      die "$dir holds a stopped cluster: restart its nodes with 'restart ID', or remove the directory"
    fi
    mkdir -p "$dir/nodes"
    silod_bin >/dev/null
    # What a cluster removed from DIR/nodes left (a CA in DIR/tls is reused).
    rm -f "$dir/primary_url" "$dir/tls/enabled"
    rm -rf "$dir/netns"
    if [ "$netns" = 1 ]; then pick_subnet; bridge_up; fi
    if [ "$tls" = 1 ]; then
      "$here/tls-certs.sh" "$dir/tls" || die "cannot make the certificates in $dir/tls"
      touch "$dir/tls/enabled"
    fi
    if [ "$ha" = 1 ]; then
      mkdir -p "$dir/etcd"
      free_port >"$dir/etcd/port"; free_port >"$dir/etcd/peer_port"
      start_etcd
    fi
    port_of() { [ "$base_port" = 0 ] && echo 0 || echo $((base_port + $1)); }
    k=0
    first=$(add_node proxy 0 "$(port_of $k)"); k=$((k + 1))
    launch "$first"; wait_ready "$first"
    node_url "$first" >"$dir/primary_url"
    started=()
    for i in $(seq 2 "$proxies"); do id=$(add_node proxy 0 "$(port_of $k)"); k=$((k + 1)); launch "$id"; started+=("$id"); done
    for i in $(seq 1 "$targets"); do id=$(add_node target "$mountpaths" "$(port_of $k)"); k=$((k + 1)); launch "$id"; started+=("$id"); done
    for id in "${started[@]}"; do wait_ready "$id"; done
    wait_online
    print_endpoint
    ;;
  add)
    [ "$role" = proxy ] || [ "$role" = target ] || die "add needs --role proxy|target"
    [ -f "$dir/primary_url" ] || die "no cluster in $dir (run up first)"
    if [ "$join" = 0 ]; then
      # Started without a primary: it serves, and waits until an admin adds it with
      # POST /v1/cluster/nodes {"url": ...} on a proxy.
      id=$(add_node "$role" "$mountpaths" "$(free_port)" "")
      launch "$id"
      deadline=$((SECONDS + ready_timeout))
      until [ "$(node_curl -s -o /dev/null -w '%{http_code}' "$(node_url "$id")/v1/health")" != 000 ]; do
        pid_alive "$(node_pid "$id")" || { tail -n 20 "$(node_dir "$id")/silod.log" >&2; die "node $id exited"; }
        [ $SECONDS -lt $deadline ] || die "node $id not listening after ${ready_timeout}s"
        sleep 0.1
      done
      echo "node $id ($role) waits to be added: POST /v1/cluster/nodes {\"url\": \"$(node_url "$id")\"}"
      exit 0
    fi
    id=$(add_node "$role" "$mountpaths" 0)
    launch "$id"; wait_ready "$id"; wait_online
    echo "node $id ($role) joined on port $(node_port "$id")"
    ;;
  stop|restart)
    if [ "$node_id" = etcd ]; then
      is_ha || die "the cluster in $dir runs no etcd (not started with --ha)"
      stop_etcd
      if [ "$cmd" = restart ]; then start_etcd; echo "etcd restarted"; fi
      exit 0
    fi
    [ -n "$node_id" ] && [ -d "$(node_dir "$node_id")" ] || die "$cmd needs the id of a node in $dir"
    # After `down`, the first restart brings etcd back too.
    if [ "$cmd" = restart ] && is_ha && ! etcd_alive; then start_etcd; fi
    if is_alive "$node_id"; then
      pid=$(node_pid "$node_id"); kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 200); do pid_alive "$pid" || break; sleep 0.1; done
      if pid_alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    fi
    if [ "$cmd" = restart ]; then launch "$node_id"; wait_ready "$node_id"; wait_online; echo "node $node_id restarted"; fi
    ;;
  status)
    [ -d "$dir/nodes" ] || die "no cluster in $dir"
    if [ "$json" = 1 ]; then
      printf '{"dir":"%s","endpoint":"%s","nodes":[' "$dir" "$(primary_url 2>/dev/null || true)"
      sep=""
      for id in $(node_ids); do
        nd=$(node_dir "$id"); r=$(node_role "$id")
        alive=false; is_alive "$id" && alive=true
        mps=""; if [ "$r" = target ]; then for m in "$nd"/mp*; do mps+="${mps:+,}\"$m\""; done; fi
        pid=$(node_pid "$id"); [ -n "$pid" ] || pid=null
        printf '%s{"id":"%s","role":"%s","pid":%s,"port":%s,"alive":%s,"url":"%s","log":"%s","state_dir":"%s","mountpaths":[%s]}' \
          "$sep" "$id" "$r" "$pid" "$(node_port "$id")" "$alive" "$(node_url "$id")" "$nd/silod.log" "$nd/state" "$mps"
        sep=","
      done
      printf ']'
      if is_tls; then printf ',"ca_bundle":"%s"' "$dir/tls/ca.pem"; fi
      if is_ha; then
        epid=$(etcd_pid); ealive=false; etcd_alive && ealive=true
        printf ',"etcd":{"url":"http://127.0.0.1:%s","pid":%s,"alive":%s,"log":"%s"}' \
          "$(cat "$dir/etcd/port")" "${epid:-null}" "$ealive" "$dir/etcd/etcd.log"
      fi
      printf '}\n'
    else
      printf '%-6s %-7s %-8s %-6s %-6s %s\n' ID ROLE PID PORT ALIVE LOG
      for id in $(node_ids); do
        alive=no; is_alive "$id" && alive=yes
        printf '%-6s %-7s %-8s %-6s %-6s %s\n' "$id" "$(node_role "$id")" "$(node_pid "$id")" \
          "$(node_port "$id")" "$alive" "$(node_dir "$id")/silod.log"
      done
    fi
    ;;
  down)
    [ -d "$dir/nodes" ] || { echo "no cluster in $dir"; exit 0; }
    # Partitions healed first: the nodes' last packets (FINs) reach their peers, so no
    # socket lingers retransmitting and holding a namespace after it is removed.
    if is_netns; then for id in $(node_ids); do ip netns exec "$(node_ns "$id")" nft delete table inet silo_cut 2>/dev/null || true; done; fi
    pids=()
    for id in $(node_ids); do if is_alive "$id"; then pid=$(node_pid "$id"); kill -TERM "$pid" 2>/dev/null || true; pids+=("$pid"); fi; done
    for _ in $(seq 1 200); do
      left=0; for pid in "${pids[@]}"; do if pid_alive "$pid"; then left=1; fi; done
      [ $left = 0 ] && break; sleep 0.1
    done
    for pid in "${pids[@]}"; do if pid_alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi; done
    if is_ha; then stop_etcd; fi
    if is_netns; then net_down; fi
    echo "cluster in $dir stopped (data kept; remove $dir to delete it)"
    ;;
  cut|heal)
    is_netns || die "$cmd needs a cluster started with --netns"
    [ -n "$node_id" ] && [ -d "$(node_dir "$node_id")" ] || die "$cmd needs the id of a node in $dir"
    ip netns exec "$(node_ns "$node_id")" nft delete table inet silo_cut 2>/dev/null || true
    if [ "$cmd" = cut ]; then
      [ -n "$from" ] || die "cut needs --from ID,...|etcd|all"
      cut_node "$node_id" "$from"
      echo "node $node_id cut off from $from"
    else
      echo "node $node_id healed"
    fi
    ;;
  *) die "unknown command '$cmd' (up|status|down|add|stop|restart|cut|heal)";;
esac
