"""The code generator's ``if`` statements, conditional expressions and
element-wise branches (``kl.map_elementwise``)."""

from __future__ import annotations

import ast
import warnings
from typing import Any, Callable, Iterator, Optional, Sequence

from kiln.errors import CompilationError
from kiln.language import semantic, shapes
from kiln.language.core import tensor

from kiln.compiler.frontend.helpers import _unwrap, _is_runtime, _OneBranchOnly, _Returned, _MISSING
from kiln.compiler.frontend.aggregates import _is_aggregate, _same_constant, _describe


class BranchesMixin:
    """If statements and conditional expressions (mixed into CodeGenerator)."""

    # -- if ------------------------------------------------------------------------

    def visit_If(self, node: ast.If) -> None:
        cond = _unwrap(self.visit(node.test))
        if not _is_runtime(cond):
            self.visit_stmts(node.body if cond else node.orelse)
            return
        if cond.shape and self.elementwise:
            cond = self._run(node.test, lambda: semantic.to_bool(cond, self.builder))
            if getattr(node, "returns_early", False):
                self._element_returning_if(node, cond)
            self._element_if(node, cond)
            return
        cond = self._scalar_condition(cond, node.test, "an if")
        cond = self._run(node.test, lambda: semantic.to_bool(cond, self.builder))
        if getattr(node, "returns_early", False):
            self._returning_if(node, cond)
        before = dict(self.lscope)
        if_op = self.builder.create_if(cond.handle, [], True)
        ip = self.builder.get_insertion_point()

        def branch(stmts: Sequence[ast.stmt], block: Any) -> dict[str, Any]:
            self.lscope = dict(before)
            self.builder.set_insertion_point_to_end(block)
            self.region_depth += 1
            try:
                self.visit_stmts(stmts)
            finally:
                self.region_depth -= 1
            return self.lscope

        then_scope = branch(node.body, if_op.then_block)
        else_scope = branch(node.orelse, if_op.else_block)

        # Variables either branch (re)assigned become results; ones only one
        # branch defines are not visible after the if.
        names = [n for n in dict.fromkeys(list(then_scope) + list(else_scope))
                 if then_scope.get(n, _MISSING) is not before.get(n, _MISSING)
                 or else_scope.get(n, _MISSING) is not before.get(n, _MISSING)]
        after = dict(before)
        results: list[tuple[str, tensor, tensor]] = []
        # Aggregates: (name, rebuild, per leaf a constant or an index into results).
        aggregates: list[tuple[str, Callable[[Iterator[Any]], Any], list[tuple[bool, Any]]]] = []
        for name in names:
            t, e = then_scope.get(name, _MISSING), else_scope.get(name, _MISSING)
            if t is _MISSING or e is _MISSING or isinstance(t, _OneBranchOnly) or isinstance(e, _OneBranchOnly):
                after[name] = _OneBranchOnly(self.position(node)[0])
                continue
            t, e = _unwrap(t), _unwrap(e)
            if _is_aggregate(t) or _is_aggregate(e):
                try:
                    pairs: list[tuple[Any, Any]] = []
                    rebuild = self._pair_leaves(name, t, e, node, pairs)
                    slots: list[tuple[bool, Any]] = []
                    leaf_results = []
                    for index, (t_leaf, e_leaf) in enumerate(pairs):
                        if _same_constant(t_leaf, e_leaf):
                            slots.append((False, t_leaf))
                            continue
                        t_val, e_val = self._branch_values(f"{name}[{index}]", t_leaf, e_leaf, if_op, node)
                        slots.append((True, len(results) + len(leaf_results)))
                        leaf_results.append((name, t_val, e_val))
                except CompilationError as err:
                    if name in before:
                        raise
                    after[name] = _OneBranchOnly(self.position(node)[0], err.message)
                    continue
                results.extend(leaf_results)
                aggregates.append((name, rebuild, slots))
                continue
            if _same_constant(t, e):
                after[name] = t  # the same constant either way
                continue
            try:
                t_val, e_val = self._branch_values(name, t, e, if_op, node)
            except CompilationError as e:
                if name in before:
                    raise
                # Temporaries whose types differ are fine while unused.
                after[name] = _OneBranchOnly(self.position(node)[0], e.message)
                continue
            results.append((name, t_val, e_val))

        self.lscope = after
        values = self._if_results(if_op, ip, [(t_val, e_val) for _, t_val, e_val in results])
        aggregate_leaves = {index for _, _, slots in aggregates for is_result, index in slots if is_result}
        for index, (name, _, _) in enumerate(results):
            if index not in aggregate_leaves:
                self.lscope[name] = values[index]
        for name, rebuild, slots in aggregates:
            self.lscope[name] = rebuild(iter([values[v] if is_result else v for is_result, v in slots]))

    def _if_results(self, if_op: Any, ip: Any, results: Sequence[tuple[tensor, tensor]]) -> list[tensor]:
        """Gives ``if_op`` one result per (then, else) pair of ``results``,
        each branch yielding its side, and returns to ``ip``; the results as
        tensors, in order."""
        if results:
            if_op = self.builder.set_if_results(if_op, [t.type.to_ir(self.builder) for t, _ in results])
        for block, pick in ((if_op.then_block, 0), (if_op.else_block, 1)):
            self.builder.set_insertion_point_to_end(block)
            self.builder.create_yield([r[pick].handle for r in results])
        self.builder.restore_insertion_point(ip)
        return [tensor(v, t.type) for (t, _), v in zip(results, if_op.results if results else [])]

    def _scalar_condition(self, cond: tensor, node: ast.expr, what: str) -> tensor:
        """The scalar a runtime condition tests. A block of one element
        stands for its element (with a warning, as in Triton); a larger
        block is an error."""
        if not cond.shape:
            return cond
        if cond.numel != 1:
            raise self.error(f"{what} condition must be a scalar, got a block of shape {cond.shape}; "
                             f"use kl.where for element-wise choices", node)
        line, _ = self.position(node)
        warnings.warn(f"If conditional called with multidimensional Tensor of shape {cond.shape} "
                      f"({self.filename}:{line}): its one element is the condition", stacklevel=2)
        self._call_node = node
        return self._run(node, lambda: shapes._unsplat(cond, self.builder, self))

    # -- element-wise mode (kl.map_elementwise) -------------------------------------

    def _element_branches(self, node: ast.If, capture: bool) -> list[tuple[dict[str, Any], Any]]:
        """Generates both branches of an if on element values, one after
        the other, for every element; returns each branch's scope and
        (with `capture`) the value it returned (None if it fell off the
        end), with the return statement."""
        before, outer_masked, outer_returns = dict(self.lscope), self.under_element_condition, self._captured_returns
        out = []
        for stmts in (node.body, node.orelse):
            self.lscope = dict(before)
            self.under_element_condition = True
            try:
                if capture:
                    self._captured_returns = []
                self.visit_stmts(stmts)
                returned = (None, stmts[-1] if stmts else node)
            except _Returned:
                returned = self._captured_returns[-1]
            finally:
                self.under_element_condition, self._captured_returns = outer_masked, outer_returns
            out.append((self.lscope, returned))
        self.lscope = before
        return out

    def _element_select(self, what: str, cond: tensor, t: Any, e: Any, node: ast.AST) -> Any:
        """Each element of `t` where `cond` holds, else of `e` (aggregates
        leaf by leaf; equal constants stay constants)."""
        pairs: list[tuple[Any, Any]] = []
        rebuild = self._pair_leaves(what, t, e, node, pairs)
        merged = []
        for t_leaf, e_leaf in pairs:
            if _same_constant(t_leaf, e_leaf):
                merged.append(t_leaf)
                continue
            if not all(_is_runtime(v) or isinstance(v, (int, float)) for v in (t_leaf, e_leaf)):
                raise self.error(f"{what} is {_describe(t_leaf)} in one branch and {_describe(e_leaf)} in the other "
                                 f"of an if on element values; both must be numbers", node)
            if _is_runtime(t_leaf) and _is_runtime(e_leaf) and t_leaf.dtype != e_leaf.dtype:
                raise self.error(f"Mismatched type for {what} between the then-branch ({t_leaf.dtype}) and the "
                                 f"else-branch ({e_leaf.dtype}) of the if at line {self.position(node)[0]}; both "
                                 f"branches must give it the same type", node)
            merged.append(self._run(node, lambda a=t_leaf, c=e_leaf: semantic.where(cond, a, c, self.builder)))
        return rebuild(iter(merged))

    def _element_if(self, node: ast.If, cond: tensor) -> None:
        """An if on element values (element-wise mode): both branches run,
        and each variable they assign takes, element by element, the value
        of the branch that element's condition chose."""
        before = dict(self.lscope)
        (then_scope, _), (else_scope, _) = self._element_branches(node, capture=False)
        names = [n for n in dict.fromkeys(list(then_scope) + list(else_scope))
                 if then_scope.get(n, _MISSING) is not before.get(n, _MISSING)
                 or else_scope.get(n, _MISSING) is not before.get(n, _MISSING)]
        after = dict(before)
        for name in names:
            t, e = then_scope.get(name, _MISSING), else_scope.get(name, _MISSING)
            if t is _MISSING or e is _MISSING or isinstance(t, _OneBranchOnly) or isinstance(e, _OneBranchOnly):
                after[name] = _OneBranchOnly(self.position(node)[0])
                continue
            try:
                after[name] = self._element_select(f"'{name}'", cond, _unwrap(t), _unwrap(e), node)
            except CompilationError as err:
                if name in before:
                    raise
                after[name] = _OneBranchOnly(self.position(node)[0], err.message)
        self.lscope = after

    def _element_returning_if(self, node: ast.If, cond: tensor) -> None:
        """An if on element values whose branches both end the function:
        each element returns what its branch returns. Raises _Returned."""
        (_, (t, t_node)), (_, (e, e_node)) = self._element_branches(node, capture=True)
        if (t is None) != (e is None):
            raise self.error("one branch of this if returns a value and the other does not (or falls off the end "
                             "of the function); both must return values of the same types", node)
        value = None if t is None else self._element_select("the return value", cond, t, e, e_node)
        if self._captured_returns is not None:
            self._captured_returns.append((value, node))
            raise _Returned()
        self._emit_return(value, node)

    def _returning_if(self, node: ast.If, cond: tensor) -> None:
        """An if whose branches both end the function (visit_stmts moved the
        statements after it into them): an scf.if yielding each branch's
        return value, then one return of the if's results. Raises _Returned."""
        outer = self._captured_returns
        if_op = self.builder.create_if(cond.handle, [], True)
        ip = self.builder.get_insertion_point()
        before = dict(self.lscope)
        returned = []
        for stmts, block in ((node.body, if_op.then_block), (node.orelse, if_op.else_block)):
            self.lscope = dict(before)
            self.builder.set_insertion_point_to_end(block)
            self._captured_returns = []
            try:
                self.visit_stmts(stmts)
                returned.append((None, stmts[-1] if stmts else node))  # fell off the end
            except _Returned:
                returned.append(self._captured_returns[-1])
            finally:
                self._captured_returns = outer
        (t, t_node), (e, e_node) = returned
        if (t is None) != (e is None):
            raise self.error("one branch of this if returns a value and the other does not (or falls off the end "
                             "of the function); both must return values of the same types", node)
        pairs: list[tuple[Any, Any]] = []
        rebuild = self._pair_leaves("the return value", t, e, node, pairs)
        slots: list[tuple[bool, Any]] = []
        results: list[tuple[tensor, tensor]] = []
        for index, (t_leaf, e_leaf) in enumerate(pairs):
            if _same_constant(t_leaf, e_leaf):
                slots.append((False, t_leaf))
                continue
            slots.append((True, len(results)))
            what = "the return value" if len(pairs) == 1 else f"leaf {index} of the return value"
            results.append(self._branch_values(what, t_leaf, e_leaf, if_op, node, returns=(t_node, e_node)))
        values = self._if_results(if_op, ip, results)
        self.lscope = before
        value = rebuild(iter([values[v] if is_result else v for is_result, v in slots])) if t is not None else None
        if outer is not None:
            outer.append((value, node))
            raise _Returned()
        self._emit_return(value, node)

    def _branch_values(self, name: str, t: Any, e: Any, if_op: Any, node: ast.If,
                       returns: Optional[tuple[ast.AST, ast.AST]] = None) -> tuple[tensor, tensor]:
        """Both branches' values of `name` as tensors of one type (constants
        are materialized inside their branch). For the values two branches
        return, `returns` holds their return statements: a type mismatch is
        reported at the else-branch's."""
        values = []
        for v, block, other in ((t, if_op.then_block, e), (e, if_op.else_block, t)):
            if _is_runtime(v):
                values.append(v)
                continue
            self.builder.set_insertion_point_to_end(block)
            if not isinstance(other, tensor) and isinstance(v, (int, float)) and isinstance(other, (int, float)):
                # Two constants: both take the type Triton gives their sum.
                ty = semantic.computation_type(semantic._literal_dtype(v), semantic._literal_dtype(other))
                values.append(self._run(node, lambda: semantic.constant(v, ty, self.builder)))
            elif isinstance(other, tensor):
                values.append(self._run(node, lambda: semantic.cast(
                    semantic._literal_like(v, other, self.builder), other.dtype, self.builder)))
            else:
                values.append(self._run(node, lambda: semantic.to_tensor(v, self.builder)))
        t_val, e_val = values
        if t_val.type != e_val.type and returns is not None:
            raise self.error(f"Inconsistent return types: {name} is {e_val.type} here but {t_val.type} where the "
                             f"then-branch of the if at line {self.position(node)[0]} returns (line "
                             f"{self.position(returns[0])[0]}); both must return the same types", returns[1])
        if t_val.type != e_val.type:
            raise self.error(f"Mismatched type for {name} between the then-branch ({t_val.type}) and the "
                             f"else-branch ({e_val.type}) of the if at line {self.position(node)[0]}; both "
                             f"branches must give it the same type", node)
        return t_val, e_val

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = _unwrap(self.visit(node.test))
        if not _is_runtime(cond):
            return self.visit(node.body if cond else node.orelse)
        if cond.numel > 1:
            # A block condition chooses element-wise, as kl.where does (both
            # sides are evaluated).
            then_value, else_value = _unwrap(self.visit(node.body)), _unwrap(self.visit(node.orelse))
            try:
                return self._run(node, lambda: semantic.where(cond, then_value, else_value, self.builder))
            except CompilationError as e:
                cause = e.__cause__ if isinstance(e.__cause__, CompilationError) else None
                if cause is None or cause.filename is not None:
                    raise
                raise self._ternary_mismatch(then_value, else_value, cause.message, node) from cause
        # A scalar condition evaluates one side only, as an if statement
        # does: `tl.store(...) if c else tl.store(...)` stores once.
        cond = self._scalar_condition(cond, node.test, "a conditional expression's")
        cond = self._run(node.test, lambda: semantic.to_bool(cond, self.builder))
        if_op = self.builder.create_if(cond.handle, [], True)
        ip = self.builder.get_insertion_point()
        sides = []
        for expr, block in ((node.body, if_op.then_block), (node.orelse, if_op.else_block)):
            self.builder.set_insertion_point_to_end(block)
            self.region_depth += 1
            try:
                sides.append(_unwrap(self.visit(expr)))
            finally:
                self.region_depth -= 1
        then_value, else_value = sides
        try:
            pairs: list[tuple[Any, Any]] = []
            rebuild = self._pair_leaves("the conditional expression", then_value, else_value, node, pairs)
            slots: list[tuple[bool, Any]] = []
            results: list[tuple[tensor, tensor]] = []
            for t_leaf, e_leaf in pairs:
                if _same_constant(t_leaf, e_leaf):
                    slots.append((False, t_leaf))  # the same constant either way (None for void calls)
                    continue
                slots.append((True, len(results)))
                results.append(self._ternary_values(t_leaf, e_leaf, if_op, node))
        except CompilationError as e:
            self.builder.restore_insertion_point(ip)
            if e.filename is not None and "Ternary expression" in e.message:
                raise
            raise self._ternary_mismatch(then_value, else_value, e.message, node) from e
        values = self._if_results(if_op, ip, results)
        return rebuild(iter([values[v] if is_result else v for is_result, v in slots]))

    def _ternary_values(self, t: Any, e: Any, if_op: Any, node: ast.IfExp) -> tuple[tensor, tensor]:
        """The two sides of a conditional expression with a runtime scalar
        condition as values of one type, each converted in its own branch:
        the type kl.where gives them (promoted and broadcast), constants
        taking the other side's type as in an if statement."""
        if t is None or e is None or not all(_is_runtime(v) or isinstance(v, (int, float)) for v in (t, e)):
            reason = CompilationError("both sides must be values")
            raise self._ternary_mismatch(t, e, reason.message, node) from reason
        values = []
        for v, block, other in ((t, if_op.then_block, e), (e, if_op.else_block, t)):
            if _is_runtime(v):
                values.append(v)
                continue
            self.builder.set_insertion_point_to_end(block)
            if isinstance(other, tensor):
                values.append(self._run(node, lambda: semantic.cast(
                    semantic._literal_like(v, other, self.builder), other.dtype, self.builder)))
            else:
                ty = semantic.computation_type(semantic._literal_dtype(v), semantic._literal_dtype(other))
                values.append(self._run(node, lambda: semantic.constant(v, ty, self.builder)))
        t, e = values
        if t.type == e.type:
            return t, e
        if t.dtype.is_ptr() or e.dtype.is_ptr():
            if t.dtype != e.dtype:
                reason = CompilationError("pointers of different types")
                raise self._ternary_mismatch(t, e, reason.message, node) from reason
            ty = t.dtype
        else:
            ty = self._run(node, lambda: semantic.computation_type(t.dtype, e.dtype))
        shape = self._run(node, lambda: semantic.broadcast_shapes(t.shape, e.shape))
        converted = []
        for value, block in ((t, if_op.then_block), (e, if_op.else_block)):
            self.builder.set_insertion_point_to_end(block)

            def convert(v: tensor = value) -> tensor:
                v = semantic.cast(v, ty, self.builder) if v.dtype != ty else v
                return semantic.broadcast_to(v, shape, self.builder) if shape and v.shape != shape else v
            converted.append(self._run(node, convert))
        return converted[0], converted[1]

    def _ternary_mismatch(self, then_value: Any, else_value: Any, reason: str, node: ast.AST) -> CompilationError:
        # Triton's words for the two sides not combining into one value.
        return self.error(f"Ternary expression with dynamic condition has inconsistent types: "
                          f"{_describe(then_value)} and {_describe(else_value)}: {reason}", node)
