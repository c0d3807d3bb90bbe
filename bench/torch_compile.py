"""A model step compiled by torch.compile that calls a Kiln kernel, against
the same step calling the same kernel text compiled by Triton.

The step is a linear layer followed by a fused bias, GELU (tanh form) and
residual add, written once as kernel text that both compilers compile (the
worker's `tl` is `kiln.language` or `triton.language`). Kiln's kernel is
registered with `kiln.torch.custom_op`; Triton's with
`torch.library.triton_op` and `wrap_triton`, as Triton documents. Each step
function is compiled with `torch.compile(fullgraph=True)`, in the default
mode and with `mode="reduce-overhead"` (CUDA graphs), and run on fresh
inputs of one shape: the table gives the milliseconds per step (median of
`kiln.testing.do_bench`, one timer for every row) and how many times
dynamo compiled the step (1 means no recompilation per call). Every
result is first checked against the step in float64.

    python bench/torch_compile.py [--rows 8192] [--width 4096] [--dtype fp16|bf16|fp32]

Needs a CUDA GPU and torch 2.4 or later; Triton's rows need Triton.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any, Callable

import torch

KERNEL = '''
@jit
def bias_gelu_residual(h_ptr, bias_ptr, res_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    offs = row * n_cols + cols
    h = tl.load(h_ptr + offs, mask=mask).to(tl.float32) + tl.load(bias_ptr + cols, mask=mask).to(tl.float32)
    inner = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    tanh = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
    y = 0.5 * h * (1.0 + tanh) + tl.load(res_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)
'''

BLOCK = 1024
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def load_kernel(provider: str) -> Any:
    """The kernel compiled by `provider` ("kiln" or "triton")."""
    if provider == "kiln":
        import kiln as compiler
        import kiln.language as lang
    else:
        import triton as compiler
        import triton.language as lang
    path = os.path.join(tempfile.mkdtemp(prefix=f"torch-compile-{provider}-"), f"kernel_{provider}.py")
    with open(path, "w") as f:  # both compilers read kernel sources from files
        f.write(KERNEL)
    # `tl`, as Triton spells it: inductor copies a user kernel's source into a
    # module of its own that imports triton.language under that name.
    scope: dict[str, Any] = {"jit": compiler.jit, "tl": lang}
    exec(compile(KERNEL, path, "exec"), scope)
    return scope["bias_gelu_residual"]


def make_operator(provider: str) -> Callable[..., torch.Tensor]:
    """`provider`'s kernel as a torch operator: (h, bias, residual) -> out."""
    kernel = load_kernel(provider)

    def launch(h: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor, wrap: Callable = lambda k: k):
        out = torch.empty_like(h)
        rows, cols = h.shape
        wrap(kernel)[(rows, (cols + BLOCK - 1) // BLOCK)](h, bias, residual, out, cols, BLOCK=BLOCK)
        return out

    if provider == "kiln":
        import kiln.torch

        @kiln.torch.custom_op("kiln_bench::bias_gelu_residual", mutates_args=())
        def operator(h: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
            return launch(h, bias, residual)

        return operator

    @torch.library.triton_op("triton_bench::bias_gelu_residual", mutates_args=())
    def operator(h: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return launch(h, bias, residual, torch.library.wrap_triton)

    return operator


def reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The step in float64."""
    x, weight, bias = x.double(), weight.double(), bias.double()
    h = x @ weight + bias
    return 0.5 * h * (1.0 + torch.tanh(0.7978845608028654 * (h + 0.044715 * h ** 3))) + x


def measure(provider: str, mode: str, operator: Callable, rows: int, width: int, dtype: torch.dtype) -> str:
    """One table row for `operator` compiled in `mode`."""
    from torch._dynamo.testing import CompileCounterWithBackend

    from kiln.testing import do_bench

    counter = CompileCounterWithBackend("inductor")

    def step(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return operator(x @ weight, bias, x)

    torch._dynamo.reset()
    options = {} if mode == "default" else {"mode": mode}
    compiled = torch.compile(step, backend=counter if mode == "default" else "inductor", fullgraph=True,
                             **options)
    generator = torch.Generator(device="cuda").manual_seed(0)
    weight = (torch.randn(width, width, device="cuda", generator=generator) / width ** 0.5).to(dtype)
    bias = torch.randn(width, device="cuda", generator=generator).to(dtype)
    tolerance = {torch.float16: 2e-2, torch.bfloat16: 8e-2, torch.float32: 1e-3}[dtype]
    for _ in range(3):  # fresh inputs of one shape: compiled once
        x = torch.randn(rows, width, device="cuda", generator=generator).to(dtype)
        out = compiled(x, weight, bias)
        error = (out.double() - reference(x, weight, bias)).abs().max().item()
        if not error <= tolerance:
            return f"| {provider} | {mode} | WRONG (max error {error:.3g}) | |"
    ms = do_bench(lambda: compiled(x, weight, bias), return_mode="median")
    compiles = str(counter.frame_count) if mode == "default" else "-"
    return f"| {provider} | {mode} | {ms:.4f} | {compiles} |"


def triton_available() -> bool:
    try:
        import triton
    except ImportError:
        return False
    return triton.__name__ == "triton" and hasattr(torch.library, "triton_op")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp16")
    options = parser.parse_args()
    if not torch.cuda.is_available() or not hasattr(torch.library, "custom_op"):
        raise SystemExit("bench/torch_compile.py needs a CUDA GPU and torch 2.4 or later")
    dtype = DTYPES[options.dtype]
    providers = ["kiln"] + (["triton"] if triton_available() else [])
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"step: linear {options.rows} x {options.width} x {options.width}, then the fused bias, GELU and "
          f"residual kernel, {options.dtype}; ms per step (median), dynamo compiles over three calls")
    print("| kernel | torch.compile mode | ms per step | compiles |")
    print("|---|---|---:|---:|")
    for provider in providers:
        operator = make_operator(provider)
        for mode in ("default", "reduce-overhead"):
            print(measure(provider, mode, operator, options.rows, options.width, dtype), flush=True)


if __name__ == "__main__":
    main()
