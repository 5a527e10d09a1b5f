"""The rules of the house that a test can check (docs/architecture.md, "The floors").

The rules read the code as text (``ast``), never import it, and every rule is a
function of a folder: the same function checks this checkout and, in the
``test_..._sees_...`` tests, a tiny tree planted in ``tmp_path`` that breaks the
rule on purpose (so a rule that can never fail is caught).

How the code is read
--------------------
- **The import graph.** Every ``.py`` of ``kbackends/`` and ``algorithms/`` is a
  module (``pkg/__init__.py`` is the module ``pkg``). Every ``import`` and
  ``from ... import`` is an edge, at any depth: module level, inside functions,
  classes or ``try`` blocks (only the body of ``if TYPE_CHECKING:`` is left out: it
  never runs). Relative imports are resolved from the importing module's package.
  ``import a.b`` is an edge to ``a.b``. ``from p import n`` is an edge to the
  module ``p.n`` when ``n`` is a submodule of ``p``, else to ``p`` (``n`` is a name
  that ``p``'s ``__init__`` defines or re-exports). No edge goes to the parent
  packages that Python imports on the way: every submodule would otherwise sit in a
  circle with its package's ``__init__``, and a submodule does not depend on what
  that ``__init__`` defines unless it imports one of its names.
- **A circle** is a strongly connected component of two or more modules. So
  ``pkg/__init__ -> pkg/_a`` with ``pkg/_a`` doing ``from . import _b`` (a sibling
  module) is no circle; with ``from . import NAME`` (a name the ``__init__`` defines
  or re-exports) or ``from .. import pkg`` (the package object, whose attributes
  are the ``__init__``'s names) it is one: ``_a`` needs the ``__init__`` that is
  still importing it.
- **Lines of code** of a function: the non-blank, non-comment lines of its body,
  the docstring left out, nested functions counted in their parent (and checked on
  their own too).
- **A kernel family** is a folder ``kbackends/kernels/<family>/``; its ops are the
  literal names its ``__init__.py`` passes to ``register_kernel`` (a loop variable
  over a literal tuple is read too; a name that cannot be read is itself reported,
  and so is a family that registers nothing).
  An op is **reached** when a public module of ``kbackends`` calls
  ``get_kernel("<op>", ...)`` (the registry's ``get_kernel``, however imported; a
  loop variable over a literal tuple counts) or calls the function ``<op>`` taken
  from a module of the family. A public module is one whose dotted path has no
  component starting with ``_`` and that is not under ``kbackends.kernels`` (the
  kernels are private: only the registry and the public ops reach them). A mention
  in a string, a comment or a private module (``kbackends._x``, ``__main__``) does
  not count, nor does a call from ``algorithms``.
- **An import inside a function** in ``kbackends/`` or ``algorithms/`` needs a
  reason: it takes a module outside the two packages (an optional or heavy
  dependency), or a comment on one of its lines or alone on the line above says why
  (``# lazy: ...``; a bare ``noqa`` / ``type: ignore`` pragma is no reason).
"""

from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kbackends", "algorithms")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LOC = 80
MAX_TOP_LEVEL_FILES = 6  # .py files at the top of algorithms/
KERNELS = "kbackends.kernels"
REGISTRY = ("kbackends", "kbackends._registry")  # where get_kernel is taken from
# a string that is an importable reference into algorithms: "algorithms", "algorithms.x.y",
# "algorithms.x:fn" (what importlib or the kernel registry would import); prose does not match
ALGORITHMS_REFERENCE = re.compile(r"algorithms(\.\w+)*(:\w+(\.\w+)*)?")
ALGORITHMS_PREFIX = re.compile(r"algorithms[.:]")  # the literal start of an f-string reference
PRAGMA = re.compile(r"\b(noqa(:\s*[A-Z]+\d+(\s*,\s*[A-Z]+\d+)*)?|type:\s*ignore(\[[^\]]*\])?|pragma:[^#]*|pylint:[^#]*)")


# --------------------------------------------------------------------------- reading

@dataclass(frozen=True)
class Import:
    """One import statement's edge: ``source`` imports the module ``target``."""

    source: str
    target: str
    path: Path
    line: int
    end_line: int
    in_function: bool
    base: str  # for ``from base import names``: base; for ``import x``: x
    names: tuple  # ((name, asname), ...) of a from-import; () for ``import x``

    def where(self, root):
        return f"{self.path.relative_to(root)}:{self.line}"


