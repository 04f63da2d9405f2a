#!/usr/bin/env bash
# Python loader benchmark (bench/loader.py --help): ShardDataset direct / via proxy / from
# local files / a boto3 loop, and SampleDataset batch GET vs one GET per sample. Runs with
# Debian's python3 (torch from python3-torch; tools/setup.sh installs it).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/loader.py" "$@"
