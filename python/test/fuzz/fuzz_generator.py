"""Random `@kiln.jit` kernels for the fuzzer, seeded and deterministic.

`generate(seed)` returns a `Case`: the text of a Python module holding one
kernel (and the jit helpers it calls), the arguments to launch it with and,
for a valid kernel, what it must write (from `fuzz_reference`). A case is
either valid, built from typed expression trees over blocks and scalars
(arithmetic, comparisons, bitwise ops, casts, math functions, `kl.where`,
reductions, `kl.full`/`kl.zeros`, broadcasting in 1-D and 2-D blocks,
masked loads with `other`, constexprs, runtime and constexpr `if`, `for`
and `while` loops, helper calls, every integer and float dtype), or a
valid kernel with one deliberate mistake (a type error, a shape mismatch, an
unsupported construct, a wrong arity, an undefined name, a bad constexpr or
bad launch arguments), which must end in a clean error.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

import fuzz_reference as ref
from fuzz_reference import DType, Value
from fuzz_trees import (Node, Var, Binary, Literal, Call, COMPARISONS, literal_node, same_signedness, Argument, Case,
                        _data, Generator, HelperCall, cast_node, PYTHON_COMPARISONS, LOOP_TESTS)

KERNEL_NAME = "fuzz_kernel"


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


@dataclass
class Statement:
    """Lines of the kernel body and how they change the reference's
    environment (`run(env)` for one program)."""

    lines: list[str]
    run: Callable[[dict[str, Value]], None]


def _literal_text(values: np.ndarray, ty: DType) -> str:
    if ty.is_float:
        return "[" + ", ".join(repr(float(v)) for v in values.ravel()) + "]"
    return "[" + ", ".join(str(int(v)) for v in values.ravel()) + "]"


def _array_text(values: np.ndarray, ty: DType) -> str:
    """Python text making a CPU array of `ty` holding `values`."""
    if ty.name == "bfloat16":
        return f"torch.tensor({_literal_text(values, ty)}, dtype=torch.bfloat16)"
    if ty.kind == "b":
        return f"np.array({_literal_text(values, ty)}, dtype=np.bool_)"
    return f"np.array({_literal_text(values, ty)}, dtype=np.{ty.name})"


class KernelBuilder(Generator):
    """A valid kernel: loads, a few statements, one or two stores."""

    def build(self) -> Case:
        rng = self.rng
        self.two_d = rng.random() < 0.35
        self.programs = rng.choice((1, 1, 2, 3))
        if self.two_d:
            bm, bn = rng.choice((1, 2, 4, 8, 16, 32)), rng.choice((1, 2, 4, 8, 16, 32))
            self.block_shape = (bm, bn)
            self.block_params = {"BM": bm, "BN": bn}
        else:
            block = rng.choice((1, 2, 4, 16, 32, 64, 128, 256, 1024))
            self.block_shape = (block,)
            self.block_params = {"BLOCK": block}
        self.size = int(np.prod(self.block_shape)) * self.programs
        self.n = rng.randint(max(self.size - int(np.prod(self.block_shape)), 0), self.size)
        self.arguments: list[Argument] = []
        self.body: list[Statement] = []
        self.scope: list[Var] = []
        self.constexprs: dict[str, int] = {}
        # Names the kernel may write where a literal goes: constexprs and
        # arguments specialized to 1.
        self.literals: dict[str, int] = {}
        self.in_helper = False
        self.helper_calls: list[HelperCall] = []

        self.prologue()
        for _ in range(rng.randint(1, 5)):
            self.statement(depth=rng.randint(1, 4))
        outputs = self.epilogue()
        return self.finish(outputs)

    # -- the kernel's parts --------------------------------------------------

    def prologue(self) -> None:
        rng = self.rng
        full = self.block_shape
        if self.two_d:
            lines = ["pid = kl.program_id(0)", "rows = pid * BM + kl.arange(0, BM)", "cols = kl.arange(0, BN)",
                     "offs = rows[:, None] * BN + cols[None, :]", "mask = offs < n"]
        else:
            lines = ["pid = kl.program_id(0)", "offs = pid * BLOCK + kl.arange(0, BLOCK)", "mask = offs < n"]
        if rng.random() < 0.3:
            lines.append("npg = kl.num_programs(0)")
            self.scope.append(Var("npg", ref.INT32, ()))
        # The grid: a tuple of one to three axes, or a function of the
        # meta-parameters; the second axis's program id is always 0.
        self.grid_text = rng.choice(("({P},)", "({P}, 1)", "({P}, 1, 1)", "lambda meta: ({P},)",
                                     "lambda meta: (kiln.cdiv(meta['{B}'] * {P}, meta['{B}']), 1)"))
        self.grid_text = self.grid_text.replace("{P}", str(self.programs)).replace(
            "{B}", next(iter(self.block_params)))
        if "1)" in self.grid_text and rng.random() < 0.5:
            lines.append("pid1 = kl.program_id(1)")
            self.scope.append(Var("pid1", ref.INT32, ()))
        self.body.append(Statement(lines, lambda env: None))
        self.scope += [Var("pid", ref.INT32, ()), Var("offs", ref.INT32, full)]
        for number in range(rng.randint(1, 3)):
            ty = ref.INT1 if rng.random() < 0.05 else self.pick_dtype()
            name, var = f"x{number}", f"v{number}"
            data = _data(rng, ty, self.size)
            self.arguments.append(Argument(name, "array", ty, data))
            if rng.random() < 0.5:
                other = rng.choice((0, 1, 2, 7)) if ty.is_int else rng.choice((0.5, -1.0, 2.0))
                if ty.kind == "b":
                    other = rng.choice((0, 1))
                text = f"{var} = kl.load({self.pointer(name)}, mask=mask, other={other!r})"
                self.body.append(Statement([text], self._masked_load(var, name, ty, other)))
            else:
                self.body.append(Statement([f"{var} = kl.load({self.pointer(name)})"], self._load(var, name, ty)))
            self.scope.append(Var(var, ty, full))
        if self.two_d and rng.random() < 0.6:
            for name, var, index, view in (("xr", "vr", "rows", "[:, None]"), ("xc", "vc", "cols", "[None, :]")):
                ty = self.pick_dtype()
                length = self.block_shape[0] * self.programs if name == "xr" else self.block_shape[1]
                self.arguments.append(Argument(name, "array", ty, _data(rng, ty, length)))
                self.body.append(Statement([f"{var} = kl.load({name} + {index})"], self._vector_load(var, name, index, ty)))
                shape = (full[0], 1) if name == "xr" else (1, full[1])
                self.scope.append(Var(var, ty, shape, text=f"{var}{view}"))
        self.arguments.append(Argument("n", "int", ref.INT32, scalar=self.n))
        for number in range(rng.randint(0, 2)):
            value = rng.choice((0, 1, 2, 3, 5, 16, 100, -7))
            self.arguments.append(Argument(f"s{number}", "int", ref.INT32, scalar=value))
            if value == 1:
                # An integer argument equal to 1 is specialized to the
                # Python int 1 (as in Triton): a literal, not an int32.
                self.literals[f"s{number}"] = 1
            else:
                self.scope.append(Var(f"s{number}", ref.INT32, ()))
        if rng.random() < 0.4:
            value = rng.choice((0.5, -2.25, 3.0, 1.0))
            self.arguments.append(Argument("f0", "float", ref.FLOAT32, scalar=value))
            self.scope.append(Var("f0", ref.FLOAT32, ()))
        if rng.random() < 0.5:
            self.constexprs["C0"] = rng.choice((0, 1, 2, 3, 4, 8))
            self.literals["C0"] = self.constexprs["C0"]

    def pointer(self, name: str) -> str:
        """`name + offs`, written one of several equivalent ways."""
        rng = self.rng
        forms = [f"{name} + offs", f"offs + {name}", f"({name} + 3) + (offs - 3)", f"({name} - 1) + (offs + 1)",
                 f"{name} + offs.to(kl.int64)", f"({name} + pid * 0) + offs"]
        if not self.two_d:
            forms.append(f"({name} + pid * BLOCK) + kl.arange(0, BLOCK)")
        return rng.choice(forms)

    def _load(self, var: str, name: str, ty: DType) -> Callable[[dict[str, Value]], None]:
        def run(env: dict[str, Value]) -> None:
            env[var] = ref.make(ty, self.buffer(name)[env["offs"].v.astype(np.int64)])
        return run

    def _masked_load(self, var: str, name: str, ty: DType, other: object) -> Callable[[dict[str, Value]], None]:
        def run(env: dict[str, Value]) -> None:
            offs = env["offs"].v.astype(np.int64)
            inside = offs < self.n
            data = self.buffer(name)[np.where(inside, offs, 0)]
            values = np.where(inside, data, other)
            env[var] = ref.make(ty, values if ty.is_float else values.astype(object))
        return run

    def _vector_load(self, var: str, name: str, index: str, ty: DType) -> Callable[[dict[str, Value]], None]:
        def run(env: dict[str, Value]) -> None:
            pid = int(env["pid"].v)
            if index == "rows":
                positions = pid * self.block_shape[0] + np.arange(self.block_shape[0])
            else:
                positions = np.arange(self.block_shape[1])
            env[var] = ref.make(ty, self.buffer(name)[positions])
        return run

    def buffer_dtype(self, name: str) -> DType:
        return next(a.dtype for a in self.arguments if a.name == name)

    def buffer(self, name: str) -> np.ndarray:
        return next(a.values for a in self.arguments if a.name == name)

    def scope_leaves(self) -> list[Var]:
        return list(self.scope)

    def new_temp(self) -> str:
        self.temp_count += 1
        return f"t{self.temp_count}"

    def constexpr_operand(self, other: Node) -> Node:
        """A constexpr parameter written where a literal may go."""
        name = self.rng.choice(sorted(self.literals))
        value = self.literals[name]
        return Literal(value, ref.literal_type(value, other.dtype), text=name)

    def operand(self, scope: list[Var], shape: tuple[int, ...], depth: int, other: Optional[Node] = None) -> Node:
        if other is not None and self.literals and not self.in_helper and self.rng.random() < 0.1:
            return self.constexpr_operand(other)
        return super().operand(scope, shape, depth, other)

    def statement(self, depth: int) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.4:
            self.assign(depth)
        elif roll < 0.55:
            self.branch(depth, runtime=True)
        elif roll < 0.62 and self.constexprs:
            self.branch(depth, runtime=False)
        elif roll < 0.77:
            self.loop(depth)
        elif roll < 0.83:
            self.while_loop(depth)
        elif roll < 0.9:
            self.augmented(depth)
        else:
            self.helper_call(depth)

    def assign(self, depth: int) -> None:
        node = self.expression(self.scope_leaves(), self.block_shape, depth)
        name = self.new_temp()
        self.body.append(Statement([f"{name} = {node.source()}"], self._bind(name, node)))
        self.scope.append(Var(name, node.dtype, node.shape))

    @staticmethod
    def _bind(name: str, node: Node) -> Callable[[dict[str, Value]], None]:
        def run(env: dict[str, Value]) -> None:
            env[name] = node.evaluate(env)
        return run

    def typed_full(self, depth: int, ty: DType, extra: Optional[list[Var]] = None) -> Node:
        """A random expression of exactly the block's shape, cast to `ty`."""
        node = self.expression(self.scope_leaves() + (extra or []), self.block_shape, depth)
        return cast_node(self.fit(node, self.block_shape), ty)

    def scalar_condition(self) -> tuple[str, Callable[[dict[str, Value]], bool]]:
        rng = self.rng
        scalars = [v for v in self.scope if v.shape == () and v.name != "pid"]
        choice = rng.random()
        if scalars and choice < 0.6:
            var = rng.choice(scalars)
            op, bound = rng.choice(COMPARISONS), rng.choice((0, 1, 2, 3))
            node = Binary(op, var, literal_node(bound, var))
        elif choice < 0.8:
            node = Binary(rng.choice(COMPARISONS), Var("pid", ref.INT32, ()), Literal(rng.choice((0, 1)), ref.INT32))
        else:
            # A scalar computed from a block: a reduction.
            full = [v for v in self.scope if v.shape == self.block_shape]
            var = rng.choice(full)
            if var.dtype.kind == "b":
                return "pid == 0", lambda env: int(env["pid"].v) == 0
            reduced = Call("kl.max({0}, axis=None)", [var], ref.reduce("max", ref.make(var.dtype, np.zeros(2)), 0,
                                                                        False).dtype, (),
                           lambda a: ref.reduce("max", ref.Value(a.dtype, a.v.ravel(), a.err.ravel(),
                                                                 a.undef.ravel()), 0, False))
            node = Binary(">", reduced, literal_node(0, reduced))

        def decide(env: dict[str, Value]) -> bool:
            value = node.evaluate(env)
            if bool(np.any(value.undef)):
                raise ref.Trap("undecidable branch")
            return bool(value.v)
        return node.source(), decide

    def branch(self, depth: int, runtime: bool) -> None:
        rng = self.rng
        ty = self.pick_dtype()
        name = self.new_temp()
        then = self.typed_full(depth, ty)
        otherwise = self.typed_full(depth, ty)
        if runtime:
            condition, decide = self.scalar_condition()
        else:
            constexpr = rng.choice(sorted(self.constexprs))
            bound = rng.choice((0, 1, 2, 3))
            op = rng.choice(COMPARISONS)
            condition = f"{constexpr} {op} {bound}"
            value = self.constexprs[constexpr]
            outcome = bool(PYTHON_COMPARISONS[op](value, bound))
            decide = lambda env: outcome  # noqa: E731
        otherwise_first = rng.random() < 0.5
        if otherwise_first:
            lines = [f"{name} = {otherwise.source()}", f"if {condition}:", f"    {name} = {then.source()}"]
        else:
            lines = [f"if {condition}:", f"    {name} = {then.source()}", "else:",
                     f"    {name} = {otherwise.source()}"]

        def run(env: dict[str, Value]) -> None:
            # Written before the `if`, `otherwise` always runs (and may trap).
            first = otherwise.evaluate(env) if otherwise_first else None
            env[name] = then.evaluate(env) if decide(env) else first or otherwise.evaluate(env)
        self.body.append(Statement(lines, run))
        self.scope.append(Var(name, ty, self.block_shape))

    def loop(self, depth: int) -> None:
        rng = self.rng
        ty = self.pick_dtype()
        acc = self.new_temp()
        init = self.typed_full(depth - 1, ty)
        counter = f"i{self.temp_count}"
        forms = [("range({0})", lambda k: range(k)), ("range(1, {0})", lambda k: range(1, k)),
                 ("range(0, {0}, 2)", lambda k: range(0, k, 2)), ("kl.range(0, {0})", lambda k: range(k))]
        scalars = [v for v in self.scope if v.shape == () and v.name.startswith("s")]
        if scalars and rng.random() < 0.5:
            bound_name = rng.choice(scalars).name
            bound_value: Callable[[dict[str, Value]], int] = lambda env: int(env[bound_name].v)  # noqa: E731
        else:
            literal = rng.choice((0, 1, 3))
            bound_name = str(literal)
            bound_value = lambda env: literal  # noqa: E731
            forms.append(("kl.static_range({0})", lambda k: range(k)))
        text, iterate = rng.choice(forms)
        extra = [Var(acc, ty, self.block_shape)]
        if text.startswith("kl.static_range"):
            # The unrolled loop's variable is a Python int in each copy.
            self.literals[counter] = 0
        else:
            extra.append(Var(counter, ref.INT32, ()))
        body = self.typed_full(depth, ty, extra=extra)
        # Sometimes an if/else on the loop variable inside the loop.
        nested = self.typed_full(depth, ty, extra=extra) if rng.random() < 0.3 else None
        test, holds = rng.choice(LOOP_TESTS)
        self.literals.pop(counter, None)
        lines = [f"{acc} = {init.source()}", f"for {counter} in {text.format(bound_name)}:"]
        if nested is None:
            lines.append(f"    {acc} = {body.source()}")
        else:
            lines += [f"    if {test.format(counter)}:", f"        {acc} = {body.source()}", "    else:",
                      f"        {acc} = {nested.source()}"]

        def run(env: dict[str, Value]) -> None:
            env[acc] = init.evaluate(env)
            count = bound_value(env)
            if count > 64:
                raise ref.Trap("long loop")
            for i in iterate(count):
                env[counter] = ref.make(ref.INT32, np.array(i, dtype=object))
                taken = nested is None or holds(i)
                env[acc] = (body if taken else nested).evaluate(env)
        self.body.append(Statement(lines, run))
        self.scope.append(Var(acc, ty, self.block_shape))

    def while_loop(self, depth: int) -> None:
        rng = self.rng
        ty = self.pick_dtype()
        acc = self.new_temp()
        counter = f"j{self.temp_count}"
        init = self.typed_full(depth - 1, ty)
        body = self.typed_full(depth, ty, extra=[Var(acc, ty, self.block_shape), Var(counter, ref.INT32, ())])
        scalars = [v for v in self.scope if v.shape == () and v.name.startswith("s")]
        if scalars and rng.random() < 0.4:
            bound = rng.choice(scalars).name
        else:
            bound = str(rng.choice((0, 1, 2, 4)))
        lines = [f"{acc} = {init.source()}", f"{counter} = pid * 0", f"while {counter} < {bound}:",
                 f"    {acc} = {body.source()}", f"    {counter} += 1"]

        def run(env: dict[str, Value]) -> None:
            env[acc] = init.evaluate(env)
            limit = int(env[bound].v) if bound in env else int(bound)
            if limit > 64:
                raise ref.Trap("long loop")
            limit = max(limit, 0)
            for j in range(limit):
                env[counter] = ref.make(ref.INT32, np.array(j, dtype=object))
                env[acc] = body.evaluate(env)
            env[counter] = ref.make(ref.INT32, np.array(limit, dtype=object))
        self.body.append(Statement(lines, run))
        self.scope.append(Var(acc, ty, self.block_shape))

    def helper_call(self, depth: int) -> None:
        """A `@kiln.jit` helper of two parameters, called once: it returns
        one value or a tuple of two, and may call an earlier helper."""
        rng = self.rng
        full = [v for v in self.scope if v.shape == self.block_shape]
        earlier = [h for h in self.helper_calls if rng.random() < 0.5]
        if earlier:
            # Called with arguments of the types the earlier helper was
            # generated for, it may call that helper in turn.
            inner = earlier[0]
            a, b = inner.args
            params = [Var("a", a.dtype, a.shape), Var("b", b.dtype, b.shape)]
            extra: list[Node] = [HelperCall(inner.name, params, inner.body)]
        else:
            a, b = rng.choice(full), rng.choice(self.scope)
            params = [Var("a", a.dtype, a.shape), Var("b", b.dtype, b.shape)]
            extra = []
        self.in_helper = True
        results = [self.expression(params + extra, self.block_shape, depth)]
        if rng.random() < 0.3:
            results.append(self.expression(params + extra, self.block_shape, depth))
        self.in_helper = False
        name = f"helper_{self.helper_count}"
        self.helper_count += 1
        self.helpers.append("\n".join(["@kiln.jit", f"def {name}(a, b):",
                                       f"    return {', '.join(r.source() for r in results)}"]))
        names = [self.new_temp() for _ in results]
        call = HelperCall(name, [a, b], results[0])
        if len(results) == 1:
            self.helper_calls.append(call)

        def run(env: dict[str, Value]) -> None:
            inner_env = {"a": a.evaluate(env), "b": b.evaluate(env)}
            for target, node in zip(names, results):
                env[target] = node.evaluate(inner_env)
        self.body.append(Statement([f"{', '.join(names)} = {call.source()}"], run))
        for target, node in zip(names, results):
            self.scope.append(Var(target, node.dtype, node.shape))

    def augmented(self, depth: int) -> None:
        """`t op= expr` on an earlier temporary (its type may change)."""
        rng = self.rng
        temporaries = [v for v in self.scope if v.name.startswith("t") and v.shape == self.block_shape]
        if not temporaries:
            return self.assign(depth)
        target = rng.choice(temporaries)
        op = rng.choice(("+", "-", "*", "&", "|", "^", "//"))
        value = self.expression(self.scope_leaves(), self.block_shape, depth - 1)
        if op in ("&", "|", "^", "//"):
            if not target.dtype.is_int or target.dtype.kind == "b":
                op = "+"
            else:
                value = self.as_int(value) if op != "//" else self.divisor(self.scope_leaves(), self.block_shape,
                                                                            depth, target, ints=True)
                if op == "//":
                    _, value = same_signedness(target, value)
        node = Binary(op, target, value)
        self.body.append(Statement([f"{target.name} {op}= {value.source()}"], self._bind(target.name, node)))
        self.scope.remove(target)
        self.scope.append(Var(target.name, node.dtype, node.shape))

    def epilogue(self) -> dict[str, DType]:
        rng = self.rng
        result = self.fit(self.expression(self.scope_leaves(), self.block_shape, rng.randint(1, 3)), self.block_shape)
        out_ty = self.pick_dtype()
        self.result, self.out_ty = result, out_ty
        self.arguments.insert(0, Argument("out", "array", out_ty, _data(rng, out_ty, self.size)))
        value = result.source() if rng.random() < 0.5 else f"{result.source()}.to(kl.{out_ty.name})"
        if rng.random() < 0.15:
            # An early return: the program stores nothing.
            condition, decide = self.scalar_condition()

            def leave(env: dict[str, Value]) -> None:
                env["returned"] = ref.make(ref.INT1, np.array(int(decide(env)), dtype=object))
            self.body.append(Statement([f"if {condition}:", "    return"], leave))
        self.store_condition: Optional[Node] = None
        if rng.random() < 0.3:
            self.store_condition = self.condition(self.scope_leaves(), self.block_shape, 1)
            self.body.append(Statement([f"kl.store(out + offs, {value}, mask=mask & {self.store_condition.source()})"],
                                       lambda env: None))
        else:
            self.body.append(Statement([f"kl.store(out + offs, {value}, mask=mask)"], lambda env: None))
        outputs = {"out": out_ty}
        if rng.random() < 0.3:
            full = [v for v in self.scope if v.shape == self.block_shape and v.dtype.kind != "b"]
            var = rng.choice(full)
            kind = rng.choice(("sum", "max", "min"))
            reduced_ty = ref.reduce(kind, ref.make(var.dtype, np.zeros(2)), 0, False).dtype
            self.reduced = (var, kind)
            self.arguments.insert(1, Argument("red", "array", reduced_ty, _data(rng, reduced_ty, self.programs)))
            self.body.append(Statement([f"kl.store(red + pid, kl.{kind}({var.source()}))"], lambda env: None))
            outputs["red"] = reduced_ty
        return outputs

    # -- the reference ---------------------------------------------------------

    def expected(self, outputs: dict[str, DType]) -> dict[str, tuple[DType, Value]]:
        results: dict[str, tuple[DType, Value]] = {}
        out_ty = outputs["out"]
        out = ref.make(out_ty, self.buffer("out"))
        red = ref.make(outputs["red"], self.buffer("red")) if "red" in outputs else None
        for pid in range(self.programs):
            env: dict[str, Value] = {"pid": ref.make(ref.INT32, np.array(pid, dtype=object)),
                                     "npg": ref.make(ref.INT32, np.array(self.programs, dtype=object)),
                                     "pid1": ref.make(ref.INT32, np.array(0, dtype=object))}
            if self.two_d:
                bm, bn = self.block_shape
                rows = pid * bm + np.arange(bm)
                offs = rows[:, None] * bn + np.arange(bn)[None, :]
            else:
                offs = pid * self.block_shape[0] + np.arange(self.block_shape[0])
            env["offs"] = ref.make(ref.INT32, offs.astype(object))
            for argument in self.arguments:
                if argument.kind in ("int", "float"):
                    env[argument.name] = ref.make(argument.dtype, np.array(argument.scalar,
                                                                          dtype=float if argument.kind == "float"
                                                                          else object))
            for statement in self.body:
                statement.run(env)
            if "returned" in env and int(env["returned"].v):
                continue
            value = ref.cast(self.result.evaluate(env), out_ty)
            inside = offs < self.n
            unknown = np.zeros(offs.shape, dtype=bool)
            if self.store_condition is not None:
                chosen = ref.broadcast_to(self.store_condition.evaluate(env), offs.shape)
                # Where the condition is undefined, so is the element.
                unknown = inside & chosen.undef
                inside = inside & (chosen.v.astype(bool) | chosen.undef)
            flat = offs[inside]
            out.v[flat] = value.v[inside]
            out.err[flat] = value.err[inside]
            out.undef[flat] = value.undef[inside] | unknown[inside]
            if red is not None:
                var, kind = self.reduced
                x = var.evaluate(env)
                reduced = ref.reduce(kind, ref.Value(x.dtype, x.v.ravel(), x.err.ravel(), x.undef.ravel()), 0, False)
                red.v[pid], red.err[pid], red.undef[pid] = reduced.v[()], reduced.err[()], reduced.undef[()]
        results["out"] = (out_ty, out)
        if red is not None:
            results["red"] = (outputs["red"], red)
        return results

    # -- the module text -------------------------------------------------------

    def signature(self) -> list[str]:
        names = [a.name for a in self.arguments]
        names += [f"{name}: kl.constexpr" for name in self.constexprs]
        names += [f"{name}: kl.constexpr" for name in self.block_params]
        return names

    def launch_lines(self, drop: Optional[str] = None, extra: Optional[dict] = None,
                     grid: Optional[str] = None, replace: Optional[dict[str, str]] = None) -> list[str]:
        """The body of the module's `launch()`: makes the arrays, launches,
        returns the outputs as numpy arrays."""
        lines = []
        for argument in self.arguments:
            if argument.kind == "array":
                lines.append(f"{argument.name} = {_array_text(argument.values, argument.dtype)}")
        arguments = []
        for argument in self.arguments:
            if argument.name == drop:
                continue
            text = argument.name if argument.kind == "array" else repr(argument.scalar)
            arguments.append((replace or {}).get(argument.name, text))
        keywords = {**{k: repr(v) for k, v in self.constexprs.items()},
                    **{k: repr(v) for k, v in self.block_params.items()}}
        for key, value in (extra or {}).items():
            keywords[key] = value
        for key in list(keywords):
            if key == drop:
                del keywords[key]
            elif replace and key in replace:
                keywords[key] = replace[key]
        call = ", ".join(arguments + [f"{k}={v}" for k, v in keywords.items()])
        lines.append(f"{KERNEL_NAME}[{grid or self.grid_text}]({call})")
        outputs = ", ".join(f'"{a.name}": _numpy({a.name})' for a in self.arguments
                            if a.name in ("out", "red"))
        lines.append(f"return {{{outputs}}}")
        return lines

    def module(self, body: list[str], launch: list[str], decorator: str) -> str:
        header = [f'"""Kiln fuzzer case, seed {self.seed}: run this file to compile and launch the kernel."""',
                  "import numpy as np", "import torch", "", "import kiln", "import kiln.language as kl", "", ""]
        parts = header + [h + "\n\n" for h in self.helpers]
        parts += [decorator, f"def {KERNEL_NAME}({', '.join(self.signature())}):"]
        parts += ["    " + line for line in body]
        parts += ["", "", "def _numpy(array):",
                  "    if isinstance(array, torch.Tensor):",
                  "        return array.to(torch.float64).numpy()",
                  "    return array", "", "",
                  "def launch():"]
        parts += ["    " + line for line in launch]
        parts += ["", "", 'if __name__ == "__main__":', "    print(launch())", ""]
        return "\n".join(parts)

    def body_lines(self) -> list[str]:
        return [line for statement in self.body for line in statement.lines]

    def finish(self, outputs: dict[str, DType]) -> Case:
        checked = self.rng.random() < 0.3
        decorator = "@kiln.jit(checked=True)" if checked else "@kiln.jit"
        source = self.module(self.body_lines(), self.launch_lines(), decorator)
        case = Case(self.seed, source, self.arguments, (self.programs,), "ok", "valid", checked=checked)
        try:
            case.outputs = self.expected(outputs)
        except ref.Trap as trap:
            case.unchecked = trap.reason
            case.outputs = {}
        self.decorator = decorator
        return case


def generate(seed: int) -> Case:
    """The case of `seed`: three in four are valid kernels, the others
    valid kernels with one mistake (`fuzz_invalid`)."""
    builder = KernelBuilder(seed)
    case = builder.build()
    if random.Random(seed * 7919 + 1).random() < 0.25:
        import fuzz_invalid
        return fuzz_invalid.mutate(builder, case)
    return case