@dataclass
class Module:
    name: str
    path: Path
    source: str
    tree: ast.Module
    is_package: bool

    @property
    def package(self):
        return self.name if self.is_package else self.name.rpartition(".")[0]


def _module_name(path, root):
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(nodes, in_function=False):
    """(import node, made inside a function?) at any depth, ``if TYPE_CHECKING`` bodies left out."""
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _import_nodes(node.orelse, in_function)
        else:
            inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from _import_nodes(ast.iter_child_nodes(node), inner)


class Project:
    """The modules under ``folders`` of ``root`` and their imports (see the module docstring)."""

    def __init__(self, root, folders=PACKAGES):
        self.root = Path(root)
        self.modules = {}
        for folder in folders:
            for path in sorted((self.root / folder).rglob("*.py")):
                source = path.read_text()
                name = _module_name(path, self.root)
                self.modules[name] = Module(name, path, source, ast.parse(source, str(path)),
                                            path.name == "__init__.py")
        self.imports = [imp for module in self.modules.values() for imp in self._imports(module)]

    def _imports(self, module):
        for node, in_function in _import_nodes(module.tree.body):
            common = {"source": module.name, "path": module.path, "line": node.lineno,
                      "end_line": node.end_lineno, "in_function": in_function}
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(target=alias.name, base=alias.name, names=(), **common)
                continue
            base = node.module or ""
            if node.level:
                package = module.package.split(".")
                anchor = ".".join(package[: len(package) - (node.level - 1)])
                base = f"{anchor}.{base}" if base else anchor
            names = tuple((a.name, a.asname) for a in node.names)
            submodules = [f"{base}.{n}" for n, _ in names if f"{base}.{n}" in self.modules]
            if len(submodules) < len(names):  # some names are the base's own: an edge to its __init__
                yield Import(target=base, base=base, names=names, **common)
            for target in submodules:
                yield Import(target=target, base=base, names=names, **common)

    def graph(self):
        """Module -> the project modules it imports (self-imports left out)."""
        edges = {name: set() for name in self.modules}
        for imp in self.imports:
            if imp.target in self.modules and imp.target != imp.source:
                edges[imp.source].add(imp.target)
        return edges

    def in_package(self, package):
        return [m for name, m in self.modules.items() if _inside(name, package)]


@cache
def _project(root=ROOT, folders=PACKAGES):
    return Project(root, folders)


def _inside(name, package):
    return name == package or name.startswith(package + ".")


def _in_order(places):
    """``"path:line: ..."`` strings, each once, by path and line number."""
    def key(text):
        path, line, rest = (text.split(":", 2) + ["", ""])[:3]
        return (path, int(line) if line.isdigit() else 0, rest)
    return sorted(set(places), key=key)


# --------------------------------------------------------------------------- the rules

def kbackends_reaching_algorithms(project):
    """Imports from ``kbackends`` into ``algorithms`` and strings in ``kbackends`` that
    name an ``algorithms`` module (a registry target, an ``importlib`` name)."""
    found = [f"{imp.where(project.root)}: imports {imp.target}" for imp in project.imports
             if _inside(imp.source, "kbackends") and _inside(imp.target, "algorithms")]
    for module in project.in_package("kbackends"):
        for node in ast.walk(module.tree):
            text = None
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value if ALGORITHMS_REFERENCE.fullmatch(node.value) else None
            elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
                head = str(node.values[0].value)
                text = head + "{...}" if ALGORITHMS_PREFIX.match(head) else None
            if text is not None:
                found.append(f"{module.path.relative_to(project.root)}:{node.lineno}: names {text!r}")
    return _in_order(found)


