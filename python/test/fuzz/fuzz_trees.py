"""The fuzzer's typed expression trees over blocks and scalars, its cases
(a module's text, launch arguments and expected outputs) and the generator
of random expressions that `fuzz_generator.KernelBuilder` builds kernels
from."""

from __future__ import annotations

import operator
import random
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

import fuzz_reference as ref
from fuzz_reference import DType, Value



# ---------------------------------------------------------------------------
# Expression trees
# ---------------------------------------------------------------------------


class Node:
    """An expression: its kl type, shape, source text and reference value."""

    dtype: DType
    shape: tuple[int, ...]

    def source(self) -> str:
        raise NotImplementedError

    def evaluate(self, env: dict[str, Value]) -> Value:
        raise NotImplementedError


@dataclass
class Var(Node):
    name: str
    dtype: DType
    shape: tuple[int, ...]
    text: Optional[str] = None  # e.g. "xr[:, None]" for a broadcast view

    def source(self) -> str:
        return self.text or self.name

    def evaluate(self, env: dict[str, Value]) -> Value:
        value = env[self.name]
        if self.text is not None and value.shape != self.shape:
            value = ref.expand(value, 1 if self.text.endswith("[:, None]") else 0)
        return value


@dataclass
class Binary(Node):
    """`a op b`, with an optional Python literal on one side."""

    op: str
    a: Node
    b: Node
    dtype: DType = field(init=False)
    shape: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.dtype = binary_type(self.op, self.a.dtype, self.b.dtype)
        self.shape = tuple(np.broadcast_shapes(self.a.shape, self.b.shape))

    def source(self) -> str:
        return f"({self.a.source()} {self.op} {self.b.source()})"

    def evaluate(self, env: dict[str, Value]) -> Value:
        a, b = self.a.evaluate(env), self.b.evaluate(env)
        if self.op in COMPARISONS:
            return ref.compare(self.op, a, b, ref.computation_type(a.dtype, b.dtype))
        if self.op == "/" and a.dtype.is_int and b.dtype.is_int:
            a, b = ref.cast(a, ref.FLOAT32), ref.cast(b, ref.FLOAT32)
        ty = ref.computation_type(a.dtype, b.dtype, self.op in ("/", "//", "%"))
        return ref.binary(self.op, a, b, ty)


@dataclass
class Literal(Node):
    """A Python number written in the kernel, typed by its neighbour."""

    value: object
    dtype: DType
    shape: tuple[int, ...] = ()
    text: Optional[str] = None  # a constexpr parameter's name

    def source(self) -> str:
        return self.text or repr(self.value)

    def evaluate(self, env: dict[str, Value]) -> Value:
        # An unrolled loop's variable takes its value from the iteration.
        value = int(env[self.text].v) if self.text in env else self.value
        return ref.make(self.dtype, np.array(value, dtype=object if not self.dtype.is_float else np.float64))


@dataclass
class Call(Node):
    """`kl.fn(args...)` or a method; `evaluate_fn` gives the reference."""

    text: str  # format string over the arguments' sources: "kl.exp({0})"
    args: list[Node]
    dtype: DType
    shape: tuple[int, ...]
    evaluate_fn: Callable[..., Value]

    def source(self) -> str:
        return self.text.format(*(a.source() for a in self.args))

    def evaluate(self, env: dict[str, Value]) -> Value:
        return self.evaluate_fn(*(a.evaluate(env) for a in self.args))


COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
PYTHON_COMPARISONS: dict[str, Callable[[int, int], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
# Conditions on a loop's variable, as written and as evaluated.
LOOP_TESTS: tuple[tuple[str, Callable[[int], bool]], ...] = (
    ("{0} % 2 == 0", lambda i: i % 2 == 0), ("{0} > 0", lambda i: i > 0), ("{0} == 1", lambda i: i == 1))
ARITHMETIC = ("+", "-", "*", "/", "//", "%")
BITWISE = ("&", "|", "^", "<<", ">>")


def binary_type(op: str, a: DType, b: DType) -> DType:
    if op in COMPARISONS:
        return ref.INT1
    if op == "/" and a.is_int and b.is_int:
        return ref.FLOAT32
    return ref.computation_type(a, b, op in ("/", "//", "%"))


def literal_node(value: object, other: Node) -> Literal:
    ty = other.dtype
    if isinstance(value, int) and ty.is_int and ty.kind != "b":
        # A literal takes an integer neighbour's type and must fit it (as in
        # Triton): one that would not is wrapped into its range.
        lo, hi = ty.bounds
        value = lo + (value - lo) % (hi - lo + 1)
    return Literal(value, ref.literal_type(value, ty))


def same_signedness(a: Node, b: Node) -> tuple[Node, Node]:
    """Operands of /, // or % made both signed or both unsigned: the
    language refuses to divide a signed integer by an unsigned one (or the
    reverse). A literal becomes 7, which fits every type; otherwise b is
    cast to a's type."""
    ta, tb = a.dtype, b.dtype
    if not (ta.is_int and tb.is_int) or "b" in (ta.kind, tb.kind) or (ta.kind == "u") == (tb.kind == "u"):
        return a, b
    if isinstance(a, Literal):
        return literal_node(7, b), b
    if isinstance(b, Literal):
        return a, literal_node(7, a)
    return a, cast_node(b, ta)


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------


@dataclass
class Argument:
    """One kernel argument: an array (pointer), a scalar or a constexpr."""

    name: str
    kind: str  # "array", "int", "float", "constexpr"
    dtype: Optional[DType] = None
    values: Optional[np.ndarray] = None  # arrays: float64 or object (ints)
    scalar: object = None


@dataclass
class Case:
    """A generated kernel and how to launch and check it."""

    seed: int
    source: str
    arguments: list[Argument]
    grid: object
    expect: str  # "ok", "error" (compile or launch), "ok-or-error"
    what: str  # the mutation of an invalid case, or "valid"
    # Expected contents of each output array, by argument name: (dtype, Value).
    outputs: dict[str, tuple[DType, Value]] = field(default_factory=dict)
    known: Optional[str] = None  # a known issue the case may run into
    unchecked: Optional[str] = None  # why the output is not compared, if it is not
    checked: bool = False  # launch with bounds checks (KILN_CPU_CHECKED)
    launch_extra: dict = field(default_factory=dict)  # extra keyword arguments
    launch_drop: Optional[str] = None  # an argument left out of the launch
    # Lines of `source` that a compile error of an invalid case may name
    # (None: any line of the kernel or its helpers).
    error_lines: Optional[list[int]] = None


def _data(rng: random.Random, ty: DType, size: int) -> np.ndarray:
    """Random elements exactly representable in `ty`: mostly small, with
    the type's extremes now and then (integers) to exercise wrapping."""
    if ty.kind == "b":
        return np.array([rng.randint(0, 1) for _ in range(size)], dtype=object)
    if ty.is_float:
        scale = rng.choice((0.25, 0.5, 1.0))
        span = 8 if ty.bits == 16 else rng.choice((8, 64))
        values = np.array([rng.randint(-span * 4, span * 4) * scale / 4 for _ in range(size)], dtype=np.float64)
        if ty.name == "bfloat16":
            import torch
            values = torch.tensor(values).to(torch.bfloat16).to(torch.float64).numpy()
        elif ty.name == "float16":
            values = values.astype(np.float16).astype(np.float64)
        return values
    lo, hi = ty.bounds
    out = []
    for _ in range(size):
        roll = rng.random()
        if roll < 0.05:
            out.append(lo)
        elif roll < 0.10:
            out.append(hi)
        else:
            out.append(max(lo, min(hi, rng.randint(-100, 100))))
    return np.array(out, dtype=object)


class Generator:
    """Builds one case from a seeded random source."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.lines: list[str] = []
        self.helpers: list[str] = []
        self.helper_count = 0
        self.temp_count = 0

    # -- leaves -------------------------------------------------------------

    def pick_dtype(self, floats: Optional[bool] = None) -> DType:
        if floats is None:
            return self.rng.choice(ref.ALL)
        return self.rng.choice(ref.FLOATS if floats else ref.INTEGERS)

    def leaf(self, scope: list[Var], shape: tuple[int, ...]) -> Node:
        fitting = [v for v in scope if _broadcasts(v.shape, shape)]
        # Favour the temporaries, so that statements build on each other.
        temporaries = [v for v in fitting if v.name.startswith("t")]
        if temporaries and self.rng.random() < 0.5:
            return self.rng.choice(temporaries)
        return self.rng.choice(fitting)

    # -- expressions --------------------------------------------------------

    def expression(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        """A random valid expression whose shape broadcasts to `shape`."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.2:
            return self.leaf(scope, shape)
        roll = rng.random()
        if roll < 0.35:
            return self.arithmetic(scope, shape, depth)
        if roll < 0.45:
            return self.bitwise(scope, shape, depth)
        if roll < 0.55:
            return self.conversion(scope, shape, depth)
        if roll < 0.65:
            return self.math(scope, shape, depth)
        if roll < 0.75:
            return self.select(scope, shape, depth)
        if roll < 0.82:
            return self.extreme(scope, shape, depth)
        if roll < 0.88:
            return self.unary(scope, shape, depth)
        if roll < 0.93:
            return self.reduction(scope, shape, depth)
        if roll < 0.97:
            return self.rearrangement(scope, depth)
        return self.creation(shape)

    def operand(self, scope: list[Var], shape: tuple[int, ...], depth: int, other: Optional[Node] = None) -> Node:
        if other is not None and self.rng.random() < 0.25:
            return self.literal_for(other)
        return self.expression(scope, shape, depth - 1)

    def literal_for(self, other: Node) -> Literal:
        rng = self.rng
        if other.dtype.is_float or rng.random() < 0.15:
            return literal_node(rng.choice((0.5, 1.0, 2.0, -3.0, 0.25, 1.5)), other)
        value = rng.choice((0, 1, 2, 3, 5, 7, -1, -2, 16, 100, 127, 255, 300, 40000, 2**31 + 5))
        return literal_node(value, other)

    def arithmetic(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        rng = self.rng
        op = rng.choice(ARITHMETIC + ("+", "-", "*"))
        a = self.expression(scope, shape, depth - 1)
        if op in ("//", "%"):
            b = self.divisor(scope, shape, depth, a)
            if op == "//" and (a.dtype.is_float or b.dtype.is_float):
                a = self.as_int(a)
                b = self.divisor(scope, shape, depth, a, ints=True)
        else:
            b = self.operand(scope, shape, depth, a)
        if op not in ("//", "%") and rng.random() < 0.5:
            a, b = b, a
        if isinstance(a, Literal) and isinstance(b, Literal):
            a = self.leaf(scope, shape)
        if op in ("/", "//", "%"):
            a, b = same_signedness(a, b)
        return Binary(op, a, b)

    def divisor(self, scope: list[Var], shape: tuple[int, ...], depth: int, dividend: Node,
                ints: bool = False) -> Node:
        """A divisor that is mostly never zero (a zero gives an unspecified
        value, which the reference does not compare, but must not trap)."""
        rng = self.rng
        if rng.random() < 0.3:
            return literal_node(rng.choice((1, 2, 3, 7, 16, -5)), dividend)
        base = self.expression(scope, shape, depth - 1)
        if base.dtype.is_float and not ints:
            return base
        base = self.as_int(base)
        if rng.random() < 0.1:
            return base
        # (b | 1) is odd, never zero; for a signed type -1 is still possible,
        # so INT_MIN // -1 stays reachable.
        odd = Binary("|", base, literal_node(1, base))
        if rng.random() < 0.5:
            shifted = Binary("&", base, literal_node(6, base))
            return Binary("+", shifted, literal_node(1, shifted))
        return odd

    def as_int(self, node: Node) -> Node:
        if node.dtype.is_int and node.dtype.kind != "b":
            return node
        ty = self.pick_dtype(floats=False)
        return cast_node(node, ty)

    def bitwise(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        rng = self.rng
        op = rng.choice(BITWISE)
        a = self.as_int(self.expression(scope, shape, depth - 1))
        if op in ("<<", ">>"):
            amount = rng.choice((0, 1, 3, 7))
            if rng.random() < 0.5:
                return Binary(op, a, literal_node(amount, a))
            b = self.as_int(self.expression(scope, shape, depth - 1))
            width = ref.computation_type(a.dtype, b.dtype).bits
            # Keep the amount in range so the result is defined (an
            # out-of-range amount is undefined and merely not compared).
            return Binary(op, a, Binary("&", b, literal_node(width - 1 if rng.random() < 0.9 else 127, b)))
        b = self.operand(scope, shape, depth, a)
        if not b.dtype.is_int or isinstance(b, Literal) and isinstance(b.value, float):
            b = self.as_int(self.expression(scope, shape, depth - 1))
        return Binary(op, a, b)

    def conversion(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        node = self.expression(scope, shape, depth - 1)
        target = ref.INT1 if self.rng.random() < 0.08 else self.pick_dtype()
        return cast_node(node, target, style=self.rng.choice(("to", "cast")))

    def math(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        rng = self.rng
        name = rng.choice(tuple(ref.MONOTONE) + tuple(ref.PERIODIC))
        x = self.expression(scope, shape, depth - 1)
        if not x.dtype.is_float:
            x = cast_node(x, self.pick_dtype(floats=True))
        if name in ("exp", "exp2", "sigmoid"):
            # Keep exp's argument small enough that the result is finite in
            # the narrow types more often than not.
            x = Call("kl.minimum({0}, 8.0)", [x], x.dtype, x.shape,
                     lambda a: ref.binary("min", a, ref.make(a.dtype, np.array(8.0)), a.dtype))
        return Call(f"kl.{name}({{0}})", [x], x.dtype, x.shape, lambda a, name=name: ref.math_function(name, a))

    def select(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        condition = self.condition(scope, shape, depth - 1)
        a = self.expression(scope, shape, depth - 1)
        b = self.operand(scope, shape, depth, a)
        if isinstance(b, Literal) and isinstance(a, Literal):
            a = self.leaf(scope, shape)
        ty = ref.computation_type(a.dtype, b.dtype)
        shape_out = tuple(np.broadcast_shapes(condition.shape, a.shape, b.shape))
        return Call("kl.where({0}, {1}, {2})", [condition, a, b], ty, shape_out,
                    lambda c, x, y: ref.where(c, x, y, ref.computation_type(x.dtype, y.dtype)))

    def condition(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        rng = self.rng
        a = self.expression(scope, shape, depth - 1)
        b = self.operand(scope, shape, depth, a)
        if isinstance(a, Literal) and isinstance(b, Literal):
            a = self.leaf(scope, shape)
        node: Node = Binary(rng.choice(COMPARISONS), a, b)
        if rng.random() < 0.2:
            other = Binary(rng.choice(COMPARISONS), self.leaf(scope, shape), self.literal_for_int(3))
            node = Binary(rng.choice(("&", "|", "^")), node, other)
        return node

    def literal_for_int(self, value: int) -> Literal:
        return Literal(value, ref.INT32)

    def extreme(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        name = self.rng.choice(("maximum", "minimum"))
        a = self.expression(scope, shape, depth - 1)
        b = self.expression(scope, shape, depth - 1)
        ty = ref.computation_type(a.dtype, b.dtype)
        shape_out = tuple(np.broadcast_shapes(a.shape, b.shape))
        op = "max" if name == "maximum" else "min"
        return Call(f"kl.{name}({{0}}, {{1}})", [a, b], ty, shape_out,
                    lambda x, y, op=op: ref.binary(op, x, y, ref.computation_type(x.dtype, y.dtype)))

    def unary(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        rng = self.rng
        a = self.expression(scope, shape, depth - 1)
        kind = rng.choice(("-", "~", "abs"))
        if a.dtype.kind == "b":
            a = cast_node(a, ref.INT32)
        if kind == "-":
            return Call("(-{0})", [a], a.dtype, a.shape, ref.negate)
        if kind == "~":
            a = self.as_int(a)
            return Call("(~{0})", [a], a.dtype, a.shape, ref.invert)
        return Call("kl.abs({0})", [a], a.dtype, a.shape, ref.absolute)

    def reduction(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        """kl.sum/max/min of a full block, broadcast back to `shape`."""
        rng = self.rng
        full = self.block_shape
        x = self.expression(scope, full, depth - 1)
        x = self.fit(x, full)
        kind = rng.choice(("sum", "max", "min", "argmax", "argmin", "cumsum"))
        if x.dtype.kind == "b":
            x = cast_node(x, ref.INT32)
        if kind == "cumsum":
            axis = rng.choice(range(len(full)))
            return Call(f"kl.cumsum({{0}}, axis={axis})", [x], ref._sum_type(x.dtype), full,
                        lambda a, axis=axis: ref.cumsum(a, axis))
        if kind.startswith("arg"):
            return self.arg_reduction(kind, x)
        probe = ref.reduce(kind, ref.make(x.dtype, np.zeros((2,))), 0, False).dtype
        if len(full) == 1:
            text = f"kl.{kind}({{0}}, axis=0)" if rng.random() < 0.7 else f"kl.{kind}({{0}})"
            return Call(text, [x], probe, (), lambda a, kind=kind: ref.reduce(kind, a, 0, False))
        axis = rng.choice((0, 1))
        keep = rng.random() < 0.3
        out_shape = (1, full[1]) if axis == 0 else (full[0], 1)
        if keep:
            text = f"kl.{kind}({{0}}, axis={axis}, keep_dims=True)"
        else:
            text = f"kl.{kind}({{0}}, axis={axis})" + ("[None, :]" if axis == 0 else "[:, None]")
        return Call(text, [x], probe, out_shape, lambda a, kind=kind, axis=axis: ref.reduce(kind, a, axis, True))

    def rearrangement(self, scope: list[Var], depth: int) -> Node:
        """A shape op on a full block that gives a block of the same shape:
        flips, reshapes and transposes."""
        full = self.block_shape
        x = self.fit(self.expression(scope, full, depth - 1), full)
        forms: list[tuple[str, Callable[[np.ndarray], np.ndarray]]]
        if len(full) == 1:
            (b,) = full
            forms = [("kl.flip({0}, 0)", lambda v: np.flip(v, 0)),
                     ("kl.ravel(kl.expand_dims({0}, 0))", lambda v: v)]
            if b >= 2:
                half = (2, b // 2)
                forms += [(f"kl.reshape(kl.reshape({{0}}, {half}), ({b},))", lambda v: v),
                          (f"kl.ravel(kl.trans(kl.reshape({{0}}, {half})))", lambda v: v.reshape(half).T.ravel())]
        else:
            bm, bn = full
            forms = [("kl.flip({0}, 0)", lambda v: np.flip(v, 0)), ("kl.flip({0}, 1)", lambda v: np.flip(v, 1)),
                     (f"kl.reshape(kl.trans({{0}}), ({bm}, {bn}))", lambda v: v.T.reshape(full)),
                     (f"kl.reshape(kl.ravel({{0}}), ({bm}, {bn}))", lambda v: v),
                     (f"kl.reshape({{0}}, ({bm * bn},)).reshape({bm}, {bn})", lambda v: v)]
            if bm == bn:
                forms += [("kl.trans({0})", lambda v: v.T), ("kl.permute({0}, (1, 0))", lambda v: v.T)]
        text, fn = self.rng.choice(forms)
        return Call(text, [x], x.dtype, full, lambda a, fn=fn: ref.rearrange(a, fn))

    def arg_reduction(self, kind: str, x: Node) -> Node:
        full = self.block_shape
        axis = self.rng.choice(range(len(full)))
        if len(full) == 1:
            return Call(f"kl.{kind}({{0}}, axis=0)", [x], ref.INT32, (),
                        lambda a, kind=kind: ref.arg_extreme(kind, a, 0, False))
        out_shape = (1, full[1]) if axis == 0 else (full[0], 1)
        text = f"kl.{kind}({{0}}, axis={axis})" + ("[None, :]" if axis == 0 else "[:, None]")
        return Call(text, [x], ref.INT32, out_shape, lambda a, kind=kind, axis=axis: ref.arg_extreme(kind, a, axis, True))

    def creation(self, shape: tuple[int, ...]) -> Node:
        rng = self.rng
        ty = self.pick_dtype()
        shape = self.block_shape if rng.random() < 0.5 or not shape else shape
        dims = "[" + ", ".join(str(d) for d in shape) + "]"
        if rng.random() < 0.3:
            return Call(f"kl.zeros({dims}, kl.{ty.name})", [], ty, shape,
                        lambda ty=ty, shape=shape: ref.make(ty, np.zeros(shape, dtype=object if ty.is_int else float)))
        value = rng.choice((1, 2, -3, 7)) if ty.is_int else rng.choice((0.5, -2.0, 3.0))
        if ty.kind == "u" and value < 0:
            value = 5
        return Call(f"kl.full({dims}, {value!r}, kl.{ty.name})", [], ty, shape,
                    lambda ty=ty, shape=shape, value=value: ref.make(
                        ty, np.full(shape, value, dtype=object if ty.is_int else float)))

    def fit(self, node: Node, shape: tuple[int, ...]) -> Node:
        """`node` broadcast to exactly `shape`."""
        if node.shape == shape:
            return node
        dims = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
        return Call(f"kl.broadcast_to({{0}}, {dims})", [node], node.dtype, shape,
                    lambda a, shape=shape: ref.broadcast_to(a, shape))

    block_shape: tuple[int, ...] = ()


@dataclass
class HelperCall(Node):
    """`name(args...)`: a call of a generated helper whose body (over its
    parameters `a` and `b`) is `body`."""

    name: str
    args: list[Node]
    body: Node

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.body.dtype

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.body.shape

    def source(self) -> str:
        return f"{self.name}({', '.join(a.source() for a in self.args)})"

    def evaluate(self, env: dict[str, Value]) -> Value:
        return self.body.evaluate({"a": self.args[0].evaluate(env), "b": self.args[1].evaluate(env)})


def _broadcasts(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return tuple(np.broadcast_shapes(shape, target)) == tuple(target)
    except ValueError:
        return False


def cast_node(node: Node, ty: DType, style: str = "to") -> Node:
    text = f"{{0}}.to(kl.{ty.name})" if style == "to" else f"kl.cast({{0}}, kl.{ty.name})"
    if isinstance(node, Literal):
        text = f"kl.full([], {{0}}, kl.{node.dtype.name}).to(kl.{ty.name})"
    return Call(text, [node], ty, node.shape, lambda a, ty=ty: ref.cast(a, ty))
