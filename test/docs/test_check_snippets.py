#!/usr/bin/env python3
"""The checks of check_snippets.py, each on a small repository made in a temporary directory:
a matching block passes, and each kind of fault fails with the markdown file and line named."""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_snippets.py")

SOURCE = """int main()
{
    //[outer
    int a = 1;
    //[inner
    int b = a + 1;
    //]
    return b - 2;
    //]
}
"""

GOOD_README = """# demo

<!-- snippet: examples/demo.cpp#inner -->
```cpp
int b = a + 1;
```

<!-- snippet: examples/demo.cpp#outer -->
```cpp
int a = 1;
int b = a + 1;
return b - 2;
```

```sh
echo not checked
```
"""


def make_repo(d, readme=GOOD_README, cmake="add_executable(demo demo.cpp)\n", guide=""):
    os.makedirs(os.path.join(d, "examples"), exist_ok=True)
    os.makedirs(os.path.join(d, "docs"), exist_ok=True)
    open(os.path.join(d, "examples", "demo.cpp"), "w").write(SOURCE)
    open(os.path.join(d, "examples", "CMakeLists.txt"), "w").write(cmake)
    open(os.path.join(d, "README.md"), "w").write(readme)
    open(os.path.join(d, "docs", "guide.md"), "w").write(guide)


def run(d, *args):
    p = subprocess.run([sys.executable, CHECK, *args, d], capture_output=True, text=True)
    return p.returncode, p.stdout


failures = []


def expect(name, ok, out):
    print(("ok: " if ok else "FAILED: ") + name)
    if not ok:
        print(out)
        failures.append(name)


def case(name, expect_rc, expect_text, **repo):
    with tempfile.TemporaryDirectory() as d:
        make_repo(d, **repo)
        rc, out = run(d)
        expect(name, rc == expect_rc and expect_text in out, out)


case("matching blocks pass (nested regions, marker lines left out)", 0, "2 C++ block(s) match")
case("a changed line fails, naming the line", 1, "README.md:5: block differs from examples/demo.cpp:6",
     readme=GOOD_README.replace("int b = a + 1;\n```\n\n<!-- snippet: examples/demo.cpp#outer",
                                "int b = a + 2;\n```\n\n<!-- snippet: examples/demo.cpp#outer"))
case("a missing line fails", 1, "README.md:12: block differs",
     readme=GOOD_README.replace("return b - 2;\n", ""))
case("a block without a marker fails", 1, "README.md:4: ```cpp block without",
     readme=GOOD_README.replace("<!-- snippet: examples/demo.cpp#inner -->\n", "\n"))
case("an unknown region fails", 1, "README.md:4: examples/demo.cpp has no region '//[nope'",
     readme=GOOD_README.replace("#inner", "#nope"))
case("an unknown file fails", 1, "README.md:4: snippet file examples/gone.cpp does not exist",
     readme=GOOD_README.replace("demo.cpp#inner", "gone.cpp#inner"))
case("a source no CMakeLists names fails", 1, "README.md:4: examples/demo.cpp is not built by the tests",
     cmake="add_executable(other other.cpp)\n")
case("a ```sql block in a section no test runs fails", 1, "docs/guide.md:3: ```sql block in a section no test runs",
     guide="## Somewhere\n\n```sql\nSELECT 1\n```\n")

INDENTED = """# demo

- in a list:

  <!-- snippet: examples/demo.cpp#outer -->
  ```cpp
  int a = 1;
  int b = a + 1;
  return b - 2;
  ```
"""
case("a block indented in a list item passes", 0, "1 C++ block(s) match", readme=INDENTED)
case("an indented block that differs fails", 1, "README.md:8: block differs",
     readme=INDENTED.replace("a + 1", "a + 3"))
case("an indented block without a marker fails", 1, "README.md:5: ```cpp block without",
     readme=INDENTED.replace("  <!-- snippet: examples/demo.cpp#outer -->\n", ""))

with tempfile.TemporaryDirectory() as d:
    make_repo(d, readme=INDENTED.replace("a + 1", "a + 3"))
    rc, out = run(d, "--fix")
    fixed = open(os.path.join(d, "README.md")).read()
    expect("--fix keeps an indented block's indentation", rc == 0 and fixed == INDENTED, out + fixed)

with tempfile.TemporaryDirectory() as d:
    make_repo(d, readme=GOOD_README.replace("return b - 2;", "return 0;"))
    rc, out = run(d, "--fix")
    fixed = open(os.path.join(d, "README.md")).read()
    rc2, out2 = run(d)
    expect("--fix rewrites a block from its region", rc == 0 and fixed == GOOD_README and rc2 == 0, out + out2)

sys.exit(1 if failures else 0)