def _strongly_connected(graph):
    """Tarjan's strongly connected components of ``graph`` (node -> set of nodes)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def import_circles(project):
    """Each import circle: its modules and the imports that close it (file:line)."""
    circles = []
    for component in _strongly_connected(project.graph()):
        if len(component) < 2:
            continue
        members = set(component)
        edges = sorted({f"{imp.source} -> {imp.target} ({imp.where(project.root)}"
                        f"{', in a function' if imp.in_function else ''})"
                        for imp in project.imports
                        if imp.source in members and imp.target in members and imp.source != imp.target})
        circles.append((component, edges))
    return circles


def long_modules(project, limit=MAX_MODULE_LINES):
    """Modules of more than ``limit`` lines."""
    found = []
    for module in project.modules.values():
        n = len(module.source.splitlines())
        if n > limit:
            found.append(f"{module.path.relative_to(project.root)}: {n} lines")
    return found


def lines_of_code(source_lines, node):
    """Non-blank, non-comment lines of ``node``'s body, its docstring left out, nested
    functions counted in it."""
    body = node.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        if len(body) == 1:
            return 0
        first = body[1]
    return sum(1 for line in source_lines[first.lineno - 1: node.end_lineno]
               if line.strip() and not line.strip().startswith("#"))


def long_functions(project, limit=MAX_FUNCTION_LOC):
    """Functions (methods, nested functions) of more than ``limit`` lines of code."""
    found = []
    for module in project.modules.values():
        lines = module.source.splitlines()
        for node in ast.walk(module.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = lines_of_code(lines, node)
                if n > limit:
                    found.append((n, f"{module.path.relative_to(project.root)}:{node.lineno} {node.name}: {n} lines of code"))
    return [text for _, text in sorted(found, reverse=True)]


def top_level_files(folder):
    """The ``.py`` files at the top of ``folder``."""
    return sorted(p.name for p in Path(folder).glob("*.py"))


def _literal_strings(node, env):
    """The strings an expression can be: a literal, or a loop variable over literals; None if unknown."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name):
        return env.get(node.id)
    return None


def _bind_loop(target, iterable, env):
    """``env`` plus the loop variables of ``for target in iterable`` over a literal tuple or list."""
    env = dict(env)
    if not isinstance(iterable, (ast.Tuple, ast.List)):
        return env
    items = iterable.elts
    if isinstance(target, ast.Name):
        values = [v for item in items for v in (_literal_strings(item, env) or [None])]
        env[target.id] = None if None in values else values
    elif isinstance(target, ast.Tuple):
        for i, name in enumerate(target.elts):
            if isinstance(name, ast.Name):
                values = [_literal_strings(item.elts[i], env) if isinstance(item, ast.Tuple) and i < len(item.elts)
                          else None for item in items]
                env[name.id] = None if None in values else [v for vs in values for v in vs]
    return env


def _calls(nodes, env=None):
    """(call node, loop bindings in force) for every call, at any depth."""
    env = env or {}
    for node in nodes:
        if isinstance(node, (ast.For, ast.AsyncFor)):
            yield from _calls([node.iter], env)
            yield from _calls(node.body, _bind_loop(node.target, node.iter, env))
            yield from _calls(node.orelse, env)
            continue
        if isinstance(node, ast.Call):
            yield node, env
        yield from _calls(ast.iter_child_nodes(node), env)


def _callee(func):
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def registered_ops(project):
    """{family: {op, ...}} of ``kbackends/kernels/<family>/__init__.py``, and the
    ``register_kernel`` calls whose op name cannot be read."""
    families, unread = {}, []
    for name, module in project.modules.items():
        if not (module.is_package and name.startswith(KERNELS + ".") and name.count(".") == 2):
            continue
        ops = families.setdefault(name.rpartition(".")[2], set())
        for call, env in _calls(module.tree.body):
            if _callee(call.func) == "register_kernel" and call.args:
                names = _literal_strings(call.args[0], env)
                if names is None:
                    unread.append(f"{module.path.relative_to(project.root)}:{call.lineno}: an op name not written out")
                else:
                    ops.update(names)
    return families, unread


def is_public(name):
    """A public module of kbackends: no component starts with ``_``, not under the kernels."""
    return _inside(name, "kbackends") and not _inside(name, KERNELS) and not any(
        part.startswith("_") for part in name.split("."))


def _reached_ops(project, module, family_of):
    """The ops ``module`` calls: through the registry's ``get_kernel``, or a family's function."""
    get_kernel, registry_modules, functions, family_modules = set(), set(), {}, {}
    for imp in project.imports:
        if imp.source != module.name:
            continue
        if not imp.names:  # import x [as y]: only ``x.attr`` calls through a bare ``import kbackends``
            if imp.base in REGISTRY:
                registry_modules.add(imp.base.partition(".")[0])
            continue
        for n, asname in imp.names:
            local = asname or n
            if imp.base in REGISTRY and n == "get_kernel":
                get_kernel.add(local)
            elif f"{imp.base}.{n}" in REGISTRY:
                registry_modules.add(local)
            elif f"{imp.base}.{n}" in family_of:  # a family's module taken as a name
                family_modules[local] = family_of[f"{imp.base}.{n}"]
            elif imp.base in family_of:
                functions[local] = n
    reached = set()
    for call, env in _calls(module.tree.body):
        func = call.func
        by_registry = (isinstance(func, ast.Name) and func.id in get_kernel) or (
            isinstance(func, ast.Attribute) and func.attr == "get_kernel"
            and isinstance(func.value, ast.Name) and func.value.id in registry_modules)
        if by_registry and call.args:
            reached.update(_literal_strings(call.args[0], env) or ())
        elif isinstance(func, ast.Name) and func.id in functions:
            reached.add(functions[func.id])
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in family_modules:
            reached.add(func.attr)
    return reached


