#!/usr/bin/env bash
# Quick start, command 1 (CONTRACT.md): installs what is missing, builds, and starts Silo
# as one process (`silod --role all`) serving the S3 and native API on
# http://127.0.0.1:8080. Returns once it is ready; the node keeps running in the background.
#   SILO_DATA_DIR  data directory (default /var/lib/silo)
#   SILO_PORT      port (default 8080)
#   SILO_ACCESS_KEY / SILO_SECRET_KEY  admin credentials (default silo-admin / silo-secret-key)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
data_dir=${SILO_DATA_DIR:-/var/lib/silo}
port=${SILO_PORT:-8080}
export SILO_ACCESS_KEY=${SILO_ACCESS_KEY:-silo-admin}
export SILO_SECRET_KEY=${SILO_SECRET_KEY:-silo-secret-key}

"$repo/tools/setup.sh"
cmake --preset release -S "$repo" >/dev/null
cmake --build "$repo/build/release" --target silod silo

pid_file="$data_dir/silod.pid"
if [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
  echo "Silo is already running (pid $(cat "$pid_file")) on http://127.0.0.1:$port"
  exit 0
fi
mkdir -p "$data_dir"
setsid "$repo/build/release/cmd/silod/silod" --role all --id node1 --port "$port" \
  --data-dir "$data_dir" >>"$data_dir/silod.log" 2>&1 </dev/null &
echo $! >"$pid_file"
for _ in $(seq 1 300); do
  if curl -fsS "http://127.0.0.1:$port/v1/health" >/dev/null 2>&1; then
    cat <<MSG
Silo is ready on http://127.0.0.1:$port (S3 API; native API /v1/...)
  credentials: AWS_ACCESS_KEY_ID=$SILO_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SILO_SECRET_KEY
  data:    $data_dir      log: $data_dir/silod.log
  try:     aws --endpoint-url http://127.0.0.1:$port s3 mb s3://demo
  stop:    kill \$(cat $pid_file)
MSG
    exit 0
  fi
  if ! kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    echo "silod exited; the end of its log:" >&2
    tail -n 20 "$data_dir/silod.log" >&2
    exit 1
  fi
  sleep 0.1
done
echo "silod did not become ready in 30 s (log: $data_dir/silod.log)" >&2
exit 1
