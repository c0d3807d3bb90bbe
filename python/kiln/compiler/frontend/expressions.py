"""The code generator's expressions: names, constants, containers, operators,
attributes and subscripts."""

from __future__ import annotations

import ast
from types import ModuleType
from typing import Any

from kiln.language import core, semantic
from kiln.language.core import tensor

from kiln.compiler.frontend.helpers import _BINARY_OPS, _UNARY_SPELLINGS, _COMPARE_OPS, _unwrap, _is_runtime, _leaves_of
from kiln.compiler.frontend.aggregates import _is_aggregate, _describe


class ExpressionsMixin:
    """Expressions (mixed into CodeGenerator)."""

    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def visit_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(_unwrap(self.visit(e)) for e in node.elts)

    def visit_ListComp(self, node: ast.ListComp) -> tuple:
        """``[f(v) for v in values]`` over a tuple, as Triton's: unrolled
        while compiling, giving a tuple (its elements may be runtime
        values, which a list cannot hold)."""
        comp = node.generators[0]
        if len(node.generators) != 1 or comp.ifs or comp.is_async or not isinstance(comp.target, ast.Name):
            raise self.error("only list comprehensions of the form [expr for name in a_tuple] are supported in "
                             "kiln kernels", node)
        values = _unwrap(self.visit(comp.iter))
        if not isinstance(values, tuple):
            raise self.error(f"a list comprehension in a kiln kernel iterates over a tuple, got "
                             f"{type(values).__name__}", comp.iter)
        name = comp.target.id
        missing = object()
        saved = self.lscope.get(name, missing)
        results = []
        try:
            for value in values:
                self.lscope[name] = value
                results.append(_unwrap(self.visit(node.elt)))
        finally:
            # The loop variable is the comprehension's own, as in Python.
            if saved is missing:
                self.lscope.pop(name, None)
            else:
                self.lscope[name] = saved
        return tuple(results)

    def visit_List(self, node: ast.List) -> list:
        # Lists of constants are shapes (kl.zeros([M, N], ...)); lists of
        # runtime values have no IR equivalent.
        values = [_unwrap(self.visit(e)) for e in node.elts]
        if any(_is_runtime(v) for v in values):
            raise self.error("list literals of runtime values are not supported in kiln kernels; "
                             "only lists of constants (such as shapes) are", node)
        return values

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        base = _unwrap(self.visit(node.value))
        if node.attr == "T" and isinstance(base, tensor):
            # The transpose, as in Triton: a permutation (1, 0) of a 2-D block.
            from kiln.language import shapes
            return self._run(node, lambda: shapes.permute_impl(base, [1, 0], self.builder))
        if node.attr == "shape" and isinstance(base, tensor):
            # A tuple, as Triton's tensor.shape (x.shape == (M, N) holds).
            return tuple(base.shape)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            if node.attr == "type" and (base is None or isinstance(base, (bool, int, float, str))
                                        or (type(base) is tuple and not any(_is_runtime(v) for v in _leaves_of(base)))):
                # A compile-time value's type, as a Triton constexpr's.
                return core.constexpr_type(base)
            if isinstance(base, (bool, int, float)):
                # Triton makes a scalar assigned in a kernel (``acc = 0``) a
                # scalar tensor of its literal type, so ``acc.to(...)`` and
                # ``acc.dtype`` work; Kiln keeps the Python number (it folds
                # and stays usable where a constant is needed) and gives it
                # the tensor's attributes when Python's have none.
                scalar = self._run(node, lambda: semantic.to_tensor(base, self.builder))
                if hasattr(scalar, node.attr):
                    return getattr(scalar, node.attr)
            what = f"module '{base.__name__}'" if isinstance(base, ModuleType) else f"'{type(base).__name__}'"
            raise self.error(f"{what} has no attribute '{node.attr}'", node) from None

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        return self._binary(type(node.op), self.visit(node.left), self.visit(node.right), node)

    def _binary(self, op: type, lhs: Any, rhs: Any, node: ast.AST) -> Any:
        if op not in _BINARY_OPS:
            raise self.error(f"the operator {op.__name__} is not supported in kiln kernels", node)
        name, python_op = _BINARY_OPS[op]
        lhs, rhs = _unwrap(lhs), _unwrap(rhs)
        if not _is_runtime(lhs) and not _is_runtime(rhs):
            return python_op(lhs, rhs)
        if op is ast.Pow:
            if _is_runtime(rhs) or not _is_runtime(lhs):
                raise self.error("** needs a runtime base and a non-negative constant (kl.constexpr) integer "
                                 "exponent; use kl.exp and kl.log for other powers", node)
            return self._run(node, lambda: semantic.power(lhs, rhs, self.builder))
        if self.under_element_condition and op in (ast.FloorDiv, ast.Mod) and isinstance(rhs, tensor) \
                and rhs.dtype.scalar.is_int():
            # Both branches of an if on element values run for every
            # element; an integer division by zero, even in elements whose
            # branch is not taken, would let the compiler assume the divisor
            # is never zero and drop the choice between the branches. Those
            # elements divide by 1 instead (their results are discarded).
            rhs = self._run(node, lambda: semantic.where(semantic.equal(rhs, 0, self.builder),
                                                         semantic.to_tensor(1, self.builder), rhs, self.builder))
        return self._run(node, lambda: getattr(semantic, name)(lhs, rhs, self.builder))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = _unwrap(self.visit(node.operand))
        op = type(node.op)
        if _is_aggregate(operand):
            # As in Triton, a tuple has no truth value or arithmetic in a
            # kernel; `not t` is far more often a mistake than a test for ().
            raise self.error(f"the unary operator {_UNARY_SPELLINGS[op]} cannot be applied to "
                             f"{_describe(operand)}", node)
        if not _is_runtime(operand):
            return {ast.USub: lambda v: -v, ast.UAdd: lambda v: +v, ast.Not: lambda v: not v,
                    ast.Invert: lambda v: ~v}[op](operand)
        impl = {ast.USub: semantic.minus, ast.UAdd: lambda v, b: v, ast.Not: semantic.logical_not,
                ast.Invert: semantic.invert}[op]
        return self._run(node, lambda: impl(operand, self.builder))

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = _unwrap(self.visit(node.left))
        result: Any = None
        for op, comparator in zip(node.ops, node.comparators):
            right = _unwrap(self.visit(comparator))
            value = self._compare(type(op), left, right, node)
            if result is None:
                result = value
            else:
                result = self._logical("and", result, value, node)
            left = right
        return result

    def _compare(self, op: type, lhs: Any, rhs: Any, node: ast.AST) -> Any:
        if op in (ast.Is, ast.IsNot):
            same = lhs is rhs
            return same if op is ast.Is else not same
        if op not in _COMPARE_OPS:
            raise self.error(f"the comparison {op.__name__} is not supported in kiln kernels", node)
        name, python_op = _COMPARE_OPS[op]
        if not _is_runtime(lhs) and not _is_runtime(rhs):
            if op in (ast.Eq, ast.NotEq) and isinstance(lhs, (list, tuple)) and isinstance(rhs, (list, tuple)):
                # As Triton's tuples: equal to a list of the same elements
                # (``x.shape == [16, 32]``).
                lhs, rhs = tuple(lhs), tuple(rhs)
            return python_op(lhs, rhs)
        return self._run(node, lambda: getattr(semantic, name)(lhs, rhs, self.builder))

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        kind = "and" if isinstance(node.op, ast.And) else "or"
        result = _unwrap(self.visit(node.values[0]))
        for value_node in node.values[1:]:
            if not _is_runtime(result):
                # Python's short circuit on a constant left side.
                if (kind == "and" and not result) or (kind == "or" and result):
                    return result
                result = _unwrap(self.visit(value_node))
                continue
            result = self._logical(kind, result, _unwrap(self.visit(value_node)), node)
        return result

    def _logical(self, kind: str, lhs: Any, rhs: Any, node: ast.AST) -> Any:
        if not _is_runtime(lhs) and not _is_runtime(rhs):
            return (lhs and rhs) if kind == "and" else (lhs or rhs)
        impl = semantic.logical_and if kind == "and" else semantic.logical_or
        return self._run(node, lambda: impl(lhs, rhs, self.builder))

    def visit_Slice(self, node: ast.Slice) -> core.slice:
        """``lower:upper:step`` in a subscript: a kl.slice of compile-time
        bounds (a tuple's subscript takes it as Python's slice)."""
        bounds = []
        for part in (node.lower, node.upper, node.step):
            value = None if part is None else _unwrap(self.visit(part))
            if _is_runtime(value):
                raise self.error("slice bounds must be compile-time values (kl.constexpr), got a runtime value",
                                 part)
            bounds.append(value)
        return core.slice(*bounds)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = _unwrap(self.visit(node.value))
        index_node = node.slice
        if not _is_runtime(base):
            index = _unwrap(self.visit(index_node))
            if isinstance(index, core.slice):
                index = index.to_python()
            return base[index]
        items = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
        # Only `None` (a new axis) and `:` (a whole axis) index a block.
        result = base
        axis = 0
        for item in items:
            if isinstance(item, ast.Slice):
                # `None:`, `:None` and `::None` are ':' too, as in Python.
                bounds = [_unwrap(self.visit(part)) for part in (item.lower, item.upper, item.step)
                          if part is not None]
                if any(bound is not None for bound in bounds):
                    raise self.error(f"unsupported tensor index: {ast.unparse(item)}: blocks cannot be sliced; only "
                                     f"':' (a whole axis) and None (a new axis) index a block", item)
                axis += 1
                continue
            index = _unwrap(self.visit(item))
            if isinstance(index, core.slice):
                if (index.start, index.stop, index.step) != (None, None, None):
                    raise self.error(f"unsupported tensor index: {index!r}: blocks cannot be sliced; only "
                                     f"':' (a whole axis) and None (a new axis) index a block", item)
                axis += 1
                continue
            if index is not None:
                raise self.error(f"unsupported tensor index: {_describe(index)}: blocks can only be indexed with None "
                                 f"(a new axis) and ':' (a whole axis)", item)
            result = self._run(node, lambda r=result, a=axis: semantic.expand_dims(r, a, self.builder))
            axis += 1
        # A ':' past the last axis is a no-op, as in Triton: a scalar's
        # `p[None, None, :]` is a 1x1 block.
        return result