def unreached_kernel_ops(project):
    """``family: op`` for each registered op that no public module of kbackends calls."""
    families, unread = registered_ops(project)
    family_of = {name: name.split(".")[2] for name in project.modules
                 if name.startswith(KERNELS + ".") and name.count(".") >= 2}
    reached = set()
    for module in project.modules.values():
        if is_public(module.name):
            reached |= _reached_ops(project, module, family_of)
    empty = [f"kbackends/kernels/{family}: registers no op" for family, ops in sorted(families.items())
             if not ops and not any(u.startswith(f"kbackends/kernels/{family}/") for u in unread)]
    return unread + empty + [f"kbackends/kernels/{family}: {op}" for family, ops in sorted(families.items())
                             for op in sorted(ops - reached)]


def _private_kbackends(path):
    return _inside(path, "kbackends") and any(
        (part.startswith("_") and not part.startswith("__")) or part == "kernels"
        for part in path.split(".")[1:])


def private_kbackends_imports(project):
    """Imports of a private kbackends module (``kbackends._x``, ``kbackends.kernels...``)
    or of a private name from kbackends (``from kbackends.ops import _checks``)."""
    found = set()
    for imp in project.imports:
        private_names = [n for n, _ in imp.names if n.startswith("_") and not n.startswith("__")]
        if _private_kbackends(imp.target) or (_inside(imp.base, "kbackends") and private_names):
            found.add(f"{imp.where(project.root)}: {imp.base}" + (f" import {', '.join(n for n, _ in imp.names)}"
                                                                   if imp.names else ""))
    return _in_order(found)


def _reasons(source):
    """{line: comment text} of the comments that say something (pragmas taken out)."""
    reasons = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            text = PRAGMA.sub("", token.string.lstrip("#")).strip(" :,;()")
            if re.search(r"[A-Za-z]{2}", text):
                reasons[token.start[0]] = (text, token.line.strip().startswith("#"))
    return reasons


def unexplained_function_imports(project):
    """Import statements inside functions that take a project module and have no comment saying why."""
    reasons, found = {}, {}
    for imp in project.imports:
        if not imp.in_function or not any(_inside(imp.target, p) for p in PACKAGES):
            continue
        module = project.modules[imp.source]
        if imp.source not in reasons:
            reasons[imp.source] = _reasons(module.source)
        comments = reasons[imp.source]
        own = any(line in comments for line in range(imp.line, imp.end_line + 1))
        above = comments.get(imp.line - 1, ("", False))[1]  # a comment alone on the line above
        if not (own or above):
            found.setdefault(imp.where(project.root), []).append(imp.target)
    return _in_order(f"{place}: {', '.join(sorted(set(targets)))}" for place, targets in found.items())


# --------------------------------------------------------------------------- this checkout

def test_kbackends_imports_nothing_of_algorithms():
    found = kbackends_reaching_algorithms(_project())
    assert not found, "kbackends is the floor below algorithms (docs/architecture.md):\n" + "\n".join(found)


def test_no_import_circle():
    circles = import_circles(_project())
    text = "\n".join(f"{' <-> '.join(c)}:\n    " + "\n    ".join(e) for c, e in circles)
    assert not circles, f"{len(circles)} import circle(s), counting imports inside functions:\n{text}"


def test_no_module_over_500_lines():
    found = long_modules(_project())
    assert not found, "split these modules (docs/architecture.md):\n" + "\n".join(found)


def test_no_function_over_80_lines_of_code():
    found = long_functions(_project())
    assert not found, "name the steps of these functions:\n" + "\n".join(found)


def test_at_most_6_files_at_the_top_of_algorithms():
    files = top_level_files(ROOT / "algorithms")
    assert len(files) <= MAX_TOP_LEVEL_FILES, f"an algorithm or a shared part is a package: {files}"


