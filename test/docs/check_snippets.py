#!/usr/bin/env python3
"""Checks that every C++ code block of README.md and docs/*.md is a region of a tested source file.

    check_snippets.py [--fix] [REPO_ROOT]

In a source file, a line `//[name` opens the region `name` and a line `//]` closes it (regions may
nest; marker lines are never part of a region's text). In the markdown, the line just before a
```cpp fence says where its block comes from:

    <!-- snippet: examples/quick_start.cpp#run -->

The block must be the region's text with the lines' common indentation removed. The source must
be built and run by the tests: a file named in a CMakeLists.txt of examples/ or test/, a header
one of those includes, or a file of the library (src/, include/zklock/), which every test links.

```sql blocks are run by the tests that read them from the markdown (SQL_CHECKED_BY below);
other languages (sh) are not checked here.

Fails, naming the markdown file and line, when a ```cpp block has no marker, the file or region
does not exist, the file is not built by the tests, or the block and the region differ.
--fix rewrites each marked block from its region (the other failures remain failures).
"""
import os
import re
import sys

DOCS_GLOBS = ["README.md", "docs"]
MARKER_RE = re.compile(r"^<!-- snippet: (?P<path>[^#\s]+)#(?P<name>[A-Za-z0-9_.-]+) -->$")
FENCE_RE = re.compile(r"^(?P<indent> *)```(?P<lang>\S*)\s*$")
OPEN_RE = re.compile(r"^\s*//\[(?P<name>[A-Za-z0-9_.-]+)\s*$")
CLOSE_RE = re.compile(r"^\s*//\]\s*$")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"(?P<file>[^"]+)"')

# (markdown file, section heading) -> the test that reads that section's ```sql blocks from the
# markdown and runs them as written; the check asserts that the test still names the section.
SQL_CHECKED_BY = {
    ("docs/guide.md", "## Fencing a PostgreSQL table"): "test/integration/test_pg_fencing.cpp",
}


class Failure(Exception):
    pass


def markdown_files(root):
    out = []
    for entry in DOCS_GLOBS:
        p = os.path.join(root, entry)
        if os.path.isdir(p):
            out += sorted(os.path.join(entry, f) for f in os.listdir(p) if f.endswith(".md"))
        elif os.path.isfile(p):
            out.append(entry)
    return out


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")


def regions(lines):
    """{name: (first line number of the region's text (1-based), [lines])}; raises on bad nesting."""
    found, stack = {}, []
    for i, line in enumerate(lines):
        m = OPEN_RE.match(line)
        if m:
            if m["name"] in found or any(n == m["name"] for n, _ in stack):
                raise Failure(f"line {i + 1}: region '{m['name']}' opened twice")
            stack.append((m["name"], i + 1))
            found[m["name"]] = (i + 2, [])
            continue
        if CLOSE_RE.match(line):
            if not stack:
                raise Failure(f"line {i + 1}: '//]' closes no region")
            stack.pop()
            continue
        for name, _ in stack:
            found[name][1].append(line)
    if stack:
        raise Failure(f"line {stack[-1][1]}: region '{stack[-1][0]}' is never closed")
    return found


def dedent(lines):
    lines = [l.rstrip() for l in lines]
    indents = [len(l) - len(l.lstrip(" ")) for l in lines if l.strip()]
    cut = min(indents) if indents else 0
    return [l[cut:] for l in lines]


def tested_sources(root):
    """Sources of examples/ and test/ that a CMakeLists.txt names, and the local headers they include."""
    named = set()
    for top in ("examples", "test"):
        for d, _, files in os.walk(os.path.join(root, top)):
            if "CMakeLists.txt" not in files:
                continue
            text = open(os.path.join(d, "CMakeLists.txt"), encoding="utf-8").read()
            text = "\n".join(l.split("#", 1)[0] for l in text.split("\n"))  # drop comments
            for tok in re.findall(r"[A-Za-z0-9_./${}-]+\.(?:cpp|hpp|h|c)\b", text):
                tok = tok.replace("${CMAKE_CURRENT_SOURCE_DIR}/", "")
                p = os.path.normpath(os.path.join(d, tok))
                if os.path.isfile(p):
                    named.add(os.path.relpath(p, root))
    # Headers included (with "...") by a named file, transitively.
    todo = list(named)
    while todo:
        f = todo.pop()
        try:
            lines = read_lines(os.path.join(root, f))
        except OSError:
            continue
        for line in lines:
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            p = os.path.normpath(os.path.join(root, os.path.dirname(f), m["file"]))
            rel = os.path.relpath(p, root)
            if os.path.isfile(p) and rel not in named:
                named.add(rel)
                todo.append(rel)
    return named


