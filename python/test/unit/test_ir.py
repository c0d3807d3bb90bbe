"""kiln._C.ir: building, printing, verifying; bad input raises, never crashes."""

from __future__ import annotations

import gc

import pytest

from kiln import _C

ir = _C.ir


@pytest.fixture
def env():
    ctx = ir.Context()
    module = ir.Module.create(ctx)
    b = ir.Builder(ctx)
    fn = b.create_function(module, "k", [b.ptr_type(b.f32_type()), b.i32_type()], [], True)
    b.set_insertion_point_to_end(fn.add_entry_block())
    b.set_loc("kernel.py", 7, 3)
    return ctx, module, b, fn


def test_types(env):
    ctx, module, b, fn = env
    f32, i32 = b.f32_type(), b.i32_type()
    ptr = b.ptr_type(f32)
    block = b.block_type(ptr, [4, 8])
    assert str(ptr) == "!kiln.ptr<f32>" and ptr.is_ptr() and ptr.pointee == f32 and ptr.address_space == 1
    assert str(block) == "tensor<4x8x!kiln.ptr<f32>>" and block.is_block() and block.shape == [4, 8]
    assert block.element_type == ptr and not block.is_ptr()
    assert i32.is_int() and i32.int_width() == 32 and not i32.is_float() and b.bf16_type().is_float()
    assert str(b.function_type([i32], [f32])) == "(i32) -> f32"
    with pytest.raises(TypeError):
        f32.pointee
    with pytest.raises(ValueError):
        b.block_type(f32, [0])
    with pytest.raises(ValueError):
        b.block_type(f32, [])


def test_build_print_verify_with_locations(env):
    ctx, module, b, fn = env
    pid = b.program_id(0)
    offs = b.binary("addi", b.splat(pid, [16]), b.make_range(0, 16))
    ptrs = b.addptr(b.splat(fn.arg(0), [16]), offs)
    mask = b.cmpi("slt", offs, b.splat(fn.arg(1), [16]))
    x = b.load(ptrs, mask, b.float_const(0.0, b.block_type(b.f32_type(), [16])), "cg", "evict_first", False)
    b.store(ptrs, b.unary("exp", x), mask, "", "")
    b.create_return([])
    module.verify()
    text = module.str(debug_info=True)
    assert 'loc("kernel.py":7:3)' in text
    assert "kiln.load" in text and "math.exp" in text
    assert "loc(" not in module.str()


def test_scf_if_for_while(env):
    ctx, module, b, fn = env
    i32 = b.i32_type()
    zero, one = b.int_const(0, i32), b.int_const(1, i32)
    loop = b.create_for(zero, fn.arg(1), one, [zero])
    ip = b.get_insertion_point()
    b.set_insertion_point_to_end(loop.body)
    b.create_yield([b.binary("addi", loop.iter_args[0], loop.induction_var)])
    b.restore_insertion_point(ip)
    cond = b.cmpi("sgt", loop.results[0], zero)
    if_op = b.create_if(cond, [], True)
    if_op = b.set_if_results(if_op, [i32])
    for block, value in ((if_op.then_block, one), (if_op.else_block, zero)):
        b.set_insertion_point_to_end(block)
        b.create_yield([value])
    b.restore_insertion_point(ip)
    w = b.create_while([if_op.results[0]])
    b.set_insertion_point_to_end(w.before)
    b.create_condition(b.cmpi("slt", w.before.args[0], fn.arg(1)), list(w.before.args))
    b.set_insertion_point_to_end(w.after)
    b.create_yield([b.binary("addi", w.after.args[0], one)])
    b.restore_insertion_point(ip)
    b.create_return([])
    module.verify()
    text = module.str()
    assert "scf.for" in text and "scf.if" in text and "scf.while" in text


def test_function_call_and_attrs(env):
    ctx, module, b, fn = env
    i32 = b.i32_type()
    ip = b.get_insertion_point()
    helper = b.create_function(module, "helper", [i32], [], False)
    b.set_insertion_point_to_end(helper.add_entry_block())
    b.create_return([helper.arg(0)])
    helper.set_result_types([i32])
    b.restore_insertion_point(ip)
    results = b.create_call(helper, [fn.arg(1)])
    assert len(results) == 1 and results[0].type == i32
    b.create_return([])
    fn.set_unit_attr("kiln.kernel")
    fn.set_arg_attr(0, "kiln.divisibility", 16)
    module.verify()
    text = module.str()
    assert "func.func private @helper(%arg0: i32) -> i32" in text
    assert "{kiln.divisibility = 16 : i32}" in text and "attributes {kiln.kernel}" in text
    assert module.get_function("helper").name == "helper" and module.get_function("nope") is None
    with pytest.raises(ValueError, match="already has a symbol"):
        b.create_function(module, "helper", [], [], False)
    with pytest.raises(TypeError, match="expects i32"):
        b.create_call(helper, [b.float_const(1.0, b.f32_type())])
    with pytest.raises(ValueError, match="takes 1 arguments"):
        b.create_call(helper, [])