def test_every_kernel_family_is_reached_by_a_public_op():
    found = unreached_kernel_ops(_project())
    assert not found, ("an op of kbackends/kernels that no public kbackends module calls (give it a "
                       "public op, or move the family to the algorithm it serves):\n" + "\n".join(found))


@pytest.mark.parametrize("folder", ["algorithms", "asv_bench", "tests"])
def test_no_private_kbackends_import_outside_kbackends(folder):
    found = private_kbackends_imports(_project(ROOT, (folder,)))
    assert not found, "use kbackends' public names (or kbackends.testing in tests):\n" + "\n".join(found)


def test_imports_inside_functions_say_why():
    found = unexplained_function_imports(_project())
    assert not found, f"{len(found)} imports inside functions with no reason:\n" + "\n".join(found)


# --------------------------------------------------------------------------- planted violations

def plant(root, files):
    """Write ``{relative path: source}`` under ``root`` (the source dedented) and return root."""
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return root


def test_the_layer_rule_sees_a_planted_import_and_registry_string(tmp_path):
    root = plant(tmp_path, {
        "kbackends/__init__.py": "",
        "kbackends/report.py": """
            '''The bench (see algorithms/bench/ and ``algorithms.bench``) drives this.'''
            def main():
                from algorithms.bench import gpu_report
                return gpu_report
            """,
        "kbackends/_registry.py": "TARGETS = ['kbackends.ops:f', 'algorithms.sbp._fit:run', f'algorithms.{1}:fit']\n",
        "algorithms/__init__.py": "",
        "algorithms/bench/__init__.py": "from . import gpu_report\n",
        "algorithms/bench/gpu_report.py": "import kbackends\n",
    })
    found = kbackends_reaching_algorithms(Project(root))
    assert found == ["kbackends/_registry.py:1: names 'algorithms.sbp._fit:run'",
                     "kbackends/_registry.py:1: names 'algorithms.{...}'",
                     "kbackends/report.py:4: imports algorithms.bench.gpu_report"]


def test_the_circle_rule_sees_a_planted_circle_through_a_function(tmp_path):
    root = plant(tmp_path, {
        "algorithms/__init__.py": "from . import a\n",
        "algorithms/a.py": "from .b import helper\n",
        "algorithms/b.py": "def helper():\n    from . import a\n    return a\n",
        "algorithms/c.py": "from . import a\n",
    })
    circles = import_circles(Project(root))
    assert [c for c, _ in circles] == [["algorithms.a", "algorithms.b"]]
    assert "algorithms.b -> algorithms.a (algorithms/b.py:2, in a function)" in circles[0][1]


def test_the_circle_rule_reads_a_package_init_as_the_docstring_says(tmp_path):
    files = {
        "algorithms/__init__.py": "",
        "algorithms/pkg/__init__.py": "from ._a import run\nLIMIT = 3\n",
        "algorithms/pkg/_b.py": "X = 1\n",
    }
    sibling = Project(plant(tmp_path / "sibling", {**files, "algorithms/pkg/_a.py": "from . import _b\nrun = 1\n"}))
    assert import_circles(sibling) == []
    for i, line in enumerate(["from . import LIMIT", "from .. import pkg", "import algorithms.pkg"]):
        project = Project(plant(tmp_path / str(i), {**files, "algorithms/pkg/_a.py": f"{line}\nrun = 1\n"}))
        assert [c for c, _ in import_circles(project)] == [["algorithms.pkg", "algorithms.pkg._a"]], line


def test_the_size_rules_see_a_planted_long_module_and_function(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LOC))
    padding = '    """Docstring\n\n    lines."""\n    # a comment\n\n'
    root = plant(tmp_path, {
        "algorithms/__init__.py": "",
        "algorithms/ok.py": f"def at_the_limit():\n{padding}{body}",
        "algorithms/long.py": f"def over():\n{padding}{body}    def nested():\n        return 1\n",
        "kbackends/__init__.py": "\n" * MAX_MODULE_LINES + "X = 1\n",
    })
    project = Project(root)
    assert long_functions(project) == [f"algorithms/long.py:1 over: {MAX_FUNCTION_LOC + 2} lines of code"]
    assert long_modules(project) == [f"kbackends/__init__.py: {MAX_MODULE_LINES + 1} lines"]


def test_the_top_level_rule_counts_planted_files(tmp_path):
    plant(tmp_path, {f"algorithms/m{i}.py": "" for i in range(MAX_TOP_LEVEL_FILES + 1)} | {"algorithms/p/x.py": ""})
    assert len(top_level_files(tmp_path / "algorithms")) == MAX_TOP_LEVEL_FILES + 1


