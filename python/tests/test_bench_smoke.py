"""The Python benchmarks' smoke runs (bench/loader.py, bench/gpu_feed.py --smoke): a few
seconds on tiny data against a real silod, so that the scripts cannot rot. Their figures
mean nothing; the real runs are taken by hand (bench/README.md)."""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN_DIR = os.environ.get("SILO_BIN_DIR") or os.path.join(REPO, "build", "ci", "cmd", "silod")

pytestmark = pytest.mark.skipif(not os.access(os.path.join(BIN_DIR, "silod"), os.X_OK),
                                reason="no silod (set SILO_BIN_DIR)")


def run_smoke(script, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SILO_", "SILOD_"))}
    env["SILO_BIN_DIR"] = BIN_DIR
    done = subprocess.run([sys.executable, os.path.join(REPO, "bench", script), "--smoke"], env=env,
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_loader_smoke(tmp_path):
    out = run_smoke("loader.py", tmp_path)
    assert "SampleDataset" in out


def test_gpu_feed_smoke(tmp_path):
    pytest.importorskip("torchvision")
    pytest.importorskip("PIL")
    out = run_smoke("gpu_feed.py", tmp_path)
    for decode in ("gpu", "mixed:0.5", "cpu"):  # on CPU, "gpu" is torchvision's decode
        assert "files      %s" % decode in out
    assert "error" not in out.lower()