def test_bad_input_raises(env):
    ctx, module, b, fn = env
    f32, i32 = b.f32_type(), b.i32_type()
    x = b.float_const(1.0, f32)
    n = fn.arg(1)
    with pytest.raises(ValueError, match="unknown binary op"):
        b.binary("frobnicate", x, x)
    with pytest.raises(TypeError, match="integer operands"):
        b.binary("addi", x, x)
    with pytest.raises(TypeError, match="one type"):
        b.binary("addf", x, b.float_const(1.0, b.f64_type()))
    with pytest.raises(ValueError, match="unknown cmpi predicate"):
        b.cmpi("sometimes", n, n)
    with pytest.raises(TypeError, match="cannot cast"):
        b.cast("extf", b.float_const(1.0, b.f64_type()), f32)
    with pytest.raises(TypeError):
        b.cast("sitofp", x, f32)
    with pytest.raises(ValueError, match="does not fit in i8"):
        b.int_const(300, b.i8_type())
    with pytest.raises(ValueError):
        b.int_const(2**64, b.i64_type())
    with pytest.raises(TypeError):
        b.int_const(1, f32)
    with pytest.raises(ValueError, match="power-of-two"):
        b.make_range(0, 12)
    with pytest.raises(ValueError, match="axis"):
        b.program_id(3)
    with pytest.raises(TypeError, match="pointer"):
        b.load(n, None, None)
    with pytest.raises(TypeError, match="mask"):
        b.load(fn.arg(0), n, None)
    with pytest.raises(TypeError, match="needs a value of type f32"):
        b.store(fn.arg(0), n, None)
    with pytest.raises(ValueError, match="unknown cache modifier"):
        b.load(fn.arg(0), None, None, "bogus")
    with pytest.raises(ValueError, match="cannot broadcast"):
        b.broadcast(b.make_range(0, 4), [8])
    with pytest.raises(TypeError, match="scalar"):
        b.splat(b.make_range(0, 4), [4])
    with pytest.raises(TypeError, match="i1"):
        b.create_if(n, [], False)
    with pytest.raises(ValueError, match="else"):
        b.create_if(b.cmpi("eq", n, n), [i32], False)
    other = ir.Builder(ir.Context())
    with pytest.raises(ValueError, match="another context"):
        other.ptr_type(f32)
    assert (b.int_const(255, b.i8_type()) is not None and b.int_const(-1, b.i1_type()) is not None
            and b.int_const(2**64 - 1, b.i64_type()) is not None)


def test_no_insertion_point():
    ctx = ir.Context()
    b = ir.Builder(ctx)
    with pytest.raises(ValueError, match="no insertion point"):
        b.program_id(0)
    assert b.get_insertion_block() is None


def test_verify_raises_located_mlir_error(env):
    ctx, module, b, fn = env
    b.program_id(0)  # no terminator: the function body is invalid
    with pytest.raises(ir.MLIRError) as info:
        module.verify()
    assert info.value.step == "verification"
    severity, message, file, line, col = info.value.diagnostics[0]
    assert severity == "error" and (file, line, col) == ("kernel.py", 7, 3)


def test_parse(env):
    ctx = env[0]
    module = ir.Module.parse(ctx, "func.func @f(%p: !kiln.ptr<f32>) { return }")
    module.verify()
    assert "!kiln.ptr<f32>" in module.str()
    with pytest.raises(ir.MLIRError) as info:
        ir.Module.parse(ctx, "func.func @f() { %0 = bogus.op }")
    assert info.value.step == "parsing" and info.value.diagnostics


def test_handles_outlive_module_and_context():
    ctx = ir.Context()
    module = ir.Module.create(ctx)
    b = ir.Builder(ctx)
    fn = b.create_function(module, "k", [b.i32_type()], [], True)
    b.set_insertion_point_to_end(fn.add_entry_block())
    value = b.binary("addi", fn.arg(0), fn.arg(0))
    del module, ctx, fn
    gc.collect()
    assert str(value.type) == "i32"  # still alive through the value's owner
    assert "arith.addi" in str(value)
    assert value.type.is_int()


def test_replaced_if_is_not_usable(env):
    ctx, module, b, fn = env
    old = b.create_if(b.cmpi("eq", fn.arg(1), fn.arg(1)), [], True)
    b.set_if_results(old, [])
    with pytest.raises(ValueError, match="replaced"):
        old.then_block


def test_fp8_decode_and_fp8_dot_formats(env):
    ctx, module, b, fn = env
    bytes_ = b.splat(b.int_const(0x38, b.i8_type()), [16, 16])
    decoded = b.fp8_to_f32(bytes_, "e4m3")
    assert str(decoded.type) == "tensor<16x16xf32>"
    with pytest.raises(TypeError, match="decodes i8 bytes"):
        b.fp8_to_f32(decoded, "e4m3")
    with pytest.raises(ValueError, match="unknown 8-bit float format 'e3m4'"):
        b.fp8_to_f32(bytes_, "e3m4")
    acc = b.float_const(0.0, b.block_type(b.f32_type(), [16, 16]))
    with pytest.raises(ValueError, match="unknown 8-bit float format"):
        b.dot(bytes_, bytes_, acc, "ieee", 16, "e4m3", "fp8")
    d = b.dot(bytes_, bytes_, acc, "ieee", 16, "e4m3", "e5m2")
    assert str(d.type) == "tensor<16x16xf32>"
