#!/usr/bin/env python3
"""Confab's house rules, checked on every CI run (as fwupd's
contrib/ci/check-source.py does). Prints one line per violation and exits
1 if there is any.

- Folders only depend downwards: src/<folder> may include headers of the
  folders listed for it in LAYERS, and nothing creates a cycle.
- libsoup is not used by the daemon: no <libsoup/...> under src/.
- Functions stay short and shallow: at most MAX_FUNCTION_LINES lines and
  MAX_NESTING levels of blocks.
- No goto.
- Every function a .c file exports starts with that file's prefix
  (src/store/confab-store.c exports confab_store_*).
- po/POTFILES.in lists exactly the files with translatable strings.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")

# folder -> the folders it may include (besides itself)
LAYERS = {
    "util": [],
    "model": ["util"],
    "openai": ["model", "util"],
    "store": ["model", "util"],
    "store/sqlite": ["store", "model", "util"],
    "store/postgres": ["store", "model", "util"],
    "secrets": ["util"],
    "upstream": ["util"],
    "providers": ["upstream", "openai", "model", "util"],
    "tools/mcp": ["upstream", "model", "util"],
    "tools": ["tools/mcp", "providers", "openai", "model", "util"],
    "core": ["store", "store/sqlite", "store/postgres", "secrets", "providers", "tools",
             "tools/mcp", "upstream", "openai", "metrics", "model", "util"],
    "metrics": ["util"],
    "http/server": ["openai", "util"],
    "http": ["http/server", "core", "store", "providers", "tools", "metrics", "openai",
             "model", "util"],
    "dbus": ["core", "store", "providers", "tools", "openai", "model", "util"],
    "cli": ["dbus", "model", "util"],
    ".": ["core", "http", "dbus", "store", "store/sqlite", "store/postgres", "secrets",
          "providers", "tools", "util", "model", "openai", "upstream", "metrics"],
}

MAX_FUNCTION_LINES = 100
MAX_NESTING = 4

problems = []


def report(path, line, message):
    problems.append(f"{os.path.relpath(path, ROOT)}:{line}: {message}")


def folder_of(path):
    rel = os.path.relpath(os.path.dirname(path), SRC)
    return rel


def source_files():
    for dirpath, _, names in os.walk(SRC):
        for name in sorted(names):
            if name.endswith((".c", ".h")):
                yield os.path.join(dirpath, name)


def check_includes(path, text):
    folder = folder_of(path)
    allowed = LAYERS.get(folder)
    if allowed is None:
        report(path, 1, f"folder '{folder}' is not in the layer table of this script")
        return
    for n, line in enumerate(text.splitlines(), 1):
        if re.match(r'#include\s+<libsoup/', line):
            report(path, n, "libsoup is not used under src/ (Confab has its own HTTP/1.1)")
        m = re.match(r'#include\s+"([^"]+)"', line)
        if not m or m.group(1) == "config.h":
            continue
        target = os.path.dirname(m.group(1)) or "."
        if "/" not in m.group(1) and folder != ".":
            report(path, n, f"include '{m.group(1)}' by its path under src/")
            continue
        if target != folder and target not in allowed:
            report(path, n, f"{folder}/ may not include {m.group(1)} ({target}/ is not below it)")


def strip_comments_and_strings(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    text = re.sub(r"//[^\n]*", "", text)
    return text


def check_functions(path, text):
    code = strip_comments_and_strings(text)
    lines = code.splitlines()
    prefix = "_".join(os.path.basename(path)[:-2].split("-"))
    i = 0
    while i < len(lines):
        line = lines[i]
        # a definition: the name at column 0 (return type on its own line)
        m = re.match(r"^([a-z_][a-z0-9_]*)\(", line)
        if m and i > 0 and not lines[i - 1].startswith(("static", "#", " ", "\t")) or (
                m and i > 0 and lines[i - 1].startswith("static")):
            name = m.group(1)
            exported = not lines[i - 1].startswith("static") and \
                not re.search(r"\bstatic\b", lines[i - 1])
            # find the body
            j = i
            while j < len(lines) and not lines[j].startswith("{") and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j].startswith("{"):
                start = j
                depth = 0
                deepest = 0
                for k in range(start, len(lines)):
                    for ch in lines[k]:
                        if ch == "{":
                            depth += 1
                            deepest = max(deepest, depth)
                        elif ch == "}":
                            depth -= 1
                    if depth == 0:
                        break
                length = k - start + 1
                if length > MAX_FUNCTION_LINES:
                    report(path, i + 1, f"{name}() is {length} lines (at most {MAX_FUNCTION_LINES})")
                # the function body itself is level 1
                if deepest - 1 > MAX_NESTING:
                    report(path, i + 1, f"{name}() nests {deepest - 1} blocks deep (at most {MAX_NESTING})")
                if exported and path.endswith(".c") and not name.startswith(prefix) \
                        and name != "main" and not name.startswith("LLVMFuzzer"):
                    report(path, i + 1, f"{name}() is exported from a file whose prefix is {prefix}_")
                i = k
        if re.search(r"\bgoto\b", line):
            report(path, i + 1, "no goto")
        i += 1


def check_potfiles():
    listed = []
    with open(os.path.join(ROOT, "po", "POTFILES.in")) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                listed.append(line)
    if listed != sorted(listed):
        report(os.path.join(ROOT, "po", "POTFILES.in"), 1, "not sorted")
    marked = []
    for path in source_files():
        with open(path, encoding="utf-8") as f:
            if re.search(r"\b(N?_|C_|NC_|g_dngettext)\(\s*\"", f.read()):
                marked.append(os.path.relpath(path, ROOT))
    for path in sorted(set(marked) - set(listed)):
        report(os.path.join(ROOT, path), 1, "has translatable strings but is not in po/POTFILES.in")
    for path in sorted(set(listed) - set(marked)):
        report(os.path.join(ROOT, "po", "POTFILES.in"), 1, f"lists {path}, which has no translatable strings")


def check_cycles():
    # the table itself must be acyclic: a cycle there would allow one in code
    seen, stack = set(), set()

    def visit(node, trail):
        if node in stack:
            problems.append("layer table: cycle " + " -> ".join(trail + [node]))
            return
        if node in seen:
            return
        seen.add(node)
        stack.add(node)
        for dep in LAYERS.get(node, []):
            visit(dep, trail + [node])
        stack.discard(node)

    for node in LAYERS:
        visit(node, [])


def main():
    check_cycles()
    for path in source_files():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        check_includes(path, text)
        if path.endswith(".c"):
            check_functions(path, text)
    check_potfiles()
    for p in problems:
        print(p)
    print(f"check-source: {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