def is_tested(rel, tested):
    if rel in tested:
        return True
    # The library: every test binary links it (src/ is globbed by the top CMakeLists.txt).
    return (rel.startswith("src/") or rel.startswith("include/zklock/")) and rel.endswith((".cpp", ".hpp", ".h"))


def blocks(lines):
    """Yields (lang, indentation, fence line index, first body index, closing fence index, section
    heading); a fence may be indented (in a list item), its block then is too."""
    i, section = 0, ""
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i].rstrip()
        m = FENCE_RE.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            if j == len(lines):
                raise Failure(f"{i + 1}: code fence never closed")
            yield m["lang"], len(m["indent"]), i, i + 1, j, section
            i = j + 1
            continue
        i += 1


def check(root, fix):
    errors = []
    tested = tested_sources(root)
    region_cache = {}
    checked = 0
    for md in markdown_files(root):
        lines = read_lines(os.path.join(root, md))
        edits = []  # (first body index, closing index, new body lines)
        try:
            found = list(blocks(lines))
        except Failure as e:
            errors.append(f"{md}:{e}")
            continue
        for lang, indent, fence, body, close, section in found:
            where = f"{md}:{fence + 1}"
            marker = MARKER_RE.match(lines[fence - 1].strip()) if fence > 0 else None
            if lang == "sql":
                test = SQL_CHECKED_BY.get((md, section))
                if test is None:
                    errors.append(f"{where}: ```sql block in a section no test runs (SQL_CHECKED_BY)")
                else:
                    heading = section[3:]
                    if f"## {heading}" not in open(os.path.join(root, test), encoding="utf-8").read():
                        errors.append(f"{where}: {test} no longer reads the section '{heading}'")
                continue
            if lang not in ("cpp", "c++"):
                if marker:
                    errors.append(f"{where}: snippet marker before a ```{lang} block (only ```cpp is checked)")
                continue
            if not marker:
                errors.append(f"{where}: ```cpp block without a '<!-- snippet: path#name -->' line before it")
                continue
            rel, name = os.path.normpath(marker["path"]), marker["name"]
            src = os.path.join(root, rel)
            if not os.path.isfile(src):
                errors.append(f"{where}: snippet file {rel} does not exist")
                continue
            if not is_tested(rel, tested):
                errors.append(f"{where}: {rel} is not built by the tests (name it in a CMakeLists.txt of "
                              "examples/ or test/, include it from such a file, or use src/ or include/zklock/)")
                continue
            if rel not in region_cache:
                try:
                    region_cache[rel] = regions(read_lines(src))
                except Failure as e:
                    errors.append(f"{rel}:{str(e)[5:]}")
                    region_cache[rel] = {}
            if name not in region_cache[rel]:
                errors.append(f"{where}: {rel} has no region '//[{name}'")
                continue
            start, text = region_cache[rel][name]
            want = dedent(text)
            have = [l.rstrip()[indent:] if l[:indent].strip() == "" else l.rstrip() for l in lines[body:close]]
            checked += 1
            if want == have:
                continue
            if fix:
                edits.append((body, close, [(" " * indent + l) if l else l for l in want]))
                continue
            k = next((k for k in range(max(len(want), len(have)))
                      if k >= len(want) or k >= len(have) or want[k] != have[k]), 0)
            errors.append(f"{md}:{body + k + 1}: block differs from {rel}:{start + k} (region '{name}')\n"
                          f"    markdown: {have[k] if k < len(have) else '(block ends)'}\n"
                          f"    source:   {want[k] if k < len(want) else '(region ends)'}")
        if edits:
            for body, close, want in reversed(edits):
                lines[body:close] = want
            with open(os.path.join(root, md), "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
            print(f"{md}: rewrote {len(edits)} block(s) from their sources")
    return errors, checked


def main(argv):
    args = [a for a in argv[1:] if a != "--fix"]
    fix = "--fix" in argv[1:]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    errors, checked = check(os.path.abspath(root), fix)
    for e in errors:
        print(e)
    if errors:
        print(f"check_snippets: {len(errors)} problem(s)")
        return 1
    print(f"check_snippets: {checked} C++ block(s) match their sources")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
