#!/usr/bin/env python3
"""Enforces the layer and dependency rules of STYLE.md 2.2 on every #include in src/, cmd/,
test/ and bench/. Exits 1 and names each violation; exits 0 when the tree is clean.

Each module declares itself in its src/<module>/CMakeLists.txt (the one place to look):

    silo_module(store LAYER 3 SRCS ... DEPS base wire placement EXTERNAL ...)

LAYER is the module's layer (L0 base ... L5 proxy/target/client; cmd/ is L6), TEST_ONLY
marks a module only tests may use (testing/), DEPS is the allowlist of Silo modules its
code may include and TEST_DEPS the extra ones its *_test.cc files may include.

Rules checked:
  modules   every src/<module>/ has a silo_module() with a LAYER and a README.md; DEPS and
            TEST_DEPS name existing modules (or `proto`, the generated schemas)
  deps      a module's DEPS never point up a layer, never join proxy and target, and form
            no cycle
  includes  a module includes only itself and its DEPS (TEST_DEPS in *_test.cc), never a
            module above its own layer (test files may include their TEST_DEPS at any
            layer), never another module's detail/; proxy and target never include each
            other; test-only modules only from tests; client/ only from cmd/, test/, bench/
            and test-only modules
  cmd, test, bench   cmd/ is L6 and may include any module, test/ and bench/ any module;
            none of them another module's detail/, and cmd/ no test-only module
  libraries one entry point per outside library (rule 4) and L2 purity (rule 3): see
            LIBRARY_RULES, L2_FORBIDDEN and the named EXCEPTIONS below

Usage: check_deps.py [--root DIR]   (DIR defaults to the repository holding this script)
"""
import argparse
import pathlib
import re
import sys

ROLES = ("proxy", "target")  # STYLE 2.2 rule 2: they never include each other
CMD_LAYER = 6
# Non-module names a DEPS list may hold: the generated protobuf library (proto/).
GENERATED = {"proto"}
# Only cmd/, test/, bench/ and test-only modules use the public client (rule 5).
CLIENT_MODULE = "client"

# Rule 4: one entry point per outside library. (name, include regex, allowed path prefixes).
LIBRARY_RULES = [
    ("ISA-L", re.compile(r"^<isa-l[/.>]"), ("src/ec/",)),
    ("RocksDB", re.compile(r"^<rocksdb/"), ("src/store/",)),
    ("Boost.Beast", re.compile(r"^<boost/beast"), ("src/http/",)),
    ("nlohmann_json", re.compile(r"^<nlohmann/"), ("src/config/", "src/wire/")),
    ("spdlog", re.compile(r"^<spdlog/"), ("src/base/",)),
    ("generated protobuf", re.compile(r'^"[a-z0-9_]+\.pb\.h"'), ("src/wire/",)),
    ("libarchive", re.compile(r"^<archive(_entry)?\.h>"), ("src/archive/",)),
    ("zlib", re.compile(r"^<zlib\.h>"), ("src/archive/",)),
]
# Rule 3: L2 stays pure (no sockets, no files, no threads, no Asio/Beast/RocksDB). Applies
# to the non-test files of every L2 module.
L2_FORBIDDEN = re.compile(
    r"^<(boost/asio|boost/beast|rocksdb/|sys/socket\.h|sys/un\.h|netinet/|arpa/inet\.h|netdb\.h"
    r"|fstream|filesystem|fcntl\.h|unistd\.h|sys/stat\.h|liburing|thread>)")
# Named, documented exceptions to the library rules: (file, library, reason). Keep short.
EXCEPTIONS = [
    ("src/s3/checksum.cc", "ISA-L",
     "S3 checksums use ISA-L's CRC32/CRC64 routines (not its erasure codec); s3 (L2) cannot "
     "reach ec (L4) and the CRC code is pure, so it stays in s3"),
]

SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".cc", ".cpp", ".ipp", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"][^>"]+[>"])', re.M)
MODULE_CALL_RE = re.compile(r"\bsilo_module\(\s*([A-Za-z0-9_]+)(.*?)\)", re.S)
KEYWORDS = ("SRCS", "DEPS", "EXTERNAL", "TEST_DEPS", "LAYER", "TEST_ONLY")


class Module:
    def __init__(self, name, layer, deps, test_deps, test_only):
        self.name = name
        self.layer = layer
        self.deps = deps
        self.test_deps = test_deps
        self.test_only = test_only


def parse_module_call(text):
    """Returns (name, {keyword: [values]}) of the silo_module() call in `text`, or None."""
    text = re.sub(r"#[^\n]*", "", text)  # CMake comments
    m = MODULE_CALL_RE.search(text)
    if not m:
        return None
    args = {}
    current = None
    for word in m.group(2).split():
        if word in KEYWORDS:
            current = word
            args.setdefault(word, [])
        elif current:
            args[current].append(word)
    return m.group(1), args


def load_modules(root, errors):
    modules = {}
    src = root / "src"
    for folder in sorted(p for p in src.iterdir() if p.is_dir()) if src.is_dir() else []:
        rel = f"src/{folder.name}"
        cmake = folder / "CMakeLists.txt"
        parsed = parse_module_call(cmake.read_text()) if cmake.exists() else None
        if not parsed:
            errors.append(f"{rel}: no silo_module() call in CMakeLists.txt")
            continue
        name, args = parsed
        if name != folder.name:
            errors.append(f"{rel}: silo_module({name}) does not match its folder name")
        layer = args.get("LAYER", [])
        if len(layer) != 1 or not layer[0].isdigit() or int(layer[0]) >= CMD_LAYER:
            errors.append(f"{rel}: silo_module({name}) needs one LAYER 0..5 (STYLE.md 2.2), "
                          f"got {layer or 'none'}")
            continue
        if not (folder / "README.md").exists():
            errors.append(f"{rel}: no README.md")
        modules[folder.name] = Module(folder.name, int(layer[0]), args.get("DEPS", []),
                                      args.get("TEST_DEPS", []), "TEST_ONLY" in args)
    return modules


def check_deps_graph(modules, errors):
    for m in modules.values():
        for kind, names in (("DEPS", m.deps), ("TEST_DEPS", m.test_deps)):
            for d in names:
                if d in GENERATED:
                    continue
                dep = modules.get(d)
                if dep is None:
                    errors.append(f"src/{m.name}: {kind} names {d}, which is no module")
                    continue
                if {m.name, d} == set(ROLES):
                    errors.append(f"src/{m.name}: {kind} names {d}: proxy and target never "
                                  "depend on each other (STYLE.md 2.2 rule 2)")
                if kind == "DEPS" and dep.layer > m.layer:
                    errors.append(f"src/{m.name}: DEPS names {d} (L{dep.layer}), above "
                                  f"{m.name}'s layer L{m.layer}")
                if kind == "DEPS" and dep.test_only and not m.test_only:
                    errors.append(f"src/{m.name}: DEPS names test-only module {d} "
                                  "(use TEST_DEPS)")
    # Cycles (DEPS only: tests sit outside the library graph).
    state = {}  # name -> 1 visiting, 2 done
    stack = []
    reported = set()

    def visit(name):
        state[name] = 1
        stack.append(name)
        for d in modules[name].deps:
            if d not in modules:
                continue
            if state.get(d) == 1:
                cycle = stack[stack.index(d):] + [d]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    errors.append("DEPS cycle: " + " -> ".join(cycle))
            elif d not in state:
                visit(d)
        stack.pop()
        state[name] = 2

    for name in sorted(modules):
        if name not in state:
            visit(name)


def includes_of(path):
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return INCLUDE_RE.findall(text)


def silo_include(modules, spelled):
    """(module, rest) when `spelled` ("x/y.h") names a Silo module's header, else None."""
    if not spelled.startswith('"'):
        return None
    inner = spelled[1:-1]
    head, sep, rest = inner.partition("/")
    if not sep or head not in modules:
        return None
    return head, rest


def check_libraries(rel, includes, layer, is_test, errors):
    for spelled in includes:
        for lib, pattern, allowed in LIBRARY_RULES:
            if not pattern.search(spelled):
                continue
            if rel.startswith(allowed):
                continue
            if any(rel == f and lib == l for f, l, _ in EXCEPTIONS):
                continue
            errors.append(f"{rel}: includes {spelled}: {lib} is reached only through "
                          f"{', '.join(allowed)} (STYLE.md 2.2 rule 4)")
        if layer == 2 and not is_test and L2_FORBIDDEN.search(spelled):
            errors.append(f"{rel}: includes {spelled}: L2 modules stay pure (no sockets, "
                          "files, threads, Asio, Beast or RocksDB; STYLE.md 2.2 rule 3)")


def is_test_file(path):
    return path.name.endswith("_test.cc") or path.name.endswith("_test.h")


def source_files(folder):
    return sorted(f for f in folder.rglob("*") if f.suffix in SOURCE_SUFFIXES and f.is_file())


def check_module_files(root, modules, errors):
    for m in modules.values():
        for f in source_files(root / "src" / m.name):
            rel = f.relative_to(root).as_posix()
            is_test = is_test_file(f)
            includes = includes_of(f)
            check_libraries(rel, includes, m.layer, is_test, errors)
            for spelled in includes:
                hit = silo_include(modules, spelled)
                if not hit:
                    continue
                target, rest = hit
                what = f"{target}/{rest}"
                if target == m.name:
                    continue
                dep = modules[target]
                if rest.startswith("detail/"):
                    errors.append(f"{rel}: includes another module's private {what}")
                if {m.name, target} == set(ROLES):
                    errors.append(f"{rel}: includes {what}: proxy and target never include "
                                  "each other; move the shared code down (STYLE.md 2.2 rule 2)")
                    continue
                via_test_deps = is_test and target in m.test_deps
                if target not in m.deps and not via_test_deps:
                    errors.append(f"{rel}: includes {what} but {m.name} does not declare "
                                  f"{target} in {'TEST_DEPS' if is_test else 'DEPS'}")
                    continue
                if dep.layer > m.layer and not via_test_deps:
                    errors.append(f"{rel}: includes {what}: {target} (L{dep.layer}) is above "
                                  f"{m.name} (L{m.layer}); include only downward")
                if dep.test_only and not (is_test or m.test_only):
                    errors.append(f"{rel}: includes {what}: {target} is test-only")
                if target == CLIENT_MODULE and not (m.test_only or is_test):
                    errors.append(f"{rel}: includes {what}: only cmd/, test/, bench/ and "
                                  "test-only modules use client (STYLE.md 2.2 rule 5)")


def check_outer_files(root, modules, errors):
    for top in ("cmd", "test", "bench"):
        folder = root / top
        if not folder.is_dir():
            continue
        for f in source_files(folder):
            rel = f.relative_to(root).as_posix()
            includes = includes_of(f)
            check_libraries(rel, includes, CMD_LAYER, True, errors)
            for spelled in includes:
                hit = silo_include(modules, spelled)
                if not hit:
                    continue
                target, rest = hit
                if rest.startswith("detail/"):
                    errors.append(f"{rel}: includes another module's private {target}/{rest}")
                if top == "cmd" and modules[target].test_only:
                    errors.append(f"{rel}: includes {target}/{rest}: {target} is test-only")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent,
                        help="the repository root to check")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    errors = []
    modules = load_modules(root, errors)
    check_deps_graph(modules, errors)
    check_module_files(root, modules, errors)
    check_outer_files(root, modules, errors)
    for e in errors:
        print("check_deps:", e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
