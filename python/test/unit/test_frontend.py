"""The frontend builds the expected kiln-dialect IR (no GPU needed)."""

from __future__ import annotations

import inspect
import re

import pickle

import pytest

import kiln.language as kl
from kiln.errors import CompilationError

VECTOR_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


def line_of(kernel, text: str) -> int:
    """The file line number of the first line of `kernel` containing `text`."""
    fn = getattr(kernel, "fn", kernel)
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(f"{text!r} not in the kernel")


def ops(module) -> list[str]:
    """Op names in print order (without results and types)."""
    return re.findall(r"\b(kiln\.[a-z_]+|arith\.[a-z_]+|scf\.[a-z_]+|func\.[a-z_]+|math\.[a-z_0-9]+)\b",
                      module.str())


def test_vector_add(jit, build_ir):
    @jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
        pid = kl.program_id(0)
        offs = pid * BLOCK + kl.arange(0, BLOCK)
        mask = offs < n
        kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)

    module = build_ir(add_kernel, VECTOR_SIG, {"BLOCK": 1024}, divisible_by_16=("x_ptr", "n"))
    text = module.str()
    assert "func.func public @add_kernel" in text or "func.func @add_kernel" in text
    assert "attributes {kiln.kernel}" in text
    assert "%0 = kiln.program_id {axis = 0 : i32} : i32" in text
    assert "arith.constant 1024 : i32" in text
    assert re.search(r"arith\.muli %0, %c1024_i32 : i32", text)
    assert "kiln.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>" in text
    assert re.search(r"arith\.addi .* : tensor<1024xi32>", text)
    assert re.search(r"arith\.cmpi slt, .* : tensor<1024xi32>", text)
    assert "kiln.splat %x_ptr : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>>" in text
    assert "kiln.addptr" in text
    assert text.count("kiln.load") == 2
    assert re.search(r"kiln\.load %\d+, %\d+ : tensor<1024x!kiln.ptr<f32>> -> tensor<1024xf32>", text)
    assert "arith.addf" in text
    assert re.search(r"kiln\.store %\d+, %\d+, %\d+ : tensor<1024x!kiln.ptr<f32>>, tensor<1024xf32>", text)
    assert "return" in text
    # Divisibility on the specialized pointer and integer only.
    assert "%x_ptr: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}" in text
    assert "%n: i32 {kiln.divisibility = 16 : i32}" in text
    assert "%y_ptr: !kiln.ptr<f32>," in text


def test_locations_name_source_lines(jit, build_ir):
    @jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
        pid = kl.program_id(0)
        offs = pid * BLOCK + kl.arange(0, BLOCK)
        mask = offs < n
        kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask), mask=mask)

    text = build_ir(add_kernel, VECTOR_SIG, {"BLOCK": 128}).str(debug_info=True)
    filename = __file__
    pid_line = line_of(add_kernel, "kl.program_id(0)")
    # `pid = kl.program_id(0)` is indented 8 spaces: the call starts at column 15.
    assert f'loc("{filename}":{pid_line}:15)' in text
    assert f'"{filename}":{line_of(add_kernel, "mask = offs < n")}:' in text
    range_line = line_of(add_kernel, "kl.arange(0, BLOCK)")
    assert re.search(r'kiln\.make_range .* loc\(#loc\d+\)', text)
    assert f'"{filename}":{range_line}:30)' in text


