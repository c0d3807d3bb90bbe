"""The kernels of the block-pointer, tuple, random and cast-rounding tests
compiled for sm_90a through ptxas (no GPU needed), so that the CUDA path
of each feature is checked where there is no GPU to run it."""

from __future__ import annotations

import os
import sys

import pytest

import kiln

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))

import test_block_ptr  # noqa: E402
import test_casts_and_builtins  # noqa: E402
import test_random  # noqa: E402
import test_tuples  # noqa: E402

CASES = [
    (test_block_ptr.row_block_sums_kernel, {"a_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "K": "i32",
                                            "sam": "i32", "sak": "i32"}, {"BM": 16, "BK": 32}),
    (test_block_ptr.column_walk_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "N": "i32",
                                         "flip": "i32"}, {"BM": 8, "BN": 32}),
    (test_tuples.early_return_kernel, {"x_ptr": "*i32", "out_ptr": "*i32", "code_ptr": "*i32", "n": "i32",
                                       "limit": "i32"}, {}),
    (test_random.random_kernel, {"ints_ptr": "*i32", "uniform_ptr": "*fp32", "normal_ptr": "*fp32", "seed": "i64",
                                 "start": "i32", "n": "i32"}, {"BLOCK": 256}),
    # Nested inlining here once gave call-site locations the debug-info
    # pass could not read (a crash); they are normalized now.
    (test_random.randint64_kernel, {"out_ptr": "*i64", "seed": "i32", "start": "i64"}, {"BLOCK": 64}),
    (test_casts_and_builtins.downcast_kernel, {"x_ptr": "*fp32", "h_ptr": "*fp16", "b_ptr": "*bf16", "n": "i32"},
     {"ROUNDING": "rtz", "BLOCK": 512}),
]


@pytest.mark.parametrize("kernel,signature,constexprs", CASES, ids=[c[0].__name__ for c in CASES])
def test_compiles_for_sm90a(kernel, signature, constexprs) -> None:
    compiled = kiln.compile(kernel, signature=signature, constexprs=constexprs, target="sm_90a")
    assert f".entry {kernel.__name__}" in compiled.asm["ptx"]
    assert compiled.asm["cubin"]
