"""Which names a program reads where they are not bound: the check that keeps fixes honest.

A fix that writes a name (`map_location=device`, `labels = labels.to(device)`) must write one
that exists there, in that scope, when that line runs: otherwise the fixed program raises
`NameError` or `UnboundLocalError` where the original ran. This is a check of our own over the
whole file, on Python's `ast` (a parse an order of magnitude cheaper than libcst's), in the
manner of pyflakes:

- `unbound_reads(text)` counts, per scope and name, the reads that may find the name unbound;
  the fixer compares the counts before and after a fix and refuses a fix that adds one, so
  whatever the check cannot judge (the same in both texts) cancels out;
- `readable(text, line, name)` says whether `name` is bound where line `line` runs, and
  `bindings(text, line, name)` what is assigned to it in the scope that resolves it there (a
  repair asks whether a name holds a device before it writes it).

The order is the text's: a name is bound where a binding precedes the read in its scope (on
some path: both arms of an `if` count), a loop's body sees what the loop binds anywhere (the
next iteration), a function's body sees every global of its module (it runs later), and a
module with `from x import *` binds every name. Annotations are not read (they may be lazy).
"""

from __future__ import annotations

import ast
import builtins
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

_BUILTINS = frozenset(dir(builtins)) | {
    "__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__",
    "__path__", "__annotations__", "__dict__", "__qualname__", "__module__", "__debug__", "__cached__",
    "__class__", "WindowsError", "reveal_type",
}
PARAM = "parameter"  # what `bindings` gives for a name bound as a parameter


@dataclass
class _Scope:
    kind: str  # module, function, class, comprehension
    name: str
    parent: "_Scope | None"
    local: set[str] = field(default_factory=set)  # bound anywhere in the scope
    bound: set[str] = field(default_factory=set)  # bound so far, in the text's order
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    star: bool = False
    # name -> what is assigned to it in this scope (an expression, or a marker string)
    values: dict[str, list] = field(default_factory=dict)


