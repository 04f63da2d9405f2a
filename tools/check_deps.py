#!/usr/bin/env python3
"""Fails when a module includes a Silo module it does not declare in DEPS, or another
module's detail/ header, or when a module has no README.md (STYLE.md 2.2, 2.6)."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
src = root / "src"
include_re = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([^"]+)"', re.M)
deps_re = re.compile(r"silo_module\(\s*(\w+)(.*?)\)", re.S)

modules = {}
for cmake in sorted(src.glob("*/CMakeLists.txt")):
    m = deps_re.search(cmake.read_text())
    if not m:
        continue
    body = m.group(2)
    deps = re.search(r"\bDEPS\b(.*?)(\bEXTERNAL\b|\bTEST_DEPS\b|\bSRCS\b|$)", body, re.S)
    test_deps = re.search(r"\bTEST_DEPS\b(.*?)(\bEXTERNAL\b|\bDEPS\b|\bSRCS\b|$)", body, re.S)
    modules[cmake.parent.name] = (
        set(deps.group(1).split()) if deps else set(),
        set(test_deps.group(1).split()) if test_deps else set(),
    )

errors = []
for name, (deps, test_deps) in modules.items():
    folder = src / name
    if not (folder / "README.md").exists():
        errors.append(f"src/{name}: no README.md")
    for f in folder.rglob("*"):
        if f.suffix not in (".h", ".cc"):
            continue
        is_test = f.name.endswith("_test.cc")
        allowed = deps | {name, "proto"} | (test_deps if is_test else set())
        for inc_module, rest in include_re.findall(f.read_text()):
            if inc_module not in modules:
                continue
            rel = f.relative_to(root)
            if inc_module not in allowed:
                errors.append(f"{rel}: includes {inc_module}/{rest} but {name} does not declare it in DEPS")
            if inc_module != name and rest.startswith("detail/"):
                errors.append(f"{rel}: includes another module's private {inc_module}/{rest}")

for e in errors:
    print("check_deps:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