def test_the_kernel_rule_sees_a_planted_op_that_no_public_module_calls(tmp_path):
    root = plant(tmp_path, {
        "kbackends/__init__.py": "from ._registry import get_kernel\n",
        "kbackends/_registry.py": "def get_kernel(op, backend='auto'):\n    pass\n",
        "kbackends/kernels/__init__.py": "from . import fam\n",
        "kbackends/kernels/fam/__init__.py": """
            from ..._registry import register_kernel
            register_kernel("single", "xp", "kbackends.kernels.fam._xp:single")
            for _op in ("by_registry", "by_loop", "by_function", "private_only", "named_only"):
                for _impl, _module in (("xp", "_xp"), ("cuda", "_cuda")):
                    register_kernel(_op, _impl, f"{__name__}.{_module}:{_op}")
            """,
        "kbackends/kernels/fam/_xp.py": "def by_function(x, *, xp):\n    return x\n",
        "kbackends/ops/__init__.py": "",
        "kbackends/ops/public.py": """
            '''Mentions named_only and get_kernel("named_only") in prose only.'''
            import kbackends
            from kbackends.kernels.fam._xp import by_function
            from .._registry import get_kernel as gk
            def a(x, bk):
                for op in ("by_loop",):
                    kbackends.get_kernel(op, bk)
                return gk("by_registry", bk)(x) + by_function(x, xp=None)
            """,
        "kbackends/random.py": "from . import get_kernel\ndef b(bk):\n    return get_kernel('single', bk)\n",
        "kbackends/_private.py": "from ._registry import get_kernel\ndef c(bk):\n    return get_kernel('private_only', bk)\n",
        "kbackends/__main__.py": "from kbackends import get_kernel\nget_kernel('private_only')\n",
    })
    assert unreached_kernel_ops(Project(root)) == ["kbackends/kernels/fam: named_only",
                                                   "kbackends/kernels/fam: private_only"]
    assert is_public("kbackends.ops.rff") and is_public("kbackends.random")
    assert not is_public("kbackends._backend") and not is_public("kbackends.kernels.rff")
    assert not is_public("kbackends.__main__") and not is_public("algorithms.dsg")


def test_the_kernel_rule_reports_an_op_name_it_cannot_read_and_an_empty_family(tmp_path):
    root = plant(tmp_path, {
        "kbackends/kernels/fam/__init__.py": "from ..._registry import register_kernel\n"
                                              "OPS = ['x']\nfor op in OPS:\n    register_kernel(op, 'xp', 'm:x')\n",
        "kbackends/kernels/idle/__init__.py": '"""A family folder that registers nothing."""\n',
    })
    assert unreached_kernel_ops(Project(root)) == ["kbackends/kernels/fam/__init__.py:4: an op name not written out",
                                                   "kbackends/kernels/idle: registers no op"]


def test_the_private_import_rule_sees_a_planted_import(tmp_path):
    lines = {
        "from kbackends._xp_utils import to_numpy": True,
        "def f():\n    from kbackends.kernels.rff._xp import rff_predict": True,
        "import kbackends.kernels._cuda_launch as launch": True,
        "from kbackends.ops import _checks": True,
        "from kbackends import _registry": True,
        "from kbackends import to_numpy, resolve": False,
        "from kbackends.testing import oracle": False,
        "from kbackends.__main__ import main": False,
        "from kbackends.ops import rff_predict": False,
        "from ._helpers import _private": False,  # the tests' own private helpers
    }
    for i, (line, private) in enumerate(lines.items()):
        root = plant(tmp_path / str(i), {"tests/test_x.py": line + "\n"})
        assert bool(private_kbackends_imports(Project(root, ("tests",)))) is private, line


def test_the_function_import_rule_wants_a_reason(tmp_path):
    root = plant(tmp_path, {
        "kbackends/__init__.py": "",
        "kbackends/b.py": "",
        "kbackends/a.py": """
            def silent():
                from . import b  # noqa: PLC0415
                return b

            def explained():
                # lazy: b compiles kernels on import
                from . import b
                from .b import (  # lazy: the same
                    X,
                )
                return b, X

            def optional():
                import numba
                return numba
            """,
    })
    assert unexplained_function_imports(Project(root)) == ["kbackends/a.py:3: kbackends.b"]
