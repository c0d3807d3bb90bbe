"""The code generator's simple statements and loops (``for``, ``while``)."""

from __future__ import annotations

import ast
import builtins
from typing import Any, Sequence

from kiln.errors import CompilationError, CompileTimeAssertionFailure
from kiln.language import core, debugging, semantic
from kiln.language.core import tensor

from kiln.compiler.frontend.helpers import _unwrap, _is_runtime, _assigned_names, _OneBranchOnly, _Returned
from kiln.compiler.frontend.aggregates import _is_aggregate, _leaves, _rebuild


class StatementsMixin:
    """Statements and loops (mixed into CodeGenerator)."""

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a string statement is a comment
        if isinstance(node.value, ast.Call):
            # visit_Call checks that the callee's result may be dropped.
            self._dropped_call = node.value
        self.visit(node.value)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self._assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return None
        self._assign(node.target, self.visit(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error("only plain names can be the target of an augmented assignment", node.target)
        current = self.lookup(node.target.id, node.target)
        value = self._binary(type(node.op), current, self.visit(node.value), node)
        self._assign(node.target, value)

    def _assign(self, target: ast.expr, value: Any) -> None:
        value = _unwrap(value)
        if isinstance(target, ast.Name):
            self.lscope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple):
                raise self.error(f"cannot unpack a value of type {type(value).__name__}", target)
            if len(value) != len(target.elts):
                raise self.error(f"cannot unpack {len(value)} values into {len(target.elts)} names", target)
            for elt, v in zip(target.elts, value):
                self._assign(elt, v)
        else:
            raise self.error("only names and tuples of names can be assigned to in kiln kernels", target)

    def visit_Return(self, node: ast.Return) -> None:
        if self.region_depth:
            raise self.error("'return' inside a runtime for/while loop is not supported", node)
        value = _unwrap(self.visit(node.value)) if node.value is not None else None
        if self.is_kernel and value is not None:
            raise self.error("a kernel cannot return a value", node)
        if self._captured_returns is not None:
            # In a branch of an if that returns early (see _returning_if).
            self._captured_returns.append((value, node))
            raise _Returned()
        self._emit_return(value, node)

    def _emit_return(self, value: Any, node: ast.AST) -> None:
        if value is not None and not _is_aggregate(value):
            value = self._run(node, lambda: semantic.to_tensor(value, self.builder))
        # Tuples and block pointers return their tensors; compile-time
        # leaves (None, dtypes, ...) stay in the template.
        value = self._materialize(value, node)
        tensors = _leaves(value)
        self.result_types = [t.type for t in tensors]
        self.result_template = value
        self.builder.create_return([t.handle for t in tensors])
        raise _Returned()

    def visit_Assert(self, node: ast.Assert) -> None:
        test = _unwrap(self.visit(node.test))
        if _is_runtime(test):
            # As in Triton: a device assertion, checked in debug mode only.
            msg = _unwrap(self.visit(node.msg)) if node.msg is not None else ""
            if not isinstance(msg, str):
                raise self.error(f"an assert message must be a constant string, got {msg!r}", node)
            self._run(node, lambda: debugging.device_assert(test, msg, _builder=self.builder))
            return
        if not test:
            msg = _unwrap(self.visit(node.msg)) if node.msg is not None else ""
            raise self.error(f"assertion failed{': ' + str(msg) if msg else ''}", node, CompileTimeAssertionFailure)


    # -- loops -----------------------------------------------------------------------

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error("'for ... else' is not supported in kiln kernels", node)
        iterator = node.iter
        kind = None
        if isinstance(iterator, ast.Call):
            func = self.visit(iterator.func)
            if func is builtins.range or func is core.range:
                kind = "runtime"
            elif func is core.static_range:
                kind = "static"
        if kind is None:
            raise self.error("kiln for loops iterate over range(...), kl.range(...) or kl.static_range(...)",
                             iterator)
        args = [_unwrap(self.visit(a)) for a in iterator.args]
        kwargs = {k.arg: _unwrap(self.visit(k.value)) for k in iterator.keywords}
        try:
            bounds = core.range(*args, **kwargs)
        except TypeError as e:
            raise self.error(f"bad arguments to range: {e}", iterator) from e
        if kind == "static":
            self._static_for(node, bounds)
        else:
            self._runtime_for(node, bounds)

    def _static_for(self, node: ast.For, bounds: core.range) -> None:
        values = []
        for what, v in (("start", bounds.start), ("end", bounds.end), ("step", bounds.step)):
            if _is_runtime(v) or isinstance(v, bool) or not isinstance(v, int):
                raise self.error(f"kl.static_range {what} must be a constant integer (kl.constexpr), got "
                                 f"{'a runtime value' if _is_runtime(v) else repr(v)}", node.iter)
            values.append(v)
        if values[2] == 0:
            raise self.error("kl.static_range step must not be zero", node.iter)
        for i in builtins.range(*values):
            self._assign(node.target, i)
            self.visit_stmts(node.body)

    def _runtime_for(self, node: ast.For, bounds: core.range) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error("the target of a runtime for loop must be a single name", node.target)
        step = bounds.step
        if not _is_runtime(step) and (isinstance(step, bool) or not isinstance(step, int) or step == 0):
            raise self.error(f"the step of a runtime for loop must be a nonzero constant or a runtime integer, "
                             f"got {step!r}", node.iter)
        # A constant negative step counts down: the loop runs j from `end` up
        # to `start` by -step and the body sees i = start + end - j, which
        # takes start, start + step, ... while i > end (as Python's range).
        descending = not _is_runtime(step) and step < 0
        start, end = (bounds.end, bounds.start) if descending else (bounds.start, bounds.end)
        lb, ub, st = self._run(node.iter, lambda: self._loop_bounds([start, end, -step if descending else step]))

        carried = self._carried(node, node.body, exclude={node.target.id})
        inits = [leaf for _, value in carried for leaf in _leaves(value)]
        for_op = self.builder.create_for(lb.handle, ub.handle, st.handle, [t.handle for t in inits])
        num_stages = getattr(bounds, "num_stages", None)
        if num_stages is not None:
            num_stages = _unwrap(num_stages)
            if isinstance(num_stages, bool) or not isinstance(num_stages, int) or num_stages < 1:
                raise self.error(f"num_stages must be a constexpr integer of at least 1, got {num_stages!r}",
                                 node.iter)
            for_op.set_num_stages(num_stages)
        warp_specialize = _unwrap(getattr(bounds, "warp_specialize", None))
        if warp_specialize is not None and not isinstance(warp_specialize, bool):
            raise self.error(f"warp_specialize must be a constexpr bool or None, got {warp_specialize!r}",
                             node.iter)
        if warp_specialize is not None:
            for_op.set_warp_specialize(warp_specialize)
        ip = self.builder.get_insertion_point()
        before = dict(self.lscope)
        self.builder.set_insertion_point_to_end(for_op.body)
        induction = tensor(for_op.induction_var, lb.type)
        if descending:
            induction = self._run(node.iter, lambda: semantic.add(semantic.sub(ub, induction, self.builder), lb,
                                                                  self.builder))
        self.lscope[node.target.id] = induction
        args = iter(for_op.iter_args)
        for name, init in carried:
            self.lscope[name] = _rebuild(init, args)
        self.region_depth += 1
        try:
            self.visit_stmts(node.body)
        finally:
            self.region_depth -= 1
        yields = self._loop_yields(carried, node)
        self.builder.create_yield([y.handle for y in yields])
        self.builder.restore_insertion_point(ip)
        self.lscope = before
        results = iter(for_op.results)
        for name, init in carried:
            self.lscope[name] = _rebuild(init, results)

    def _loop_bounds(self, values: list[Any]) -> list[tensor]:
        tensors = [semantic.to_tensor(v, self.builder) for v in values]
        for t in tensors:
            if t.shape or not t.dtype.is_int():
                raise CompilationError(f"loop bounds must be scalar integers, got {t.type}")
        ty = core.int64 if any(t.dtype.int_bitwidth == 64 for t in tensors) else core.int32
        return [semantic.cast(t, ty, self.builder) for t in tensors]

    def _carried(self, node: ast.stmt, body: Sequence[ast.stmt], exclude: set[str]) -> list[tuple[str, Any]]:
        """Variables a loop body assigns that exist before the loop, with
        their initial values as tensors (or aggregates of tensors)."""
        carried = []
        for name in _assigned_names(body):
            if name in exclude or name not in self.lscope:
                continue
            value = self.lscope[name]
            if isinstance(value, _OneBranchOnly):
                continue
            if _is_aggregate(value):
                carried.append((name, self._materialize(value, node)))
                continue
            if not _is_runtime(value):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise self.error(f"'{name}' holds the compile-time value {value!r} and cannot be reassigned "
                                     f"inside a runtime loop", node)
                value = self._run(node, lambda v=value: semantic.to_tensor(v, self.builder))
            carried.append((name, value))
        return carried

    def _loop_yields(self, carried: list[tuple[str, Any]], node: ast.stmt) -> list[tensor]:
        yields = []
        for name, init in carried:
            value = _unwrap(self.lscope.get(name, init))
            if _is_aggregate(init):
                yields.extend(self._aggregate_yields(name, init, value, node))
                continue
            if isinstance(value, _OneBranchOnly):
                raise self.error(f"loop-carried variable '{name}' is assigned in only one branch of an if", node)
            if not _is_runtime(value):
                value = self._run(node, lambda v=value: semantic.cast(
                    semantic._literal_like(v, init, self.builder), init.dtype, self.builder))
            if value.type != init.type:
                raise self.error(f"loop-carried variable '{name}' has type {init.type} before the loop but "
                                 f"{value.type} at the end of the body; its type must not change", node)
            yields.append(value)
        return yields

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error("'while ... else' is not supported in kiln kernels", node)
        carried = self._carried(node, node.body, exclude=set())
        while_op = self.builder.create_while([leaf.handle for _, value in carried for leaf in _leaves(value)])
        ip = self.builder.get_insertion_point()
        before = dict(self.lscope)

        def bind(block: Any) -> None:
            self.lscope = dict(before)
            args = iter(block.args)
            for name, init in carried:
                self.lscope[name] = _rebuild(init, args)

        self.region_depth += 1
        try:
            bind(while_op.before)
            self.builder.set_insertion_point_to_end(while_op.before)
            cond = _unwrap(self.visit(node.test))
            if isinstance(cond, core.condition):
                # kl.condition(cond, disable_licm=...): the hint is checked
                # and the loop runs on `cond` (see kl.condition).
                self._check_condition_hints(cond, node.test)
                cond = _unwrap(cond.condition)
            if _is_runtime(cond) and cond.shape and cond.numel == 1:
                cond = self._scalar_condition(cond, node.test, "a while")
            cond = self._run(node.test, lambda: semantic.to_bool(cond, self.builder))
            if cond.shape:
                raise self.error(f"a while condition must be a scalar, got a block of shape {cond.shape}"
                                 + ("; a while loop on element values is not supported in kl.map_elementwise's "
                                    "function" if self.elementwise else ""), node.test)
            self.builder.create_condition(cond.handle, list(while_op.before.args))
            bind(while_op.after)
            self.builder.set_insertion_point_to_end(while_op.after)
            self.visit_stmts(node.body)
            yields = self._loop_yields(carried, node)
            self.builder.create_yield([y.handle for y in yields])
        finally:
            self.region_depth -= 1
        self.builder.restore_insertion_point(ip)
        self.lscope = before
        results = iter(while_op.results)
        for name, init in carried:
            self.lscope[name] = _rebuild(init, results)

    def _check_condition_hints(self, cond: core.condition, node: ast.AST) -> None:
        disable_licm = _unwrap(cond.disable_licm)
        if not isinstance(disable_licm, bool):
            raise self.error(f"kl.condition's disable_licm must be a constexpr bool, got {disable_licm!r}", node)
