"""The tensor maps of descriptors made in the kernel from its arguments:
what the launcher computes and encodes for a launch, from the recipes that
kiln-hoist-tensor-maps records (the driver's encoder replaced by a
recorder, so no GPU is needed)."""

import random
import sys
from pathlib import Path

import pytest
import torch

import kiln
import kiln.language as kl
from kiln import _C
from kiln.backends.tensor_maps import DerivedTensorMaps, TensorMapEncoder, derived_map_name, evaluate
from kiln.runtime import driver

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_attention_codegen import compile_forward_whole_descriptors  # noqa: E402


def arg(width, index):
    return ["arg", width, index]


@pytest.mark.parametrize("recipe, arguments, expected", [
    # Z * H * N_CTX in i32, as the kernel computes it: wraps past 2**31.
    (["mul", 32, arg(32, 0), arg(32, 1)], [3, 5], 15),
    (["mul", 32, arg(32, 0), arg(32, 1)], [1 << 16, 1 << 15], -(1 << 31)),
    (["sext", 64, ["mul", 32, arg(32, 0), arg(32, 1)]], [1 << 16, 1 << 16], 0),
    (["zext", 64, ["sub", 32, arg(32, 0), ["const", 32, 1]]], [0], (1 << 32) - 1),
    (["trunc", 8, ["add", 32, arg(32, 0), ["const", 32, 1]]], [255], 0),
    (["sext", 64, arg(32, 0)], [-7], -7),
])
def test_recipes_compute_what_the_kernel_computes(recipe, arguments, expected):
    assert evaluate(recipe, arguments) == expected


def test_an_unknown_recipe_operation_is_refused():
    with pytest.raises(ValueError, match="unknown tensor map recipe operation 'div'"):
        evaluate(["div", 32, ["const", 32, 4], ["const", 32, 2]], [])


@pytest.fixture
def encodings(monkeypatch):
    """The driver's encoder, replaced by one that records its arguments."""
    calls = []

    def record(address, shape, stride_bytes, box, element_bytes, bfloat16, swizzle_bytes, nan_fill):
        calls.append((address, shape, stride_bytes, box, element_bytes, bfloat16, swizzle_bytes, nan_fill))
        return bytes([len(calls)]) * 128

    monkeypatch.setattr(driver, "encode_tensor_map", record)
    return calls


def attention_launch(z, h, n_ctx):
    """Tutorial 06's bound arguments, in the signature's order."""
    q, k, v, out = (torch.empty((z, h, n_ctx, 128), dtype=torch.float16) for _ in range(4))
    m = torch.empty((z * h, n_ctx), dtype=torch.float32)
    return (0.5, m, z, h, q, k, v, out, n_ctx)


def test_a_launch_encodes_the_maps_its_copies_read(encodings):
    compiled = compile_forward_whole_descriptors(128, False, True)
    recipes, boxes = compiled.metadata["derived_tensor_maps"], compiled.metadata["tensor_maps"]
    maps = DerivedTensorMaps(recipes, TensorMapEncoder(boxes), list(range(9)), "attention")
    bound = attention_launch(2, 3, 256)
    encoded = maps.encode(bound)
    # Q's, K's and V's maps: the whole [Z * H * N_CTX, 128] arrays, rows of
    # 256 bytes, in the boxes of the copies (Q's those of an A slot).
    assert encoded == [bytes([1]) * 128, bytes([2]) * 128, bytes([3]) * 128]
    box_q, box_k, box_v = (boxes[derived_map_name(index)] for index in range(3))
    assert box_q[0] == 8 and box_k == box_v and box_k[0] == 128
    assert encodings == [(bound[4].data_ptr(), [2 * 3 * 256, 128], [256, 2], box_q[:2], 2, False, box_q[2], False),
                         (bound[5].data_ptr(), [2 * 3 * 256, 128], [256, 2], box_k[:2], 2, False, box_k[2], False),
                         (bound[6].data_ptr(), [2 * 3 * 256, 128], [256, 2], box_v[:2], 2, False, box_v[2], False)]
    # The same tensors again: encoded once.
    assert maps.encode(bound) == encoded and len(encodings) == 3


def test_a_map_no_copy_reads_is_zero_bytes_without_a_driver_call(encodings):
    recipe = {"arg": 2, "base": 0, "element_bits": 16, "bfloat16": False, "nan": False, "loc": "k.py:1:1",
              "shape": [arg(32, 1), ["const", 32, 64]], "strides": [["const", 64, 64]]}
    maps = DerivedTensorMaps([recipe], TensorMapEncoder({}), [0, 1], "k")
    assert maps.encode((torch.empty(64, 64, dtype=torch.float16), 0)) == [bytes(128)]
    assert encodings == []


def test_a_launch_the_tma_unit_cannot_describe_names_the_descriptors_line(encodings):
    compiled = compile_forward_whole_descriptors(128, False, True)
    encoder = TensorMapEncoder(compiled.metadata["tensor_maps"])
    maps = DerivedTensorMaps(compiled.metadata["derived_tensor_maps"], encoder, list(range(9)), "attention")
    with pytest.raises(ValueError, match=r"attention_kernels\.py:\d+:\d+: kernel attention: the tensor descriptor "
                                         r"made here has shape\[0\] = 0 in this launch; the TMA unit"):
        maps.encode(attention_launch(0, 3, 256))
    assert encodings == []


