#!/usr/bin/env bash
# Quick start, command 2 (CONTRACT.md): installs what is missing, builds everything with
# warnings as errors, and runs the whole test suite (unit, a short fuzz run,
# integration, then e2e: S3 conformance and the stock S3 clients against real clusters).
#   SILO_TEST_LABEL  run only tests with this ctest label (unit|integration|e2e)
#   SILO_TEST_JOBS   parallel test processes (default: number of cores)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
tools/setup.sh
python3 tools/check_deps.py
tools/check_thread_safety.sh
cmake --preset ci >/dev/null
cmake --build --preset ci
jobs=${SILO_TEST_JOBS:-$(nproc)}
if [ -n "${SILO_TEST_LABEL:-}" ]; then
  ctest --preset ci -L "$SILO_TEST_LABEL" -j "$jobs"
else
  ctest --preset ci -L unit -j "$jobs"
  tools/fuzz.sh 20  # the libFuzzer targets, briefly (tools/fuzz.sh SECONDS for longer)
  ctest --preset ci -L integration -j "$jobs"
  ctest --preset ci -L e2e -j "$jobs"
fi
# The Python package (python/, docs/python.md): a venv on Debian's python3 (its torch),
# the package pip-installed from the tree without an index, then pytest (unit tests, and
# integration tests on clusters of build/ci's silod). SILO_TEST_LABEL=python runs only this.
if [ -z "${SILO_TEST_LABEL:-}" ] || [ "$SILO_TEST_LABEL" = python ]; then
  venv=build/python-venv
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q --no-index --no-build-isolation ./python
  SILO_TEST_INSTALLED=1 SILO_BIN_DIR="$repo/build/ci/cmd/silod" "$venv/bin/python" -m pytest -q python/tests
fi
