"""The package layout (ARCHITECTURE.md, "Layers"): four layers, every import pointing down, no circles,
one public home per name, small documented modules."""

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vqalib"
MAX_LINES = 500
# a layer may import the layers at or below its rank; papers rank alike but are separate (see below)
RANK = {"core": 0, "papers": 1, "runner": 2, "compendium": 3}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _resolve(target: str, known: set[str]) -> str | None:
    """The vqalib module an imported dotted name belongs to (``vqalib.core.io.write_atomic`` -> ``vqalib.core.io``)."""
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def import_edges(modules: dict[str, Path]) -> list[tuple[str, str, int]]:
    """Every import of a vqalib module by a vqalib module: every Import / ImportFrom node of the AST,
    at module level or inside a function (lazy), relative imports resolved; (importer, imported, line)."""
    known = set(modules)
    edges = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] or [base]
            else:
                continue
            for target in targets:
                found = _resolve(target, known) if target.startswith("vqalib") else None
                if found and found != name:
                    edges.append((name, found, node.lineno))
    return edges


def layer(module: str) -> str:
    """``core``, ``papers``, ``runner``, ``compendium``, or ``top`` (the package itself and ``__main__``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else "top"


def paper(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "papers" else None


def upward_imports(modules: dict[str, Path]) -> list[str]:
    """Imports from a lower layer to a higher one, and from one paper to another that its docstring does not
    declare (ARCHITECTURE.md, "Layers")."""
    bad = []
    for importer, imported, line in import_edges(modules):
        a, b = layer(importer), layer(imported)
        where = f"{importer}:{line} -> {imported}"
        if a == "top":
            if importer == "vqalib" or b not in ("compendium", "top"):
                bad.append(where)  # the package imports nothing; __main__ only the command
        elif b == "top" or RANK[b] > RANK[a]:
            bad.append(where)
        elif a == b == "papers" and paper(importer) and paper(imported) and paper(importer) != paper(imported):
            doc = ast.get_docstring(ast.parse(modules[importer].read_text(encoding="utf-8"))) or ""
            if imported not in doc:
                bad.append(where + " (another paper, not declared in the docstring)")
    return bad


def import_cycles(modules: dict[str, Path]) -> list[list[str]]:
    """Circles in the graph of every import (lazy ones too); importing a module imports its parent packages."""
    graph = {name: set() for name in modules}
    for importer, imported, _ in import_edges(modules):
        graph[importer].add(imported)
    for name in graph:
        graph[name] |= {p for p in (name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)) if p in graph}
        graph[name].discard(name)
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    return cycles


def test_every_import_points_down_the_layers():
    modules = _modules()
    assert len(import_edges(modules)) > 300  # the walk sees the imports (lazy ones too)
    assert upward_imports(modules) == []


def test_the_walk_sees_lazy_and_relative_imports(tmp_path):
    package = tmp_path / "vqalib"
    (package / "core").mkdir(parents=True)
    (package / "papers" / "a").mkdir(parents=True)
    (package / "__init__.py").write_text('"""p."""\n')
    (package / "core" / "__init__.py").write_text('"""c."""\n')
    (package / "core" / "x.py").write_text('"""x."""\ndef f():\n    from vqalib.papers.a import y\n')
    (package / "papers" / "__init__.py").write_text('"""p."""\n')
    (package / "papers" / "a" / "__init__.py").write_text('"""a."""\n')
    (package / "papers" / "a" / "y.py").write_text('"""y."""\nfrom ...core import x\n')
    modules = {"vqalib": package / "__init__.py", "vqalib.core": package / "core" / "__init__.py",
               "vqalib.core.x": package / "core" / "x.py", "vqalib.papers": package / "papers" / "__init__.py",
               "vqalib.papers.a": package / "papers" / "a" / "__init__.py",
               "vqalib.papers.a.y": package / "papers" / "a" / "y.py"}
    assert [b.split(":")[0] for b in upward_imports(modules)] == ["vqalib.core.x"]
    assert ["vqalib.core.x", "vqalib.papers.a.y", "vqalib.core.x"] in import_cycles(modules)


def test_no_import_cycles():
    assert import_cycles(_modules()) == []


def test_core_is_paper_free():
    """No core module imports a paper, the runner or a tool (also checked above), nor names a paper's module."""
    for name, path in _modules().items():
        if layer(name) == "core":
            assert "vqalib.papers." not in "".join(
                line for line in path.read_text(encoding="utf-8").splitlines() if re.match(r"\s*(from|import) ", line)
            ), name