def guarded_recipe(stride_arg):
    """A map that kiln-tensor-map-pointer-loads gives a loop's pointer
    loads: rows of ``stride`` elements, as many as row coordinates allow."""
    stride = ["sext", 64, arg(32, stride_arg)]
    return {"arg": 2, "base": 0, "element_bits": 16, "bfloat16": False, "nan": False, "loc": "k.py:9:5",
            "guarded": True, "shape": [["const", 64, (1 << 31) - 1], stride], "strides": [stride]}


def test_a_guarded_map_is_encoded_when_the_tma_unit_takes_it(encodings):
    x = torch.empty(64, 128, dtype=torch.float16)
    maps = DerivedTensorMaps([guarded_recipe(1)], TensorMapEncoder({"<tensor map 0>": [64, 64, 128]}), [0, 1], "k")
    assert maps.encode((x, 128)) == [bytes([1]) * 128]
    assert encodings == [(x.data_ptr(), [(1 << 31) - 1, 128], [256, 2], [64, 64], 2, False, 128, False)]


@pytest.mark.parametrize("stride", [0, -128, -1])
def test_a_guarded_map_the_tma_unit_refuses_is_passed_empty(encodings, stride):
    """The kernel checks the same limits before it reads the map, and reads
    through its pointers instead: the launch goes on, with no map."""
    x = torch.empty(64, 128, dtype=torch.float16)
    maps = DerivedTensorMaps([guarded_recipe(1)], TensorMapEncoder({"<tensor map 0>": [64, 64, 128]}), [0, 1], "k")
    assert maps.encode((x, stride)) == [bytes(128)]
    assert encodings == []


def test_host_descriptor_maps_are_encoded_as_before(encodings):
    """A host TensorDescriptor's map: its base, shape and strides."""
    from kiln.tools.tensor_descriptor import TensorDescriptor

    x = torch.empty((64, 32), dtype=torch.bfloat16)
    encoder = TensorMapEncoder({"x": [16, 32, 64]})
    encoder.encode("x", TensorDescriptor(x, [64, 32], [32, 1], [16, 32], padding="nan"))
    assert encodings == [(x.data_ptr(), [64, 32], [64, 2], [16, 32], 2, True, 64, True)]
    assert encoder.encode("y", TensorDescriptor(x, [64, 32], [32, 1], [16, 32])) == bytes(128)


@kiln.jit
def descriptor_extents(x_ptr, out_ptr, a, b, c, s, COLS: kl.constexpr):
    """Stores the extent and stride of the descriptor it makes (the same
    values the descriptor is made of), and reads through it at rows past
    its end: no element is read, whatever the arguments."""
    rows = a * b - c
    stride = s * 16
    desc = kl.make_tensor_descriptor(x_ptr, [rows, COLS], [stride, 1], [16, COLS])
    kl.store(out_ptr + kl.arange(0, 2), kl.join(rows.to(kl.int64), stride.to(kl.int64)))
    kl.store(out_ptr + 2 + kl.arange(0, 16), kl.sum(desc.load([rows, 0]).to(kl.int64), axis=1))


def test_recipes_agree_with_the_kernels_own_arithmetic():
    """The recipe kiln-hoist-tensor-maps records for sm_90a, evaluated by the
    launcher, gives what the kernel computes (here on the CPU backend),
    wrapping included, for random arguments across the i32 range."""
    signature = {"x_ptr": "*fp16", "out_ptr": "*i64", "a": "i32", "b": "i32", "c": "i32", "s": "i32"}
    compiled = kiln.compile(descriptor_extents, signature, {"COLS": 64}, target="sm_90a")
    # No TMA copy reads this map (the kernel has no dot), so the full
    # pipeline drops it again: the recipe is read where the pass makes it.
    module = _C.ir.Module.parse(_C.ir.Context(), compiled.asm["kiln"])
    _C.compiler.run_pass_pipeline(module, "builtin.module(kiln-target-neutral, kiln-hoist-tensor-maps)")
    (recipe,) = module.dict_array_attr("kiln.derived_tensor_maps")
    assert "derived_tensor_maps" not in compiled.metadata
    assert recipe["base"] == 0 and len(recipe["shape"]) == 2 and len(recipe["strides"]) == 1
    generator = random.Random(7)
    x = torch.zeros((16, 64), dtype=torch.float16)
    for _ in range(20):
        a, b, c, s = (generator.randint(-(1 << 31), (1 << 31) - 1) for _ in range(4))
        out = torch.zeros(18, dtype=torch.int64)
        descriptor_extents[(1,)](x, out, a, b, c, s, COLS=64)
        arguments = [None, None, a, b, c, s]
        assert [evaluate(recipe["shape"][0], arguments), evaluate(recipe["strides"][0], arguments)] == \
            out[:2].tolist(), (a, b, c, s)
