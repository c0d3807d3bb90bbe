"""Aggregates: tuples, block pointers and tensor descriptors.

A tuple, a block pointer (kl.make_block_ptr) or a tensor descriptor
(kl.make_tensor_descriptor) is a tree whose leaves are
tensors and compile-time values. Where the IR needs a flat list of values
(loop-carried variables, if results, helper arguments and results), the
frontend passes the tree's tensors, depth first, and rebuilds the tree from
a template on the other side; compile-time leaves stay in the template.
"""

from __future__ import annotations

import ast
from typing import Any, Callable, Iterator, Optional, Sequence

from kiln.compiler.specialization import is_named_tuple_class
from kiln.language import core, semantic
from kiln.language.block_pointer import block_pointer
# (Imported from the module: the package exports the class under the module's name.)
from kiln.language.tensor_descriptor import tensor_descriptor
from kiln.language.core import tensor

from kiln.compiler.frontend.helpers import _unwrap, _is_runtime, _constexpr_key, _OneBranchOnly


# Frontend values with runtime fields: they define runtime_fields,
# with_runtime_fields and static_key.
_RECORDS = (block_pointer, tensor_descriptor)


def _is_aggregate(value: Any) -> bool:
    return isinstance(value, (tuple,) + _RECORDS)


def _children(value: Any) -> tuple:
    return value.runtime_fields if isinstance(value, _RECORDS) else value


def _with_children(value: Any, children: Sequence[Any]) -> Any:
    if isinstance(value, _RECORDS):
        return value.with_runtime_fields(tuple(children))
    return _tuple_like(type(value), children)


def _tuple_like(cls: type, children: Sequence[Any]) -> tuple:
    """A tuple of ``children`` of class ``cls``: a named tuple keeps its class
    (and so its field names); any other tuple becomes a plain one."""
    return cls(*children) if is_named_tuple_class(cls) else tuple(children)


def _leaves(value: Any) -> list[tensor]:
    """The tensors of `value`, depth first."""
    if isinstance(value, tensor):
        return [value]
    if _is_aggregate(value):
        return [leaf for child in _children(value) for leaf in _leaves(child)]
    return []


def _rebuild(template: Any, handles: Iterator[Any]) -> Any:
    """`template` with each tensor replaced by the next of `handles` (an IR
    value of the same type)."""
    if isinstance(template, tensor):
        return tensor(next(handles), template.type)
    if _is_aggregate(template):
        return _with_children(template, [_rebuild(child, handles) for child in _children(template)])
    return template


def _same_constant(a: Any, b: Any) -> bool:
    """Whether two branches' values are one compile-time value (of one
    type), which then needs no if result."""
    return not _is_runtime(a) and not _is_runtime(b) and type(a) is type(b) and a == b


def _describe(value: Any) -> str:
    if isinstance(value, block_pointer):
        return f"a block pointer with block shape {list(value.block_shape)}"
    if isinstance(value, tensor_descriptor):
        return f"a tensor descriptor with block shape {list(value.block_shape)}"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    if isinstance(value, tensor):
        return f"a value of type {value.type}"
    return f"the compile-time value {value!r}"


def _aggregate_key(value: Any) -> str:
    """A symbol-safe key of an aggregate argument: its structure, leaf types
    and compile-time leaves (helpers are specialized on all three)."""
    if isinstance(value, tensor):
        return core.signature_name(value.type)
    if isinstance(value, block_pointer):
        inner = "_".join(_aggregate_key(c) for c in _children(value))
        static = "_".join(str(d) for d in value.block_shape + value.order)
        return f"B{static}_{inner}_E"
    if isinstance(value, tensor_descriptor):
        inner = "_".join(_aggregate_key(c) for c in _children(value))
        static = "_".join(str(d) for d in value.block_shape)
        return f"D{static}_{value.padding}_{inner}_E"
    if isinstance(value, tuple):
        # A named tuple's class is part of the key: its fields are read by name.
        name = _constexpr_key(type(value)) if is_named_tuple_class(type(value)) else ""
        return "T" + name + "".join(f"_{_aggregate_key(c)}" for c in value) + "_E"
    return _constexpr_key(value)


class _AggregateMixin:
    """The code generator's handling of aggregates (mixed into CodeGenerator)."""

    def _materialize(self, value: Any, node: ast.AST) -> Any:
        """`value` with its Python int and float leaves made tensors (the
        form in which aggregates cross region and function boundaries)."""
        value = _unwrap(value)
        if _is_aggregate(value):
            return _with_children(value, [self._materialize(c, node) for c in _children(value)])
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return self._run(node, lambda: semantic.to_tensor(value, self.builder))
        return value

    def _pair_leaves(self, name: str, a: Any, b: Any, node: ast.AST,
                     pairs: list[tuple[Any, Any]]) -> Callable[[Iterator[Any]], Any]:
        """Walks two values of variable `name` (an if's two branches, or a
        loop's initial and final value) together, appending their leaves to
        `pairs`; returns what rebuilds the aggregate from one value per pair."""
        a, b = _unwrap(a), _unwrap(b)
        if not _is_aggregate(a) and not _is_aggregate(b):
            pairs.append((a, b))
            return lambda values: next(values)
        if type(a) is not type(b):
            raise self.error(f"'{name}' holds {_describe(a)} in one place and {_describe(b)} in another; it must "
                             f"keep one kind of value", node)
        if isinstance(a, tuple) and len(a) != len(b):
            raise self.error(f"'{name}' holds tuples of {len(a)} and of {len(b)} values; their lengths must agree",
                             node)
        if isinstance(a, block_pointer) and a.static_key != b.static_key:
            raise self.error(f"'{name}' holds block pointers of different element types, block shapes or orders: "
                             f"{a!r} and {b!r}", node)
        if isinstance(a, tensor_descriptor) and a.static_key != b.static_key:
            raise self.error(f"'{name}' holds tensor descriptors of different element types, block shapes or "
                             f"paddings: {a!r} and {b!r}", node)
        rebuilders = [self._pair_leaves(name, x, y, node, pairs) for x, y in zip(_children(a), _children(b))]
        return lambda values: _with_children(a, [rebuild(values) for rebuild in rebuilders])

    def _loop_leaf(self, name: str, init: Any, value: Any, node: ast.stmt) -> Optional[tensor]:
        """The value to yield for one leaf of loop-carried `name` (None for a
        compile-time leaf, which must not change)."""
        if isinstance(value, _OneBranchOnly):
            raise self.error(f"loop-carried variable '{name}' is assigned in only one branch of an if", node)
        if not isinstance(init, tensor):
            if _is_runtime(value) or type(value) is not type(init) or value != init:
                raise self.error(f"'{name}' holds the compile-time value {init!r} before the loop but "
                                 f"{_describe(value)} at the end of the body; compile-time parts of a "
                                 f"loop-carried value must not change", node)
            return None
        if not _is_runtime(value):
            value = self._run(node, lambda: semantic.cast(semantic._literal_like(value, init, self.builder),
                                                          init.dtype, self.builder))
        if value.type != init.type:
            raise self.error(f"loop-carried variable '{name}' has type {init.type} before the loop but "
                             f"{value.type} at the end of the body; its type must not change", node)
        return value

    def _aggregate_yields(self, name: str, init: Any, value: Any, node: ast.stmt) -> list[tensor]:
        pairs: list[tuple[Any, Any]] = []
        self._pair_leaves(name, init, value, node, pairs)
        return [y for y in (self._loop_leaf(name, i, v, node) for i, v in pairs) if y is not None]
