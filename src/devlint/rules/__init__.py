"""The rule registry: one module per rule, each exposing a `rule` object."""

from __future__ import annotations

import importlib
from functools import lru_cache

from devlint.rules.base import Rule

_RULE_MODULES = (
    "parse_error",
    "unused_suppression",
    "unmoved_input",
    "unmoved_module",
    "discarded_to",
    "to_on_non_tensor",
    "module_outside_tree",
    "unregistered_tensor",
    "factory_without_device",
    "changed_after_move",
    "optimizer_before_move",
    "inconsistent_devices",
    "dataparallel_device",
    "load_without_map_location",
    "unguarded_cuda",
    "late_visible_devices",
    "non_blocking_without_pinning",
    "empty_cache_in_loop",
    "tensor_rebuilt_each_step",
    "host_op_on_device_tensor",
    "cuda_in_worker",
    "dispatched_model_moved",
)


@lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    """Every rule, in code order."""
    rules = [importlib.import_module(f"devlint.rules.{name}").rule for name in _RULE_MODULES]
    return tuple(sorted(rules, key=lambda r: r.code))


def rule_by_code(code: str) -> Rule | None:
    return {r.code: r for r in all_rules()}.get(code.upper())