PAPER_NAMES = re.compile(r"vizwiz|commvqa|afgv|huh et al", re.IGNORECASE)


def test_core_names_no_paper():
    """The paper-free layer names no paper in code, strings, comments or data files: papers declare themselves."""
    named = [f"{path.relative_to(ROOT)}:{number}" for path in sorted((PACKAGE / "core").rglob("*"))
             if path.is_file() and path.suffix in (".py", ".json", ".toml")
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if PAPER_NAMES.search(line)]
    assert not named, f"paper names in vqalib/core: {named[:20]}"


def test_only_defining_modules_at_the_top():
    """No re-export modules: the package's top level holds only ``__init__`` and ``__main__``."""
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]
    facades = ("metrics", "datasets", "taxonomy", "stats", "vqa", "classify", "judge", "report", "plots", "afgv",
               "commvqa", "registry", "contract", "config", "encoders")
    pattern = re.compile(r"from vqalib import (" + "|".join(facades) + r")\b|import vqalib\.(" + "|".join(facades) + r")\b")
    for path in [*ROOT.glob("vqalib/**/*.py"), *ROOT.glob("tests/*.py"), *ROOT.glob("benchmarks/*.py"),
                 *ROOT.glob("notebooks/*.ipynb")]:
        assert not pattern.search(path.read_text(encoding="utf-8")), path


def test_every_public_name_has_one_home():
    """A module's public names are those it defines; importing a name from another vqalib module binds it only
    for use (never listed in ``__all__``), so no name is offered by two modules."""
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exported = [n for n in tree.body if isinstance(n, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
        assert not exported, f"{name} declares __all__ (re-export)"


def test_no_module_over_500_lines():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_the_layers_exist_and_every_module_says_what_it_serves():
    modules = _modules()
    for name in ("vqalib.core", "vqalib.papers", "vqalib.runner", "vqalib.compendium", "vqalib.papers.vizwiz_lf",
                 "vqalib.papers.commvqa", "vqalib.papers.afgv", "vqalib.compendium.cli"):
        assert name in modules
    missing = [n for n, p in modules.items() if not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))]
    assert not missing, f"modules without a docstring: {missing}"


DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
CLI_MODULES = {"vqalib.compendium.cli", "vqalib.runner.cli", "vqalib.__main__"}


def _unit(module: str) -> str:
    """A layer, or for the papers layer one paper's package."""
    return ".".join(module.split(".")[:3]) if layer(module) == "papers" else layer(module)


def _uses(tree: ast.AST, package: str, known: set[str]) -> set[tuple[str, str]]:
    """The (module, name) pairs a file uses: names imported from a module, attributes of an imported module."""
    alias, out = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            alias.update({a.asname or a.name: a.name for a in node.names if a.name in known})
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for a in node.names:
                if f"{base}.{a.name}" in known:
                    alias[a.asname or a.name] = f"{base}.{a.name}"
                elif base in known:
                    out.add((base, a.name))
    for node in ast.walk(tree):
        chain, n = [], node
        while isinstance(n, ast.Attribute):
            chain.append(n.attr)
            n = n.value
        if chain and isinstance(n, ast.Name) and n.id in alias:
            chain = [n.id, *reversed(chain)]
            for i in range(len(chain) - 1, 0, -1):
                if (module := ".".join([alias[chain[0]], *chain[1:i]])) in known:
                    out.add((module, chain[i]))
                    break
    return out