def _targets(node: ast.AST) -> list[str]:
    """Names a target binds (`a, (b, *c)` binds a, b, c; `x.y` and `x[i]` bind nothing)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [name for element in node.elts for name in _targets(element)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


class _Locals(ast.NodeVisitor):
    """Every name a scope binds (Python's rule: bound anywhere in the body makes it local)."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()
        self.star = False

    def scan(self, body: list[ast.stmt]) -> "_Locals":
        for stmt in body:
            self.visit(stmt)
        return self

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self.names.add(node.id)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.names.add(node.name)
        for expr in [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
            self.visit(expr)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.names.add(node.name)
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expr)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for expr in [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
            self.visit(expr)

    def _comprehension(self, node: ast.AST) -> None:
        # only a walrus inside binds in this scope; the first iterable is read here
        for inner in ast.walk(node):
            if isinstance(inner, ast.NamedExpr):
                self.names.update(_targets(inner.target))
        self.visit(node.generators[0].iter)  # type: ignore[attr-defined]

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.names.add(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                self.star = True
            else:
                self.names.add(alias.asname or alias.name)

    def visit_Global(self, node: ast.Global) -> None:
        self.declared_global.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.declared_nonlocal.update(node.names)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.names.add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self.names.add(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self.names.add(node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self.names.add(node.rest)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.names.update(_targets(node.target))
        if node.value is not None:
            self.visit(node.value)


class _Checker(ast.NodeVisitor):
    """Walks the module in the text's order, scope by scope, counting reads of unbound names;
    with a probe (line, name), also whether the name is bound where that line runs."""

    def __init__(self, probe: tuple[int, str] | None = None) -> None:
        self.unbound: Counter[tuple[str, str]] = Counter()
        self.scope: _Scope = _Scope("module", "<module>", None)
        self.module = self.scope
        self.deferred = 0  # > 0 inside a function body: module globals are all bound by then
        self.probe = probe
        self.answer: tuple[bool, list, bool] | None = None

    # --- scopes ---------------------------------------------------------------------------

    def run(self, tree: ast.Module) -> "_Checker":
        found = _Locals().scan(tree.body)
        self.module.local = found.names | self._globals_declared(tree)
        self.module.star = found.star
        self._body(tree.body)
        return self

    @staticmethod
    def _globals_declared(tree: ast.Module) -> set[str]:
        """Names a function binds at module level through `global`."""
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                names.update(node.names)
        return names

    def _enter(self, kind: str, name: str, body: list, params: list[str]) -> _Scope:
        found = _Locals().scan(body) if kind != "comprehension" else _Locals()
        scope = _Scope(kind, f"{self.scope.name}.{name}", self.scope,
                       local=(found.names | set(params)) - found.declared_global - found.declared_nonlocal,
                       declared_global=found.declared_global, declared_nonlocal=found.declared_nonlocal,
                       star=found.star)
        scope.bound.update(params)
        for param in params:
            scope.values.setdefault(param, []).append(PARAM)
        return scope

    def _resolve(self, name: str) -> tuple[bool, list]:
        """(bound here, what the resolving scope assigns to it)."""
        scope = self.scope
        if name in scope.declared_global:
            return self._global(name)
        if scope.kind != "module" and name in scope.local:
            return name in scope.bound, scope.values.get(name, [])
        if scope.kind == "class" and name in scope.bound:
            return True, scope.values.get(name, [])
        outer = scope.parent
        while outer is not None and outer.kind != "module":
            if outer.kind != "class" and (name in outer.local or outer.star):
                return True, outer.values.get(name, [])  # a closure: bound by the time it is called
            outer = outer.parent
        return self._global(name)

    def _global(self, name: str) -> tuple[bool, list]:
        module = self.module
        values = module.values.get(name, [])
        if name in module.bound or (self.deferred and name in module.local):
            return True, values
        if name in _BUILTINS or module.star:
            return True, values
        return False, values

    def _read(self, name: str) -> None:
        if not self._resolve(name)[0]:
            self.unbound[(self.scope.name, name)] += 1

    def _bind(self, names: list[str], value: object = None) -> None:
        scope = self.scope
        while scope.kind == "comprehension" and value == "walrus":
            scope = scope.parent  # type: ignore[assignment]
        for name in names:
            target = self.module if name in scope.declared_global else scope
            target.bound.add(name)
            target.values.setdefault(name, []).append(value)

    # --- statements -----------------------------------------------------------------------

    def _body(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if self.probe is not None and stmt.lineno <= self.probe[0] <= (stmt.end_lineno or stmt.lineno):
                bound, values = self._resolve(self.probe[1])
                scope = self.scope
                local = scope.kind != "function" or (self.probe[1] in scope.local
                                                     and self.probe[1] not in scope.declared_global)
                self.answer = (bound, values, local)
            self.visit(stmt)

    def _loop_binds(self, node: ast.AST) -> None:
        """A loop's body runs again: what it binds anywhere is bound at its top."""
        found = _Locals()
        for part in ("target", "body", "orelse"):
            value = getattr(node, part, None)
            if isinstance(value, list):
                found.scan(value)
            elif value is not None:
                found.visit(value)
        self._bind(sorted(found.names - self.scope.declared_nonlocal), "loop")

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for expr in [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
            self.visit(expr)
        args = node.args
        params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
        params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        outer = self.scope
        self.scope = self._enter("function", node.name, node.body, params)
        self.deferred += 1
        self._body(node.body)
        self.deferred -= 1
        self.scope = outer
        self._bind([node.name], "def")

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for expr in [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
            self.visit(expr)
        args = node.args
        params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
        params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        outer = self.scope
        self.scope = self._enter("function", "<lambda>", [ast.Expr(node.body)], params)
        self.deferred += 1
        self.visit(node.body)
        self.deferred -= 1
        self.scope = outer

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expr)
        outer = self.scope
        self.scope = self._enter("class", node.name, node.body, [])
        self._body(node.body)
        self.scope = outer
        self._bind([node.name], "class")

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._target(target, node.value if isinstance(target, ast.Name) else "unpacked")

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._target(node.target, node.value)
        elif not isinstance(node.target, ast.Name):
            self.visit(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self._read(node.target.id)
            self._bind([node.target.id], "augmented")
        else:
            self.visit(node.target)

    def _target(self, target: ast.AST, value: object) -> None:
        """Bind a target; what it reads (`x.y = ...` reads x, `a[i] = ...` reads a and i) first."""
        if isinstance(target, ast.Name):
            self._bind([target.id], value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(element, "unpacked")
        elif isinstance(target, ast.Starred):
            self._target(target.value, "unpacked")
        else:
            self.visit(target)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self._loop_binds(node)
        self._target(node.target, "loop")
        self._body(node.body)
        self._body(node.orelse)

    visit_AsyncFor = visit_For

    def visit_While(self, node: ast.While) -> None:
        self._loop_binds(node)
        self.visit(node.test)
        self._body(node.body)
        self._body(node.orelse)

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self._body(node.body)
        self._body(node.orelse)

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._target(item.optional_vars, "with")
        self._body(node.body)

    visit_AsyncWith = visit_With

    def visit_Try(self, node: ast.Try) -> None:
        self._body(node.body)
        for handler in node.handlers:
            if handler.type is not None:
                self.visit(handler.type)
            if handler.name:
                self._bind([handler.name], "except")
            self._body(handler.body)
        self._body(node.orelse)
        self._body(node.finalbody)

    visit_TryStar = visit_Try

    def visit_Match(self, node: ast.AST) -> None:
        self.visit(node.subject)  # type: ignore[attr-defined]
        for case in node.cases:  # type: ignore[attr-defined]
            found = _Locals()
            found.visit(case.pattern)
            for inner in ast.walk(case.pattern):
                if isinstance(inner, (ast.MatchValue,)):
                    self.visit(inner.value)
            self._bind(sorted(found.names), "match")
            if case.guard is not None:
                self.visit(case.guard)
            self._body(case.body)

    def visit_Import(self, node: ast.Import) -> None:
        self._bind([alias.asname or alias.name.split(".")[0] for alias in node.names], "import")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self._bind([alias.asname or alias.name for alias in node.names if alias.name != "*"], "import")

    def visit_Global(self, node: ast.Global) -> None:
        return None

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        return None

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if not isinstance(target, ast.Name):
                self.visit(target)

    # --- expressions ----------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._read(node.id)
        else:
            self._bind([node.id], "bound")

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._bind(_targets(node.target), "walrus")

    def _comprehension(self, node: ast.AST) -> None:
        generators = node.generators  # type: ignore[attr-defined]
        self.visit(generators[0].iter)
        outer = self.scope
        self.scope = self._enter("comprehension", "<comprehension>", [], [])
        for index, generator in enumerate(generators):
            if index:
                self.visit(generator.iter)
            self.scope.local.update(_targets(generator.target))
            self._target(generator.target, "loop")
            for test in generator.ifs:
                self.visit(test)
        for part in ("elt", "key", "value"):
            if getattr(node, part, None) is not None:
                self.visit(getattr(node, part))
        self.scope = outer

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_arg(self, node: ast.arg) -> None:
        return None  # annotations are not read (they may be lazy)


@lru_cache(maxsize=64)
def _tree(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@lru_cache(maxsize=64)
def unbound_reads(text: str) -> Counter[tuple[str, str]] | None:
    """(scope, name) -> how many reads may find the name unbound; None when `ast` cannot
    parse the text (then nothing can be judged)."""
    tree = _tree(text)
    if tree is None:
        return None
    try:
        return _Checker().run(tree).unbound
    except RecursionError:
        return None


def gained(before: Counter | None, after: Counter | None) -> list[str]:
    """Names read unbound more often after than before (a fix that adds one breaks the program)."""
    if after is None:
        return [] if before is None else ["<the fixed source does not compile>"]
    if before is None:
        return []
    return sorted({name for (scope, name), count in after.items() if count > before.get((scope, name), 0)})


class _Sites(_Locals):
    """`_Locals`, also recording where each name is bound: (first line after which the binding
    holds, last line of its statement, what is assigned), and the line ranges of loops."""

    def __init__(self) -> None:
        super().__init__()
        self.sites: dict[str, list[tuple[int, object]]] = {}
        self.loops: list[tuple[int, int, set[str]]] = []
        self._after = 0

    def _site(self, names: list[str], value: object) -> None:
        for name in names:
            self.names.add(name)
            self.sites.setdefault(name, []).append((self._after, value))

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.stmt):
            self._after = node.end_lineno or node.lineno
        super().visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._site(_targets(target), node.value if isinstance(target, ast.Name) else "unpacked")
            if not isinstance(target, ast.Name):
                self.generic_visit(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._site(_targets(node.target), node.value)

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self._site([node.id], "bound")

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        inner = _Locals()
        for part in (getattr(node, "target", None), *node.body, *node.orelse):
            if part is not None:
                inner.visit(part)
        self.loops.append((node.lineno, node.end_lineno or node.lineno, inner.names))
        header = node.iter if not isinstance(node, ast.While) else node.test
        self._after = header.end_lineno or node.lineno
        self.generic_visit(node)

    visit_For = visit_AsyncFor = visit_While = _loop

    def _header(self, node: ast.AST) -> None:
        self._after = node.lineno  # type: ignore[attr-defined]
        self.generic_visit(node)

    visit_With = visit_AsyncWith = _header

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._after = node.lineno
        if node.name:
            self._site([node.name], "except")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._site([node.name], "def")

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        super().visit_ClassDef(node)
        self._site([node.name], "class")

    def visit_Import(self, node: ast.Import) -> None:
        self._site([alias.asname or alias.name.split(".")[0] for alias in node.names], "import")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        super().visit_ImportFrom(node)
        self._site([alias.asname or alias.name for alias in node.names if alias.name != "*"], "import")


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _chain(tree: ast.Module, line: int) -> list[ast.AST]:
    """The module, then each function or class whose body holds `line`, outermost first."""
    chain: list[ast.AST] = [tree]
    body: list = tree.body
    while True:
        found = None
        stack = list(body)
        while stack:
            node = stack.pop()
            if not isinstance(node, ast.stmt) or not node.lineno <= line <= (node.end_lineno or node.lineno):
                continue
            if isinstance(node, _SCOPES):
                if node.body and node.body[0].lineno <= line:
                    found = node
                break
            for part in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(node, part, None) or []:
                    stack.extend(child.body if isinstance(child, (ast.ExceptHandler, ast.match_case)) else [child])
        if found is None:
            return chain
        chain.append(found)
        body = found.body


@lru_cache(maxsize=8)
def _index(text: str) -> "_Index | None":
    tree = _tree(text)
    return _Index(tree) if tree is not None else None


class _Index:
    """The bindings of each scope of one file, read when a probe first asks for that scope."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self._scopes: dict[int, _Sites] = {}
        self.declared_global: set[str] | None = None

    def sites(self, node: ast.AST) -> _Sites:
        found = self._scopes.get(id(node))
        if found is None:
            found = _Sites()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
                params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
                found._site(params, PARAM)
                for name in params:
                    found.sites[name][-1] = (0, PARAM)
            found.scan(node.body)  # type: ignore[attr-defined]
            self._scopes[id(node)] = found
        return found

    def module_globals(self) -> set[str]:
        if self.declared_global is None:
            self.declared_global = _Checker._globals_declared(self.tree)
        return self.declared_global


def _bound_before(sites: _Sites, name: str, line: int) -> tuple[bool, list]:
    """(a binding of `name` holds at `line` on some path, every value assigned to it)."""
    found = sites.sites.get(name, [])
    values = [value for _, value in found]
    if any(after < line for after, _ in found):
        return True, values
    looped = any(start <= line <= end and name in names for start, end, names in sites.loops)
    return looped, values


@lru_cache(maxsize=1024)
def _probe(text: str, line: int, name: str) -> tuple[bool, list, bool] | None:
    """(bound at `line`, what its resolving scope assigns to it, whether assigning it there keeps
    it in the same scope: not a global or a closure's name a function would turn local).

    Only the scopes that hold `line` are read (not the whole file, as `unbound_reads` does): a
    repair asks this for each finding of every check, fixing or not."""
    index = _index(text)
    if index is None:
        return None
    try:
        chain = _chain(index.tree, line)
        innermost = chain[-1]
        deferred = any(isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) for scope in chain)
        own = index.sites(innermost)
        function = isinstance(innermost, (ast.FunctionDef, ast.AsyncFunctionDef))
        if name not in own.declared_global and function and name in own.names - own.declared_nonlocal:
            bound, values = _bound_before(own, name, line)
            return bound, values, True
        if isinstance(innermost, ast.ClassDef):
            bound, values = _bound_before(own, name, line)
            if bound:
                return True, values, True
        if name not in own.declared_global:
            for scope in reversed(chain[1:-1]):
                if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    outer = index.sites(scope)
                    if name in outer.names or outer.star:
                        return True, [v for _, v in outer.sites.get(name, [])], not function
        module = index.sites(index.tree)
        values = [v for _, v in module.sites.get(name, [])]
        if deferred:
            bound = name in module.names or name in index.module_globals()
        else:
            bound = _bound_before(module, name, line)[0]
        bound = bound or name in _BUILTINS or module.star
        return bound, values, not function
    except RecursionError:
        return None


def readable(text: str, line: int, name: str) -> bool:
    """`name` is bound where line `line` of `text` runs (in its scope, before that line)."""
    answer = _probe(text, line, name)
    return answer is not None and answer[0]


def reassignable(text: str, line: int, name: str) -> bool:
    """`name = f(name)` may be inserted before line `line`: `name` is bound there and assigning
    it does not make a global (or an enclosing function's name) local to the function."""
    answer = _probe(text, line, name)
    return answer is not None and answer[0] and answer[2]


def bindings(text: str, line: int, name: str) -> list | None:
    """What the scope resolving `name` at `line` assigns to it (`ast` expressions; `PARAM` or
    another marker string for a parameter, an import, a loop target...); None when it is not
    bound there."""
    answer = _probe(text, line, name)
    if answer is None or not answer[0]:
        return None
    return list(answer[1])
