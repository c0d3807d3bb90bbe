"""
Vector Addition
===============

The first Kiln kernel: ``out = x + y`` over two vectors. It is small, but it
already has every part a Kiln program has, and the rest of the tutorials
build on them:

* a kernel is a Python function decorated with ``@kiln.jit`` that works on
  whole *blocks* of values rather than on one element per thread;
* it is launched over a *grid* of program instances, each of which finds
  its own block from ``kl.program_id``;
* masks keep the last, partial block inside the arrays;
* the same kernel runs on a CUDA GPU or on Kiln's CPU backend, chosen by
  where the tensors live;
* results are checked against torch, then timed with ``kiln.testing``.

Run it::

    python docs/tutorials/01-vector-add.py [--device cuda|cpu] [--check-only] [--save-path DIR]

Without a CUDA GPU (or with ``--device cpu``) it runs on the CPU backend at
small sizes.
"""

# %%
# Imports
# -------
#
# ``kiln.language`` is imported as ``kl``, the way Triton programs import
# ``triton.language`` as ``tl``: Kiln follows Triton's names and meanings,
# so what you learn here carries over in both directions.
#
# ``tutorial_support`` is ``tutorial_support.py`` next to this file (a
# script's own folder is on ``sys.path``): the command line, the choice of
# device and the comparison with Triton, which every tutorial shares.

from __future__ import annotations

from typing import Optional, Sequence

import torch

import kiln
import kiln.language as kl
from kiln.testing import Benchmark, Mark, do_bench, perf_report

from tutorial_support import comparison_triton, run_tutorial, triton_twin

# %%
# The kernel
# ----------
#
# Kiln runs many copies ("programs") of the kernel at once. Each program
# handles ``BLOCK_SIZE`` consecutive elements: program 0 the elements
# ``[0, BLOCK_SIZE)``, program 1 the next ``BLOCK_SIZE``, and so on. So the
# first thing the kernel does is ask which program it is.
#
# ``kl.arange(0, BLOCK_SIZE)`` is a block of the integers ``0 ..
# BLOCK_SIZE - 1``; adding it to the block's first index gives the indices
# of this program's elements, and adding those to a pointer gives a block of
# pointers. ``kl.load`` reads a whole block of pointers at once.
#
# The vector length need not be a multiple of ``BLOCK_SIZE``: the last
# program's block runs past the end. The mask ``offsets < n_elements`` is
# false there, and a masked load or store leaves those lanes alone, so
# nothing outside the arrays is touched.
#
# ``BLOCK_SIZE`` is a ``kl.constexpr``: its value is known when the kernel
# is compiled (block shapes must be), and each value gets its own compiled
# kernel. ``n_elements`` is an ordinary runtime argument.


@kiln.jit
def add_kernel(x_ptr,  # pointer to the first input's first element
               y_ptr,  # pointer to the second input's first element
               out_ptr,  # pointer to the output's first element
               n_elements,  # how many elements the vectors have
               BLOCK_SIZE: kl.constexpr,  # elements per program, a power of two
               ):
    pid = kl.program_id(axis=0)  # a 1-D grid: programs are numbered along axis 0
    offsets = pid * BLOCK_SIZE + kl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = kl.load(x_ptr + offsets, mask=mask)
    y = kl.load(y_ptr + offsets, mask=mask)
    kl.store(out_ptr + offsets, x + y, mask=mask)


# %%
# Launching it
# ------------
#
# A jit function is launched by indexing it with a grid, then calling it.
# The grid here is a function of the launch's meta-parameters, so it stays
# right if ``BLOCK_SIZE`` changes: one program per block, rounded up with
# ``kiln.cdiv``. Tensors are passed as pointers to their first element.
#
# The launch returns at once on a GPU (the kernel runs asynchronously on
# torch's current stream); on the CPU backend it returns when every program
# has finished.


def add(x: torch.Tensor, y: torch.Tensor, block_size: int = 1024) -> torch.Tensor:
    """``x + y`` for two contiguous vectors of one length, dtype and device."""
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(f"add: x and y must match, got {tuple(x.shape)} {x.dtype} {x.device} and "
                         f"{tuple(y.shape)} {y.dtype} {y.device}")
    if not (x.is_contiguous() and y.is_contiguous()):
        raise ValueError("add: x and y must be contiguous")
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (kiln.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=block_size)
    return out


# %%
# Checking the result
# -------------------
#
# Floating-point addition of two float32 numbers is exactly rounded, so the
# kernel must agree with torch bit for bit. The length 98,432 is not a
# multiple of 1024, which exercises the mask; the inputs are fresh random
# numbers, so a kernel that wrote nothing (or zeros) cannot pass.
#
# Where the kernel ran is decided by the tensors: CUDA tensors run it on the
# GPU, CPU tensors on Kiln's CPU backend. ``add_kernel.warmup`` compiles
# for a set of arguments without launching and returns the compiled kernel;
# its ``asm`` keeps the output of every compiler stage for inspection: the
# ``kiln`` dialect, then on a GPU ``kiln_gpu`` (with layouts), ``llir``,
# ``ptx`` and ``cubin``, on the CPU ``llir``.