def public_api() -> set[tuple[str, str]]:
    """The package's public API: the (module, top-level name) pairs that notebooks, the command-line modules, another
    layer or another paper use, or that a dotted string names (a registry builder, an entry point)."""
    modules = _modules()
    known = set(modules)
    found = set()

    def named(text: str) -> None:
        for dotted in re.findall(r"vqalib(?:[.:]\w+)+", text):
            dotted = dotted.replace(":", ".")
            if (module := _resolve(dotted, known)) and module != dotted:
                found.add((module, dotted[len(module) + 1:].split(".")[0]))

    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found |= {(m, a) for m, a in _uses(tree, package, known) if name in CLI_MODULES or _unit(name) != _unit(m)}
        docstrings = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, DOCUMENTED) and n.body
                      and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):  # dotted names in strings the code uses (not in docstrings)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                named(node.value)
    for path in [*PACKAGE.glob("papers/*/declarations.toml"), ROOT / "pyproject.toml"]:
        named(path.read_text(encoding="utf-8"))
    for path in ROOT.glob("notebooks/*.ipynb"):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join(line for c in cells if c["cell_type"] == "code" for line in "".join(c["source"]).splitlines()
                         if not line.lstrip().startswith(("%", "!")))
        found |= _uses(ast.parse(code), "", known)
    return found


def _api_functions(module: str, path: Path, api: set[tuple[str, str]]):
    """(name, takes parameters, docstring) of each public function or method of the public API in one module."""
    def visit(body, prefix, in_class):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                args = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
                if in_class and args and args[0] in ("self", "cls"):
                    args = args[1:]
                args += [a.arg for a in (node.args.vararg, node.args.kwarg) if a]
                if any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list):
                    args = []
                yield prefix + node.name, bool(args), ast.get_docstring(node) or ""
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                yield from visit(node.body, prefix + node.name + ".", True)

    tree = ast.parse(path.read_text(encoding="utf-8"))
    yield from visit([n for n in tree.body if (module, getattr(n, "name", "")) in api], "", False)


def test_public_api_documents_its_parameters():
    """numpydoc ``Parameters`` on every function or method of the public API (what notebooks, the command line,
    other layers and other papers call) that takes parameters; an internal helper needs only a concise docstring."""
    api = public_api()
    assert ("vqalib.core.report", "save") in api and ("vqalib.compendium.cli", "main") in api  # the walk sees them
    missing = [f"{path.relative_to(ROOT)}:{name}" for module, path in sorted(_modules().items())
               for name, has_parameters, doc in _api_functions(module, path, api)
               if has_parameters and not re.search(r"\n\s*Parameters\n\s*-{3,}", "\n" + doc)]
    assert not missing, f"{len(missing)} public functions without a Parameters section: {missing[:20]}"


@pytest.mark.parametrize("folder", ["vqalib", "tests", "benchmarks", "notebooks"])
def test_no_tracker_references(folder):
    """Code and docs say what and why: no pointer to a tracker entry or a design file outside the repository."""
    pattern = re.compile(r"\bissues? #?\d+|DESIGN\.md", re.IGNORECASE)
    hits = [f"{p.relative_to(ROOT)}" for p in (ROOT / folder).rglob("*")
            if p.suffix in (".py", ".ipynb", ".md", ".json") and ".ipynb_checkpoints" not in p.parts
            and pattern.search(p.read_text(encoding="utf-8"))]
    assert not hits


MAX_DOC_SHARE = 0.30  # docstring lines over all lines of the package
MAX_HELPER_DOC = 3  # lines of a private helper's docstring


def _docstring_nodes(tree: ast.AST):
    for node in ast.walk(tree):
        if (isinstance(node, DOCUMENTED) and node.body and isinstance(node.body[0], ast.Expr)
                and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str)):
            yield node, node.body[0]


def test_docstrings_are_concise():
    """Docstrings at most 30% of the package's lines, and a private helper's one to three lines."""
    total = documented = 0
    long_helpers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        total += len(text.splitlines())
        for node, doc in _docstring_nodes(ast.parse(text)):
            documented += doc.end_lineno - doc.lineno + 1
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("_")
                    and not node.name.startswith("__") and doc.end_lineno - doc.lineno + 1 > MAX_HELPER_DOC):
                long_helpers.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert documented / total <= MAX_DOC_SHARE, f"docstrings are {documented / total:.1%} of the package's {total} lines"
    assert not long_helpers, f"private helpers with docstrings over {MAX_HELPER_DOC} lines: {long_helpers[:20]}"
