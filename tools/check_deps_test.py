#!/usr/bin/env python3
"""Tests of tools/check_deps.py: the real tree passes; a copy of it with one planted
violation fails and names it. Plain unittest: `python3 tools/check_deps_test.py`."""
import contextlib
import io
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

TOOLS = pathlib.Path(__file__).resolve().parent
ROOT = TOOLS.parent


sys.path.insert(0, str(TOOLS))
import check_deps  # noqa: E402  (in-process: 14 runs stay well under a second each)


def run_check(root):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = check_deps.main(["--root", str(root)])
    return rc, err.getvalue()


class CheckDepsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="check_deps_test.")
        self.root = pathlib.Path(self.tmp.name)
        def ignore(folder, names):  # copy only what check_deps reads
            keep = (".h", ".hh", ".hpp", ".cc", ".cpp", ".ipp", ".inc", "CMakeLists.txt", "README.md")
            return [n for n in names
                    if not (pathlib.Path(folder, n).is_dir() or n.endswith(keep))]

        for top in ("src", "cmd", "test", "bench"):
            if (ROOT / top).is_dir():
                shutil.copytree(ROOT / top, self.root / top, ignore=ignore)

    def tearDown(self):
        self.tmp.cleanup()

    def add_dep(self, module, dep):
        cmake = self.root / "src" / module / "CMakeLists.txt"
        text = cmake.read_text()
        text, n = re.subn(r"\bDEPS\b", f"DEPS     {dep}", text, count=1)
        self.assertEqual(n, 1, f"{module} has no DEPS line")
        cmake.write_text(text)

    def plant_include(self, rel, include):
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        old = path.read_text() if path.exists() else "#pragma once\n"
        path.write_text(f'#include "{include}"\n' + old)

    def expect_failure(self, *fragments):
        rc, err = run_check(self.root)
        self.assertNotEqual(rc, 0, "check_deps passed a planted violation")
        for fragment in fragments:
            self.assertIn(fragment, err)
        return err

    def test_real_tree_passes(self):
        rc, err = run_check(ROOT)
        self.assertEqual(rc, 0, err)

    def test_command_exits_non_zero_on_a_violation(self):
        self.plant_include("src/proxy/proxy.cc", "target/target.h")
        p = subprocess.run([sys.executable, str(TOOLS / "check_deps.py"), "--root", str(self.root)],
                           capture_output=True, text=True, check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("check_deps: src/proxy/proxy.cc: includes target/target.h", p.stderr)

    def test_unchanged_copy_passes(self):
        rc, err = run_check(self.root)
        self.assertEqual(rc, 0, err)

    def test_upward_include_fails_even_when_declared(self):
        self.add_dep("store", "target")
        self.plant_include("src/store/store.cc", "target/target.h")
        self.expect_failure("src/store: DEPS names target (L5), above store's layer L3",
                            "src/store/store.cc: includes target/target.h: target (L5) is "
                            "above store (L3)")

    def test_sideways_include_fails_unless_declared(self):
        self.plant_include("src/http/server.cc", "store/store.h")
        self.expect_failure("src/http/server.cc: includes store/store.h but http does not "
                            "declare store in DEPS")

    def test_deps_cycle_fails(self):
        self.add_dep("store", "cluster")  # cluster already depends on store
        rc, err = run_check(self.root)
        self.assertNotEqual(rc, 0, err)
        self.assertTrue("DEPS cycle: cluster -> store -> cluster" in err or
                        "DEPS cycle: store -> cluster -> store" in err, err)

    def test_proxy_target_include_fails(self):
        self.add_dep("proxy", "target")
        self.plant_include("src/proxy/proxy.cc", "target/target.h")
        self.expect_failure("src/proxy: DEPS names target: proxy and target never depend",
                            "src/proxy/proxy.cc: includes target/target.h: proxy and target "
                            "never include each other")

    def test_detail_include_from_test_fails(self):
        self.plant_include("test/integration/planted_test.cc", "store/detail/meta_db.h")
        self.expect_failure("test/integration/planted_test.cc: includes another module's "
                            "private store/detail/meta_db.h")

    def test_detail_include_from_cmd_fails(self):
        self.plant_include("cmd/silod/main.cc", "client/detail/x.h")
        self.expect_failure("cmd/silod/main.cc: includes another module's private client/detail/x.h")

    def test_module_without_layer_fails(self):
        folder = self.root / "src" / "planted"
        folder.mkdir()
        (folder / "README.md").write_text("# planted\n")
        (folder / "CMakeLists.txt").write_text("silo_module(planted\n  SRCS planted.cc\n  DEPS base)\n")
        self.expect_failure("src/planted: silo_module(planted) needs one LAYER")

    def test_new_module_is_one_declaration(self):
        folder = self.root / "src" / "planted"
        folder.mkdir()
        (folder / "README.md").write_text("# planted\n")
        (folder / "CMakeLists.txt").write_text(
            "silo_module(planted LAYER 3\n  SRCS planted.cc\n  DEPS base store)\n")
        (folder / "planted.cc").write_text('#include "store/store.h"\n#include "base/status.h"\n')
        rc, err = run_check(self.root)
        self.assertEqual(rc, 0, err)

    def test_module_without_readme_fails(self):
        (self.root / "src" / "ec" / "README.md").unlink()
        self.expect_failure("src/ec: no README.md")

    def test_outside_library_outside_its_module_fails(self):
        path = self.root / "src/store/store.cc"
        path.write_text("#include <isa-l/erasure_code.h>\n" + path.read_text())
        self.expect_failure("src/store/store.cc: includes <isa-l/erasure_code.h>: ISA-L")

    def test_l2_purity(self):
        path = self.root / "src/placement/hrw.cc"
        path.write_text("#include <boost/asio/io_context.hpp>\n" + path.read_text())
        self.expect_failure("src/placement/hrw.cc: includes <boost/asio/io_context.hpp>: L2")

    def test_test_only_module_outside_tests_fails(self):
        self.add_dep("http", "testing")
        self.plant_include("src/http/server.cc", "testing/temp_dir.h")
        self.expect_failure("src/http: DEPS names test-only module testing")


if __name__ == "__main__":
    unittest.main()
