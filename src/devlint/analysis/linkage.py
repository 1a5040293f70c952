"""Cross-file linkage: names that resolve to what another project file defines.

`from models import Net` in `train.py` must give the class in `models.py`, so that
`Net().to(device)` is analysed with that class's own summary. A project file is interpreted at
module level once (by an analysis of its own, whose classes and globals this one then reads),
and a function of it runs in its scope (its globals and imports, not the caller's).
"""

from __future__ import annotations

import builtins
from contextlib import contextmanager
from typing import Iterator

import libcst as cst

from devlint.analysis.events import Context
from devlint.analysis.shared import Analyzer, Frame, ProjectFile, ProjectFiles, Scope
from devlint.analysis.syntax import block, is_main_guard
from devlint.analysis.placement import join
from devlint.analysis.values import NONE_VALUE, SCALAR, UNKNOWN, Kind, Value, ref
from devlint.analysis.vocabulary import bool_fact_of

_BUILTINS = frozenset(dir(builtins))
_NOT_PROJECT_ROOTS = ("torch.", "builtins.")  # never a project file
_MAX_REEXPORTS = 8  # how many re-exports in a row are followed (`__init__` -> `.models` -> ...)


def lookup(an: Analyzer, name: str, frame: Frame) -> Value:
    """The value a name has here: a variable, a global, an import, a builtin, a star import."""
    value = frame.env.get(name)
    if value is not None:
        return value
    scope = frame.scope
    if not frame.module_level:
        value = scope.env.get(name)
        if value is not None:
            return value
    qualname = scope.imports.resolve(name)
    if qualname is not None:
        return project_value(an, qualname, frame) or ref(qualname)
    if name in ("True", "False"):
        return SCALAR.with_facts(bool_fact_of(name == "True"))
    if name == "None":
        return NONE_VALUE
    if name in _BUILTINS:
        return ref(f"builtins.{name}")
    project = an.project
    if project is not None and not name.startswith("_"):
        for star in scope.facts.star_imports(scope.imports):  # `from utils import *`
            unit = project.unit(star)
            if unit is None or str(unit.path) == an.own_file:
                continue
            load_unit(an, unit)
            if name in unit_env(unit) or (unit.scope is not None and unit.scope.imports.resolve(name)):
                return project_value(an, f"{star}.{name}", frame) or UNKNOWN
    return UNKNOWN


def unit_env(unit: ProjectFile) -> dict[str, Value]:
    return unit.scope.env if unit.scope is not None else {}


def project_value(an: Analyzer, qualname: str, frame: Frame) -> Value | None:
    """The value a project module defines under `qualname` (`models.Net`), or None."""
    if an.project is None or qualname.startswith(_NOT_PROJECT_ROOTS) or not an.places_devices:
        return None
    cache = an.project_values
    if qualname in cache:
        return cache[qualname]
    value = _project_value(an, an.project, qualname, frame)
    cache[qualname] = value
    return value


def _project_value(an: Analyzer, project: ProjectFiles, qualname: str, frame: Frame) -> Value | None:
    if project.unit(qualname) is not None:
        return ref(qualname)  # a project module: `import pkg.models as m`
    found = project.resolve(qualname)
    if found is None:
        return None
    unit, name = found
    if unit.module is frame.scope.module or str(unit.path) == an.own_file:
        return None
    load_unit(an, unit)
    if name == "*":  # `registry.__dict__[name]`: one of the classes and functions the module defines
        return _one_of_members(unit_env(unit))
    head, _, rest = name.partition(".")
    value = unit_env(unit).get(head)
    if value is None and unit.scope is not None:
        # a name the module imports (a package `__init__` re-exporting `from .mlp import Net`)
        target = unit.scope.imports.resolve(name)
        if target is not None and target != qualname and _may_follow(an, target):
            with _following(an, target):
                return project_value(an, target, frame) or ref(target)
    if value is None and unit.scope is not None and not head.startswith("_"):
        # a name a package `__init__` re-exports with `from .stft_loss import *`
        for star in unit.scope.facts.star_imports(unit.scope.imports):
            target = f"{star}.{name}"
            if project.unit(star) is unit or not _may_follow(an, target):
                continue
            with _following(an, target):
                starred = project_value(an, target, frame)
            if starred is not None and starred.kind is not Kind.UNKNOWN:
                return starred
    if value is None:
        return UNKNOWN
    if rest:
        unit_frame = Frame(unit_env(unit), Context(), 0, True, unit.scope)  # type: ignore[arg-type]
        for attr in rest.split("."):
            value = an.get_attribute(value, attr, unit.module, unit_frame)
    return value


def _may_follow(an: Analyzer, target: str) -> bool:
    """A re-export may be followed unless the chain loops back or grows too long."""
    return target not in an.reexports and len(an.reexports) < _MAX_REEXPORTS


@contextmanager
def _following(an: Analyzer, target: str) -> Iterator[None]:
    an.reexports.append(target)
    try:
        yield
    finally:
        an.reexports.pop()


def _one_of_members(env: dict[str, Value]) -> Value:
    members = [v for k, v in env.items() if v.kind in (Kind.CLASS, Kind.FUNCTION) and not k.startswith("_")]
    if not members or len(members) > 8:
        return UNKNOWN
    result = members[0]
    for member in members[1:]:
        result = join(result, member)
    return result


def load_unit(an: Analyzer, unit: ProjectFile) -> None:
    """Interpret a project file's module level once, to learn what it defines."""
    an.reached.setdefault(unit.display, unit)
    if unit.scope is not None or unit.loading:
        if unit.scope is not None:
            an.classes.update(unit.classes)
            # read by an earlier check: the files it reached in turn hold nodes findings point to
            for reached in list((unit.reached or {}).values()):
                an.reached.setdefault(reached.display, reached)
        return
    unit.loading = True
    try:
        sub = an.analysis_of(unit)
        frame = Frame(sub.main_scope.env, Context(path=unit.display), 0, True, sub.main_scope)
        # imported, not run: its `if __name__ == "__main__":` block does not execute
        sub.exec_block([stmt for stmt in unit.module.body if not is_main_guard(stmt)], frame)
        unit.scope = frame.scope
        unit.scope.env = frame.env
        unit.classes = sub.classes
        unit.reached = an.reached
        assert an.project is not None  # the unit is one of its files
        definitions = an.project.definitions
        for node in unit.module.body:
            if type(node) in (cst.FunctionDef, cst.ClassDef):
                definitions[id(node)] = unit
                if type(node) is cst.ClassDef:
                    for stmt in block(node.body):
                        if type(stmt) is cst.FunctionDef:
                            definitions[id(stmt)] = unit
    except RecursionError:
        unit.scope = None
    finally:
        unit.loading = False
    if unit.scope is not None:
        an.classes.update(unit.classes)


def home_scope(an: Analyzer, fn: cst.CSTNode, frame: Frame) -> Scope | None:
    """The scope of the project file that defines `fn`, when it is not the current one."""
    if an.project is None:
        return None
    unit = an.project.definitions.get(id(fn))
    if unit is None or unit.module is frame.scope.module or unit.scope is None:
        return None
    return unit.scope
