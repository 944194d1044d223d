"""The Python package keeps its shape: no import circle between its modules, no function-local
import without a reason other than a circle, and every module imports in a fresh interpreter
with nothing imported before it (an order-dependent circle would fail there first).

Imports of the package itself (`import oneflowlike as flow`) are set aside: the package imports
every module, and a module reads `flow.x` from it when called, not when imported."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "python" / "oneflowlike"
PACKAGE = "oneflowlike"


def modules():
    """{dotted name: path} of every module of the package."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = (PACKAGE,) + path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = modules()


def imports(name):
    """(module imported, whether inside a function, line, the line's text) for each import of
    the package in module `name`; `from a import b` counts as importing a.b where that is a
    module, else a."""
    path = MODULES[name]
    source = path.read_text()
    lines = source.splitlines()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = []

    def target(base, item):
        full = f"{base}.{item}"
        return full if full in MODULES else base

    def visit(node, local):
        for child in ast.iter_child_nodes(node):
            inside = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == PACKAGE:
                        found.append((alias.name, inside, child.lineno))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.rsplit(".", child.level - 1)[0] if child.level > 1 else package
                    base = f"{base}.{child.module}" if child.module else base
                else:
                    base = child.module or ""
                if base.split(".")[0] == PACKAGE:
                    for alias in child.names:
                        found.append((target(base, alias.name), inside, child.lineno))
            visit(child, inside)

    visit(ast.parse(source), False)
    return [(t, local, line, lines[line - 1]) for t, local, line in found]


def test_no_module_of_the_package_imports_itself_in_a_circle():
    graph = {
        name: {t for t, _, _, _ in imports(name) if t != PACKAGE and t in MODULES}
        for name in MODULES
    }
    state, stack, circles = {}, [], []

    def walk(name):
        state[name] = "open"
        stack.append(name)
        for nxt in sorted(graph[name]):
            if state.get(nxt) == "open":
                circles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                walk(nxt)
        stack.pop()
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            walk(name)
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_a_function_local_import_says_why_it_is_local():
    # The reasons a local import may have: a dependency loaded only where it is used (a heavy or
    # optional one), never to dodge a circle (the test above).
    unexplained = [
        f"{MODULES[name].relative_to(ROOT.parent)}:{line}: {text.strip()}"
        for name in MODULES
        for _, local, line, text in imports(name)
        if local and "# lazy:" not in text
    ]
    assert not unexplained, "local imports without a '# lazy:' reason:\n" + "\n".join(unexplained)


def run_python(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return r.stdout, (None if r.returncode == 0 else r.stderr[-1500:])


@pytest.mark.multiprocess
def test_every_module_imports_alone_in_a_fresh_interpreter():
    # Importing any module imports the package first, which imports most of them in its order:
    # one interpreter covers those, and each of the others (the launcher, the tools) gets its own.
    out, error = run_python(
        f"import sys, {PACKAGE}; print(' '.join(m for m in sys.modules if m.startswith('{PACKAGE}')))"
    )
    assert error is None, error
    rest = sorted(set(MODULES) - set(out.split()))
    assert f"{PACKAGE}.distributed.launch" in rest
    failed = [f"{name}:\n{error}" for name in rest if (error := run_python(f"import {name}")[1])]
    assert not failed, "\n".join(failed)