@pytest.mark.parametrize("sig,mlir", [
    ("*fp16", "f16"), ("*bf16", "bf16"), ("*fp32", "f32"), ("*fp64", "f64"),
    ("*i8", "i8"), ("*i16", "i16"), ("*i32", "i32"), ("*i64", "i64"),
    ("*u8", "i8"), ("*u16", "i16"), ("*u32", "i32"), ("*u64", "i64"), ("*i1", "i1"),
])
def test_each_pointer_dtype(jit, build_ir, sig, mlir):
    @jit
    def copy(src, dst, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        kl.store(dst + offs, kl.load(src + offs))

    text = build_ir(copy, {"src": sig, "dst": sig}, {"BLOCK": 16}).str()
    assert "kiln.load" in text
    assert f"-> tensor<16x{mlir}>" in text
    assert f"tensor<16x!kiln.ptr<{mlir}>>, tensor<16x{mlir}>" in text


@pytest.mark.parametrize("sig,mlir", [("i1", "i1"), ("i8", "i8"), ("i32", "i32"), ("i64", "i64"), ("u32", "i32"),
                                      ("fp16", "f16"), ("bf16", "bf16"), ("fp32", "f32"), ("fp64", "f64")])
def test_scalar_arguments(jit, build_ir, sig, mlir):
    @jit
    def kernel(out, value):
        kl.store(out, value)

    text = build_ir(kernel, {"out": "*" + sig, "value": sig}).str()
    assert f"%value: {mlir}" in text
    assert f"kiln.store %out, %value : !kiln.ptr<{mlir}>, {mlir}" in text


def test_scalar_promotion_int_float(jit, build_ir):
    @jit
    def kernel(out, a, b):
        kl.store(out, a + b)

    text = build_ir(kernel, {"out": "*fp32", "a": "i32", "b": "fp32"}).str()
    assert "arith.sitofp %a : i32 to f32" in text
    assert "arith.addf" in text


def test_unsigned_uses_unsigned_ops(jit, build_ir):
    @jit
    def kernel(out, a, b):
        kl.store(out, (a // b) + (a % b) + (a >> 1))
        kl.store(out, kl.where(a < b, a, b))

    text = build_ir(kernel, {"out": "*u32", "a": "u32", "b": "u32"}).str()
    for op in ("arith.divui", "arith.remui", "arith.shrui", "arith.cmpi ult"):
        assert op in text


def test_signed_floordiv_mod_truncate(jit, build_ir):
    @jit
    def kernel(out, a, b):
        kl.store(out, a // b + a % b)

    text = build_ir(kernel, {"out": "*i32", "a": "i32", "b": "i32"}).str()
    assert "arith.divsi" in text and "arith.remsi" in text


def test_int_true_division_is_fp32(jit, build_ir):
    @jit
    def kernel(out, a, b):
        kl.store(out, a / b)

    text = build_ir(kernel, {"out": "*fp32", "a": "i32", "b": "i32"}).str()
    assert text.count("arith.sitofp") == 2
    assert "arith.divf %0, %1 : f32" in text


@pytest.mark.parametrize("a,b,expected", [
    ("fp16", "fp32", "f32"), ("bf16", "fp16", "f32"), ("fp16", "fp16", "f16"), ("i8", "i32", "i32"),
    ("i32", "u32", "i32"), ("u64", "i32", "i64"), ("i16", "fp16", "f16"), ("fp64", "fp32", "f64"),
])
def test_promotion_table(jit, build_ir, a, b, expected):
    @jit
    def kernel(x, y, out):
        kl.store(out, (x * y).to(kl.float64))

    text = build_ir(kernel, {"x": a, "y": b, "out": "*fp64"}).str()
    assert re.search(rf"arith\.mul[if] .* : {expected}\n", text), text


def test_python_literals_adopt_tensor_type(jit, build_ir):
    @jit
    def kernel(out_i, out_f, a, x):
        kl.store(out_i, a + 3)
        kl.store(out_f, x * 2)
        kl.store(out_f, (a + 1.5).to(kl.float16))

    text = build_ir(kernel, {"out_i": "*i64", "out_f": "*fp16", "a": "i64", "x": "fp16"}).str()
    assert "arith.constant 3 : i64" in text
    assert "arith.constant 2.000000e+00 : f16" in text
    assert "arith.constant 1.500000e+00 : f32" in text


def test_broadcast_2d(jit, build_ir):
    @jit
    def kernel(ptr, M: kl.constexpr, N: kl.constexpr):
        rows = kl.arange(0, M)[:, None]
        cols = kl.arange(0, N)[None, :]
        kl.store(ptr + rows * N + cols, kl.zeros([M, N], dtype=kl.float32))

    text = build_ir(kernel, {"ptr": "*fp32"}, {"M": 16, "N": 32}).str()
    assert "kiln.expand_dims %0 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>" in text
    assert "tensor<32xi32> -> tensor<1x32xi32>" in text
    assert "kiln.broadcast" in text and "tensor<16x32xi32>" in text
    assert "dense<0.000000e+00> : tensor<16x32xf32>" in text


def test_constexpr_if_is_folded(jit, build_ir):
    @jit
    def kernel(out, USE_ONE: kl.constexpr):
        if USE_ONE:
            kl.store(out, 1.0)
        else:
            kl.store(out, 2.0)

    one = build_ir(kernel, {"out": "*fp32"}, {"USE_ONE": True}).str()
    two = build_ir(kernel, {"out": "*fp32"}, {"USE_ONE": False}).str()
    assert "scf.if" not in one and "1.000000e+00" in one and "2.000000e+00" not in one
    assert "2.000000e+00" in two and "1.000000e+00" not in two


def test_runtime_if_yields_assigned_variables(jit, build_ir):
    @jit
    def kernel(out, a, b):
        x = a
        if a > b:
            x = a * 2
            y = 1
        else:
            y = 2.0
            pass
        kl.store(out, x + y)

    text = build_ir(kernel, {"out": "*fp32", "a": "fp32", "b": "fp32"}).str()
    assert re.search(r"%\d+:2 = scf\.if %\d+ -> \(f32, f32\)", text), text
    assert text.count("scf.yield") == 2


def test_runtime_if_without_else(jit, build_ir):
    @jit
    def kernel(out, a):
        if a > 0:
            kl.store(out, a)

    text = build_ir(kernel, {"out": "*i32", "a": "i32"}).str()
    assert "scf.if" in text
    assert "kiln.store" in text


def test_runtime_for_with_carried_values(jit, build_ir):
    @jit
    def kernel(x_ptr, out, n, BLOCK: kl.constexpr):
        acc = kl.zeros([BLOCK], dtype=kl.float32)
        offs = kl.arange(0, BLOCK)
        for i in range(0, n, BLOCK):
            acc += kl.load(x_ptr + i + offs, mask=i + offs < n, other=0.0)
        kl.store(out + offs, acc)

    text = build_ir(kernel, {"x_ptr": "*fp32", "out": "*fp32", "n": "i32"}, {"BLOCK": 64}).str()
    assert re.search(r"scf\.for %arg\d+ = %c0_i32 to %n step %c64_i32 iter_args\(%arg\d+ = %cst\) -> "
                     r"\(tensor<64xf32>\)", text), text
    assert "scf.yield" in text
    assert "kiln.store" in text


def test_kl_range_and_scalar_accumulator(jit, build_ir):
    @jit
    def kernel(out, n):
        total = 0
        for i in kl.range(n):
            total += i
        kl.store(out, total)

    text = build_ir(kernel, {"out": "*i32", "n": "i32"}).str()
    assert re.search(r"scf\.for .* iter_args\(%arg\d+ = %c0_i32\w*\) -> \(i32\)", text)


def test_static_range_unrolls(jit, build_ir):
    @jit
    def kernel(out, N: kl.constexpr):
        acc = 0.0
        for i in kl.static_range(N):
            acc = acc + i
        kl.store(out, acc)

    text = build_ir(kernel, {"out": "*fp32"}, {"N": 3}).str()
    assert "scf.for" not in text


def test_while_loop(jit, build_ir):
    @jit
    def kernel(out, n):
        i = 0
        while i < n:
            i = i + 2
        kl.store(out, i)

    text = build_ir(kernel, {"out": "*i32", "n": "i32"}).str()
    assert "scf.while" in text and "scf.condition" in text


def test_nested_jit_call(jit, build_ir):
    @jit
    def scale(x, factor: kl.constexpr):
        return x * factor

    @jit
    def kernel(ptr, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        kl.store(ptr + offs, scale(kl.load(ptr + offs), 3.0))
        kl.store(ptr + offs, scale(kl.load(ptr + offs), 3.0))
        kl.store(ptr + offs, scale(kl.load(ptr + offs), 4.0))

    text = build_ir(kernel, {"ptr": "*fp32"}, {"BLOCK": 32}).str()
    private = re.findall(r"func\.func private @(\w+)\(%arg0: tensor<32xf32>.*\) -> tensor<32xf32>", text)
    assert len(private) == 2, text  # one per constexpr value, reused
    assert text.count("call @") == 3



def test_runtime_value_for_a_constexpr_parameter_of_a_called_function(jit, build_ir):
    # As in Triton: the annotation of a called function's parameter does not
    # make a block passed there a compile-time value; it stays an argument.
    @jit
    def shifted(x, offs: kl.constexpr, N: kl.constexpr):
        return x + offs * N

    @jit
    def kernel(ptr, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        kl.store(ptr + offs, shifted(kl.load(ptr + offs), offs, 2))

    text = build_ir(kernel, {"ptr": "*fp32"}, {"BLOCK": 32}).str()
    assert re.search(r"func\.func private @shifted\w*\(%arg0: tensor<32xf32>, %arg1: tensor<32xi32>\)", text), text

def test_list_arguments_specialize_on_constants_and_pass_runtime_values(jit, build_ir):
    @jit
    def offsets(sizes):
        return kl.arange(0, sizes[1]) + sizes[0]

    @jit
    def kernel(ptr, n):
        kl.store(ptr + offsets([n, 16]), 1.0)
        kl.store(ptr + offsets([n, 32]), 2.0)
        kl.store(ptr + offsets([n, 16]), 3.0)

    text = build_ir(kernel, {"ptr": "*fp32", "n": "i32"}).str()
    helpers = re.findall(r"func\.func private @(\w+)\(%arg0: i32\) -> tensor<(\d+)xi32>", text)
    assert sorted(size for _, size in helpers) == ["16", "32"], text
    assert text.count("call @") == 3


def test_nested_call_with_tuple_return(jit, build_ir):
    @jit
    def divmod_(a, b):
        return a // b, a % b

    @jit
    def kernel(out, a, b):
        q, r = divmod_(a, b)
        kl.store(out, q + r)

    text = build_ir(kernel, {"out": "*i32", "a": "i32", "b": "i32"}).str()
    assert re.search(r"func\.func private @divmod___i32_i32\(%arg0: i32, %arg1: i32\) -> \(i32, i32\)", text)


def test_equal_to_1_uses_constant(jit, build_ir):
    @jit
    def kernel(ptr, stride, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK) * stride
        kl.store(ptr + offs, 0.0)

    text = build_ir(kernel, {"ptr": "*fp32", "stride": "i32"}, {"BLOCK": 8}, equal_to_1=("stride",)).str()
    assert "%stride: i32" in text  # still in the signature
    assert "%stride" not in text.split("attributes {kiln.kernel} {", 1)[1]  # unused in the body


def test_global_constexpr(jit, build_ir):
    @jit
    def kernel(out):
        kl.store(out, GLOBAL_FACTOR * 2)

    text = build_ir(kernel, {"out": "*i32"}).str()
    assert "arith.constant 42 : i32" in text


GLOBAL_FACTOR = kl.constexpr(21)


def test_casts_and_math(jit, build_ir):
    @jit
    def kernel(out, x, i):
        y = kl.exp(x) + kl.sqrt(x) + kl.abs(x)
        z = y.to(kl.float16).to(kl.float32) + i.to(kl.float32) + kl.cast(x, kl.int32).to(kl.float32)
        kl.store(out, kl.maximum(z, 0.0) + kl.minimum(z, 1.0) + kl.where(x > 0, x, -x))

    text = build_ir(kernel, {"out": "*fp32", "x": "fp32", "i": "i64"}).str()
    for op in ("math.exp", "math.sqrt", "math.absf", "arith.truncf", "arith.extf", "arith.sitofp",
               "arith.fptosi", "arith.maxnumf", "arith.minnumf", "arith.select", "arith.negf"):
        assert op in text, op


def test_bool_ops_and_comparisons(jit, build_ir):
    @jit
    def kernel(out, a, b, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        m = (offs < a) & (offs >= b) | ~(offs == 3)
        if a > 0 and b > 0:
            kl.store(out + offs, 1, mask=m)

    text = build_ir(kernel, {"out": "*i32", "a": "i32", "b": "i32"}, {"BLOCK": 16}).str()
    assert "arith.andi" in text and "arith.ori" in text and "arith.xori" in text and "scf.if" in text


def test_pow_constexpr(jit, build_ir):
    @jit
    def kernel(out, x):
        kl.store(out, x ** 3)

    text = build_ir(kernel, {"out": "*fp32", "x": "fp32"}).str()
    assert text.count("arith.mulf") == 2


def test_load_store_hints_and_other(jit, build_ir):
    @jit
    def kernel(p, n, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        x = kl.load(p + offs, mask=offs < n, other=1.0, cache_modifier=".cg", eviction_policy="evict_last",
                    volatile=True)
        kl.store(p + offs, x, mask=offs < n, cache_modifier=".wt")

    text = build_ir(kernel, {"p": "*fp16", "n": "i32"}, {"BLOCK": 16}).str()
    assert "cache = #kiln.cache<cg>" in text and "evict = #kiln.evict<evict_last>" in text
    assert "isVolatile" in text and "cache = #kiln.cache<wt>" in text
    assert "dense<1.000000e+00> : tensor<16xf16>" in text or "kiln.splat" in text


def test_cache_modifier_checked_by_the_op_verifier(jit, build_ir):
    """A cache modifier the access does not take is the kiln op verifier's
    error (the same for every backend), reported at the call's line."""
    @jit
    def load_wb(p):
        x = kl.load(p, cache_modifier=".wb")
        kl.store(p, x)

    @jit
    def store_ca(p):
        x = kl.load(p, cache_modifier=".cv")
        kl.store(p, x, cache_modifier=".ca")

    with pytest.raises(CompilationError, match="cache modifier 'wb' is not valid for a load") as load_error:
        build_ir(load_wb, {"p": "*fp32"})
    assert 'cache_modifier=".wb"' in load_error.value.source_line
    with pytest.raises(CompilationError, match="cache modifier 'ca' is not valid for a store"):
        build_ir(store_ca, {"p": "*fp32"})


def test_num_programs_and_cdiv(jit, build_ir):
    @jit
    def kernel(out, n, BLOCK: kl.constexpr):
        blocks = kl.cdiv(n, BLOCK)
        kl.store(out, kl.num_programs(1) + blocks + kl.cdiv(10, 4))

    text = build_ir(kernel, {"out": "*i32", "n": "i32"}, {"BLOCK": 8}).str()
    assert "kiln.num_programs {axis = 1 : i32}" in text
    assert "arith.divsi" in text
    assert "arith.constant 3 : i32" in text


def test_docstring_and_pass(jit, build_ir):
    @jit
    def kernel(out):
        """A docstring is not code."""
        pass
        kl.store(out, 0)

    assert "kiln.store" in build_ir(kernel, {"out": "*i32"}).str()


def test_module_parses_back(jit, build_ir):
    from kiln import _C

    @jit
    def kernel(out, n):
        for i in range(n):
            kl.store(out + i, i)

    module = build_ir(kernel, {"out": "*i32", "n": "i32"})
    again = _C.ir.Module.parse(module.context, module.str(debug_info=True))
    again.verify()
    assert again.str() == module.str()


def test_builtins_outside_kernel_raise():
    from kiln.errors import KilnError
    with pytest.raises(KilnError, match="inside a @kiln.jit function"):
        kl.program_id(0)
    with pytest.raises(KilnError, match="inside a @kiln.jit function"):
        kl.load(None)


def test_compilation_error_format():
    err = CompilationError("boom", "k.py", 3, 5, "    x = y + z\n")
    assert str(err) == "k.py:3:5: error:\n    x = y + z\n    ^\nboom"
    assert (err.filename, err.lineno, err.col, err.source_line) == ("k.py", 3, 5, "    x = y + z")
    # Inside a known function, Triton's position in it too (def line 1,
    # 0-based column); the message stays last, as Triton's.
    err = CompilationError("boom", "k.py", 3, 5, "    x = y + z", function="k", fn_lineno=2, fn_col=4)
    assert str(err) == "k.py:3:5: error in k at 2:4:\n    x = y + z\n    ^\nboom"
    assert str(pickle.loads(pickle.dumps(err))) == str(err)
    assert str(CompilationError("boom")) == "boom" and CompilationError("boom").error_message == "boom"


def test_helper_named_like_kernel_gets_own_symbol(jit, build_ir):
    namespace: dict = {"kl": kl}
    exec("def kernel(x):\n    return x + 1\n", namespace)  # another function called `kernel`
    other = namespace["kernel"]
    other_src = "def kernel(x):\n    return x + 1\n"

    class Helper:
        fn = staticmethod(other)
        src = other_src
        __name__ = "kernel"
        arg_names = ["x"]
        constexpr_names: set = set()
        __globals__ = namespace

    helper = Helper()

    @jit
    def kernel(out, a):
        kl.store(out, helper(a))

    text = build_ir(kernel, {"out": "*i32", "a": "i32"}).str()
    assert "func.func @kernel(" in text
    assert "func.func private @kernel__i32(" in text


def test_variables_first_defined_in_loop_are_local_to_it(jit, build_ir):
    @jit
    def kernel(out, n):
        for i in range(n):
            tmp = i * 2
        kl.store(out, tmp)

    with pytest.raises(CompilationError, match="name 'tmp' is not defined"):
        build_ir(kernel, {"out": "*i32", "n": "i32"})


def test_dtype_constructors_in_kernel(jit, build_ir):
    @jit
    def kernel(out, p):
        q = kl.pointer_type(kl.int8)
        kl.static_assert(q.element_ty == kl.int8)
        kl.store(out, p)

    assert "kiln.store" in build_ir(kernel, {"out": "*i8", "p": "i8"}).str()
