#!/usr/bin/env bash
# GPU feed benchmark (bench/gpu_feed.py --help): ResNet training fed by ShardDataset from a
# local silod vs synthetic tensors vs local files. On a machine without CUDA use --smoke.
# PYTHON picks the interpreter (default: python3 on PATH with torch, else /usr/bin/python3).
set -euo pipefail
py=${PYTHON:-}
if [ -z "$py" ]; then
  if python3 -c 'import torch, torchvision' 2>/dev/null; then py=python3; else py=/usr/bin/python3; fi
fi
exec "$py" "$(dirname "$0")/gpu_feed.py" "$@"