def check(device: str) -> None:
    """Runs ``add`` on fresh random vectors on ``device`` and raises
    AssertionError unless it equals torch's ``x + y`` exactly."""
    generator = torch.Generator(device=device).manual_seed(0)
    for size in (98432, 1, 1023):
        x = torch.rand(size, device=device, generator=generator)
        y = torch.rand(size, device=device, generator=generator)
        out = add(x, y)
        expected = x + y
        if not torch.equal(out, expected):
            worst = (out - expected).abs().max().item()
            raise AssertionError(f"vector add of {size} elements on {device}: max difference {worst}")
    compiled = add_kernel.warmup(x, y, out, size, BLOCK_SIZE=1024, grid=(1,))
    print(f"add_kernel ran on the {compiled.metadata['backend']} backend; compiler stages kept: "
          f"{', '.join(compiled.asm)}")
    print("vector add: Kiln matches torch exactly")


# %%
# Benchmark
# ---------
#
# Vector addition does almost no arithmetic: its speed is how fast memory
# can be read and written, so we report bandwidth, three vectors of
# ``size`` float32 each (two read, one written) per call.
#
# ``kiln.testing.perf_report`` and ``Benchmark`` are Triton's benchmark
# helpers under Kiln's roof: the decorated function is called for every
# ``size`` in ``x_vals`` and every ``provider`` in ``line_vals``, and
# ``run`` prints the table and, given ``save_path``, writes it as CSV and
# (with matplotlib) as a PNG plot. ``do_bench`` times a call: on a GPU with
# CUDA events around each repetition, after flushing the L2 cache; on the
# CPU backend with the wall clock. It returns the quantiles asked for, here
# the median and the 20th and 80th percentiles, drawn as a band.
#
# When the real Triton is installed (and the device is a GPU), the same
# kernel is also compiled by Triton: the kernel names its language only
# through the global ``kl``, so a copy of the function whose ``kl`` is
# ``triton.language`` is a Triton kernel of the very same text.
# ``comparison_triton`` and ``triton_twin`` (in ``tutorial_support.py``, next
# to this file, with the rest of what the tutorials share) find the real
# Triton and make that copy.


def benchmark_sizes(device: str) -> list[int]:
    """The vector lengths timed: up to 128M elements on a GPU, small on the CPU."""
    return [2**i for i in range(12, 28)] if device == "cuda" else [2**12, 2**16, 2**20]


def make_benchmark(device: str) -> Mark:
    """The bandwidth benchmark on ``device``: Kiln, torch, and Triton where
    it is installed and the device is a GPU."""
    triton_add = None
    compilers = comparison_triton(device)
    if compilers is not None:
        triton_add = triton_twin(add_kernel, *compilers)
    providers = ["kiln", "torch"] + (["triton"] if triton_add is not None else [])
    names = {"kiln": "Kiln", "torch": "Torch", "triton": "Triton"}
    colours = {"kiln": ("red", "-"), "torch": ("green", "-"), "triton": ("blue", "--")}

    @perf_report(
        Benchmark(
            x_names=["size"],
            x_vals=benchmark_sizes(device),
            x_log=True,
            line_arg="provider",
            line_vals=providers,
            line_names=[names[p] for p in providers],
            styles=[colours[p] for p in providers],
            ylabel="GB/s",
            plot_name=f"vector-add-performance-{device}",
            args={},
        ))
    def benchmark(size: int, provider: str) -> tuple[float, float, float]:
        x = torch.rand(size, device=device, dtype=torch.float32)
        y = torch.rand(size, device=device, dtype=torch.float32)
        if provider == "kiln":
            fn = lambda: add(x, y)  # noqa: E731
        elif provider == "triton":
            out = torch.empty_like(x)
            fn = lambda: triton_add[(kiln.cdiv(size, 1024),)](x, y, out, size, BLOCK_SIZE=1024)  # noqa: E731
        else:
            fn = lambda: x + y  # noqa: E731
        ms, low_ms, high_ms = do_bench(fn, quantiles=[0.5, 0.2, 0.8], device=device)
        gbps = lambda t: 3 * x.numel() * x.element_size() * 1e-9 / (t * 1e-3)  # noqa: E731
        return gbps(ms), gbps(high_ms), gbps(low_ms)

    return benchmark


# %%
# Running the script
# ------------------
#
# What every tutorial needs besides its topic (the command line, the choice
# of device, finding the real Triton and compiling a Kiln kernel's text with
# it, printing and saving the benchmark) is in ``tutorial_support.py`` next
# to this file.


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Checks the kernel, then (unless ``--check-only``) benchmarks it."""
    run_tutorial(argv, "Kiln tutorial 01: vector addition", check, make_benchmark)


if __name__ == "__main__":
    main()
