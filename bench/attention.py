"""Fused attention: Kiln vs Triton vs cuDNN and FlashAttention-2 on a CUDA machine.

Rows: the forward ("fwd") and the forward and backward together
("fwd+bwd"), causal and not, head dimension D 64 and 128, sequence length
S 1024, 4096 and 16384, fp16 and bf16; 32 heads and a batch of 16384 / S
sequences (4 at S 4096), so that every row does about the same work.
Columns, in TFLOP/s:

- kiln, triton: the plain FlashAttention-2 forward `attention_forward` of
  python/test/attention_kernels.py, the same Python function compiled by
  each (Triton's copy has the kernel's global `kl` bound to
  triton.language), each the best of CONFIGS, printed as
  BLOCK_M/BLOCK_N/warps/stages. In fwd+bwd rows, that forward and the
  plain backward (a preprocess kernel, a dK/dV kernel and a dQ kernel, of
  the same file, same text for both compilers): first the forward alone
  at each of CONFIGS, then the whole at the best of those and each of
  BACKWARD_CONFIGS; the row prints both choices.
- kiln nomaps (provider nomaps, not run by default): Kiln's plain forward
  compiled with KILN_POINTER_TENSOR_MAPS=0, its loop's K and V pointer
  loads copied by cp.async in every program, as before pointer tensor maps
  (docs/design/pointer_tensor_maps.md); fwd rows only, tuned the same way.
- kiln desc, triton desc: `attention_forward_descriptors`, the same
  forward written as tutorial 06 writes it (tensor descriptors made in the
  kernel, K read as `desc_k.load(...).T`), same text for both compilers,
  tuned the same way.
- kiln host, triton host, kiln host ws, triton host ws: the same
  `attention_forward_descriptors` given host TensorDescriptors of the
  contiguous [B*H*S, D] operands (the TMA unit copies K and V on sm_90a),
  without and with `warp_specialize=True` on its loop (a producer
  warpgroup; Kiln specializes the non-causal loop of 8-warp configs),
  tuned the same way.
- cuDNN, FA2: torch's scaled_dot_product_attention with its cuDNN and its
  FlashAttention-2 backend.
- t06 kiln, t06 triton: Triton's fused-attention tutorial (06), unchanged,
  imported from its file in a child process, through ``python -m
  kiln.compat`` for Kiln and with the installed Triton for Triton (the two
  cannot share a process). It autotunes as the tutorial does (or, with
  --tutorial06-configs one, takes the single configuration the tutorial
  uses under pytest) and picks warp specialization as its own benchmark
  does. Its kernels are fp16 only and its backward is causal only: those
  cells say n/a.

Every result is first checked, on fresh random inputs (torch.randn, softmax
scale 1/sqrt(D)), against float32 attention: torch's SDPA math backend on
the inputs converted to float32. Out of attention_kernels.TOLERANCE (1e-2
absolute for fp16; 3e-2 absolute plus 1e-2 relative for bf16), a cell says
WRONG and the largest error instead of a speed; a failure says "error:" and
its first line. fwd+bwd checks the output and the three gradients. Times
are medians of kiln.testing.do_bench (Triton's do_bench's method), one
timer for every column. FLOPs: 4 B H S^2 D for the forward, half that when
causal; fwd+bwd counts the backward as 2.5 forwards (as tutorial 06 does),
3.5 in all.

First, two small tables of compile times: the first call of the plain
kernel for each compiler (128/64/8/3, D 128, fp16), with empty kernel
caches (KILN_CACHE_DIR and TRITON_CACHE_DIR name new temporary folders,
set before either compiler is imported). The first table makes that call
in a fresh process per compiler and case (after its imports, inputs and
CUDA initialization): each compiler's one-time set-up is part of it, as it
is of a user's first call. With --first-call-processes N it is made in N
such processes each, the compilers in turn, and the median is reported:
one process's figure moves by a third from one to the next. The second
makes it in this process, after a launch of a trivial kernel, which leaves
only the kernel's own compile.

    python3 bench/attention.py [--quick] [--shapes 128x4096,64x16384] [--causal both|yes|no]
        [--dtype fp16,bf16] [--modes fwd,fwd+bwd] [--providers plain,nomaps,desc,host,sdpa,tutorial06]
        [--tutorial06 PATH] [--tutorial06-configs all|one] [--configs 128/128/8/3,...] [--verbose]
        [--compile-workers N] [--first-call-processes N]

Before the rows are timed, N child processes (by default up to 12) compile
every kernel of the table into the run's kernel caches, so that a row loads
them instead of compiling each in turn: most of a long run was compiles.

--quick is D 128, S 4096, fp16. Without --tutorial06, the tutorial is
looked for in $KILN_TRITON_TESTS/tutorials, then in shared/triton-3.6/tutorials
beside the repository and inside it.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import functools
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
from typing import Any, Callable, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def use_fresh_kernel_caches() -> None:
    """Points both compilers' on-disk kernel caches at new empty folders
    (removed at exit), so that every compile in this process is real."""
    root = tempfile.mkdtemp(prefix="attention-bench-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    os.environ["KILN_CACHE_DIR"] = os.path.join(root, "kiln")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(root, "triton")


#: The hidden option of a child that compiles part of the table's kernels.
COMPILE_WORKER_OPTION = "--compile-worker"

if __name__ == "__main__" and COMPILE_WORKER_OPTION not in sys.argv:
    # Before the compilers are imported: either may read its variable then.
    # A compile worker compiles into its parent's caches, which it inherits.
    use_fresh_kernel_caches()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402
from kiln.testing import do_bench  # noqa: E402
from kiln.runtime.launch_settings import POINTER_TENSOR_MAPS_ENV  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "python", "test"))
import attention_kernels  # noqa: E402

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # torch before 2.3
    SDPBackend = sdpa_kernel = None

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None
if triton is not None and triton.__name__ != "triton":
    triton = None  # kiln.compat's alias (this file runs under it as the tutorial's Kiln child)

#: The plain kernel's (BLOCK_M, BLOCK_N, num_warps, num_stages), tried by each compiler.
CONFIGS = [(128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (128, 128, 8, 3), (64, 64, 4, 3), (128, 128, 4, 2),
           (64, 128, 4, 3)]
#: The configuration whose first call is timed.
COMPILE_TIME_CONFIG = (128, 64, 8, 3)
#: The plain backward's configurations, tuned over in fwd+bwd rows: the dK/dV
#: kernel's BLOCK_M and BLOCK_N, the dQ kernel's, warps and stages (both
#: kernels). 8 warps give each warpgroup half of dK and dV's accumulators at
#: D 128, which 4 warps cannot hold in registers (docs/design/attention.md).
BACKWARD_CONFIGS = [(64, 128, 128, 64, 8, 2), (64, 128, 128, 64, 8, 3), (64, 64, 64, 64, 4, 3),
                    (32, 128, 128, 32, 4, 3), (32, 64, 64, 32, 4, 3)]
DEVICE = "cuda"
HEADS = 32
#: Batch × sequence length of every row.
TOKENS = 16384
TUTORIAL06 = "06-fused-attention.py"
#: Prefixes of the tutorial child's output lines that the parent reads.
RESULT_LINE, COMPILER_LINE = "RESULT ", "COMPILER "
#: The tutorial child's exit status after a case that broke the CUDA context.
LOST_CONTEXT_STATUS = 3
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
MODES = ("fwd", "fwd+bwd")
PROVIDERS = ("plain", "nomaps", "desc", "host", "sdpa", "tutorial06")
#: attention_kernels.forward's options for the kernels of each column suffix.
FORWARD_OPTIONS = {"": {}, " nomaps": {}, " desc": {}, " host": {"host_descriptors": True, "warp_specialize": False},
                   " host ws": {"host_descriptors": True, "warp_specialize": True}}
#: The column suffixes of the "host" provider's kernels.
HOST_SUFFIXES = tuple(suffix for suffix, options in FORWARD_OPTIONS.items() if options.get("host_descriptors"))


@kiln.jit
def warm_up_kernel(x_ptr):
    kl.store(x_ptr, 1.0)


@dataclasses.dataclass
class Cell:
    """One table cell: a speed, or the text that stands for it."""
    tflops: Optional[float] = None
    text: str = ""

    def __str__(self) -> str:
        return f"{self.tflops:.1f}" if self.tflops is not None else self.text

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Case:
    """One table row."""
    mode: str  # "fwd" or "fwd+bwd"
    causal: bool
    head_dim: int
    seq: int
    dtype: str  # a key of DTYPES
    batch: int
    heads: int

    @property
    def key(self) -> str:
        return f"{self.mode} {'causal' if self.causal else 'full'} D{self.head_dim} S{self.seq} {self.dtype}"

    @property
    def seed(self) -> int:
        return self.head_dim * 100003 + self.seq * 7 + (1 if self.causal else 0) + (2 if self.dtype == "bf16" else 0)

    @property
    def flops(self) -> float:
        forward = 4.0 * self.batch * self.heads * self.seq * self.seq * self.head_dim * (0.5 if self.causal else 1.0)
        return forward * (3.5 if self.mode == "fwd+bwd" else 1.0)


def one_line(error: BaseException) -> str:
    """An exception as one short line, for a table cell."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def synchronize() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def free_memory() -> None:
    """Returns the memory of the last row's tensors to the device."""
    if DEVICE == "cuda":
        torch.cuda.empty_cache()


def make_inputs(case: Case, requires_grad: bool) -> tuple:
    """q, k, v and an output gradient dO, [B, H, S, D]: the same values for
    the same case in every process."""
    generator = torch.Generator(device=DEVICE).manual_seed(case.seed)
    shape = (case.batch, case.heads, case.seq, case.head_dim)
    q, k, v, do = (torch.randn(shape, device=DEVICE, generator=generator).to(DTYPES[case.dtype]) for _ in range(4))
    for x in (q, k, v):
        x.requires_grad_(requires_grad)
    return q, k, v, do


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
              do: Optional[torch.Tensor]) -> tuple:
    """(O,) or, given dO, (O, dQ, dK, dV): SDPA's math backend in float32,
    a few heads at a time so that the S x S scores fit in memory."""
    batch, heads, seq, head_dim = q.shape
    chunk = max(1, (1 << 31) // (seq * seq * 4))  # heads per 2 GiB of float32 scores
    flat = [x.detach().flatten(0, 1) for x in (q, k, v)]
    results: list[list[torch.Tensor]] = [[] for _ in range(1 if do is None else 4)]
    for start in range(0, batch * heads, chunk):
        q32, k32, v32 = (x[start:start + chunk].float().requires_grad_(do is not None) for x in flat)
        with sdpa_kernel(SDPBackend.MATH), torch.set_grad_enabled(do is not None):
            out = F.scaled_dot_product_attention(q32, k32, v32, is_causal=causal)
        if do is not None:
            out.backward(do.flatten(0, 1)[start:start + chunk].float())
            for result, grad in zip(results[1:], (q32.grad, k32.grad, v32.grad)):
                result.append(grad)
        results[0].append(out.detach())
    return tuple(torch.cat(parts).view(q.shape) for parts in results)


def measure(case: Case, run: Callable[[], tuple], expected: tuple) -> Cell:
    """Checks `run()`'s results against `expected`, then times `run`."""
    dtype = DTYPES[case.dtype]
    try:
        results = run()
        synchronize()
        errors = [attention_kernels.max_error(result, reference_value, dtype)
                  for result, reference_value in zip(results, expected)]
        if not all(within for within, _ in errors):
            worst = max(error if not math.isnan(error) else math.inf for _, error in errors)
            return Cell(text="WRONG (NaN)" if math.isinf(worst) else f"WRONG (max err {worst:.2e})")
        ms = do_bench(run, return_mode="median")
    except Exception as error:  # a kernel that does not compile or launch fails its cell only
        return Cell(text="error: " + one_line(error))
    return Cell(tflops=case.flops / (ms * 1e-3) / 1e12)


def forward_and_backward(attention: Callable, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                         do: torch.Tensor) -> Callable[[], tuple]:
    """A run of `attention(q, k, v)` and of its backward from dO, returning
    (O, dQ, dK, dV)."""
    def run() -> tuple:
        for x in (q, k, v):
            x.grad = None
        out = attention(q, k, v)
        out.backward(do)
        return out, q.grad, k.grad, v.grad
    return run


# -- the plain kernel ------------------------------------------------------------

def triton_twin(kernel: Any, twins: Optional[dict] = None) -> Any:
    """The Python function of the Kiln kernel `kernel`, compiled by Triton:
    the same code object (Triton reads the same source text from the same
    file), with the global `kl` bound to triton.language and the Kiln
    functions it calls bound to their own twins."""
    twins = {} if twins is None else twins
    if id(kernel) in twins:
        return twins[id(kernel)]
    fn = kernel.fn
    namespace = dict(fn.__globals__, kl=tl)
    twin = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    twin.__qualname__ = fn.__qualname__
    twin.__doc__ = fn.__doc__
    twin.__annotations__ = dict(fn.__annotations__)
    twins[id(kernel)] = compiled = triton.jit(twin)
    for name in fn.__code__.co_names:
        value = fn.__globals__.get(name)
        if isinstance(value, kiln.JITFunction):
            namespace[name] = triton_twin(value, twins)
    return compiled


def plain_kernels(kernel: Any = attention_kernels.attention_forward, suffix: str = "") -> dict[str, Any]:
    """The plain forward kernel (or `kernel`) of each compiler present, by
    name (plus `suffix`)."""
    kernels = {"kiln" + suffix: kernel}
    if triton is not None:
        try:
            kernels["triton" + suffix] = triton_twin(kernel)
        except Exception as error:
            print(f"triton: {kernel.fn.__name__} is left out: {one_line(error)}")
    return kernels


class WithoutPointerTensorMaps:
    """A Kiln kernel launched with KILN_POINTER_TENSOR_MAPS=0, so that what
    it compiles keeps its loops' pointer loads off tensor maps (the variable
    is read when a kernel compiles: this kernel is a JITFunction of its own,
    whose launches alone see it)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kiln.jit(kernel.fn)
        self.fn = self.kernel.fn
        self.cache = self.kernel.cache

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        launch = self.kernel[grid]

        def launch_without_maps(*args: Any, **kwargs: Any) -> Any:
            previous = os.environ.get(POINTER_TENSOR_MAPS_ENV)
            os.environ[POINTER_TENSOR_MAPS_ENV] = "0"
            try:
                return launch(*args, **kwargs)
            finally:
                if previous is None:
                    del os.environ[POINTER_TENSOR_MAPS_ENV]
                else:
                    os.environ[POINTER_TENSOR_MAPS_ENV] = previous
        return launch_without_maps


def allocate_triton_scratch(size: int, alignment: int, stream: Any) -> torch.Tensor:
    """Global scratch for Triton's descriptors made in a kernel."""
    return torch.empty(size, dtype=torch.int8, device=DEVICE)


def first_call_seconds(name: str, causal: bool) -> float:
    """The first call of the plain kernel through compiler `name` in this
    (fresh) process: compile with empty caches, load, launch, synchronize;
    the inputs made and CUDA initialized before the clock starts."""
    case = Case("fwd", causal, 128, 1024, "fp16", 1, 2)
    q, k, v, _ = make_inputs(case, requires_grad=False)
    synchronize()
    kernel = plain_kernels()[name]
    start = time.perf_counter()
    attention_kernels.forward(q, k, v, causal, 128 ** -0.5, *COMPILE_TIME_CONFIG, kernel=kernel)
    synchronize()
    return time.perf_counter() - start


def fresh_process_first_call(name: str, causal: bool) -> float:
    """first_call_seconds in a new process of its own (empty caches:
    use_fresh_kernel_caches runs there too), or NaN with the reason printed."""
    command = [sys.executable, os.path.abspath(__file__), "--first-call-worker", name,
               "--causal", "yes" if causal else "no"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])
    except (subprocess.SubprocessError, ValueError, IndexError, KeyError) as error:
        print(f"  {name}: the fresh-process first call failed: {one_line(error)}")
        return math.nan


def compile_times(kernels: dict[str, Any], fresh_processes: int) -> None:
    """Prints the first call's time of the plain kernel for each compiler:
    in a fresh process (what the issue's target measures: each compiler's
    one-time costs included), the median of `fresh_processes` processes per
    compiler, started in turn (kiln, triton, kiln, ...) so that a slow
    spell of the machine falls on both; then in this process after a small
    kernel, which leaves only the compile of the kernel itself."""
    print(f"compile time: first call of the plain kernel in a fresh process, empty cache, "
          f"{'/'.join(map(str, COMPILE_TIME_CONFIG))}, D 128, fp16 (s; median of {fresh_processes})")
    print(f"{'causal':>6} | " + " | ".join(f"{name:>8}" for name in kernels) + " | kiln/triton | every process")
    for causal in (False, True):
        samples: dict[str, list[float]] = {name: [] for name in kernels}
        for _ in range(fresh_processes):
            for name in kernels:
                samples[name].append(fresh_process_first_call(name, causal))
        seconds = {name: statistics.median(values) for name, values in samples.items()}
        ratio = f"{seconds['kiln'] / seconds['triton']:.2f}" if "triton" in seconds else "-"
        every = "; ".join(f"{name} " + " ".join(f"{value:.2f}" for value in values) for name, values in samples.items())
        print(f"{'yes' if causal else 'no':>6} | " + " | ".join(f"{value:8.2f}" for value in seconds.values()) +
              f" | {ratio:>11} | {every}")
    probe = torch.zeros(1, device=DEVICE)
    for name in kernels:
        try:
            (warm_up_kernel if name == "kiln" else triton_twin(warm_up_kernel))[(1,)](probe)
            synchronize()
        except Exception as error:
            print(f"  {name}: the warm-up kernel failed: {one_line(error)}")
    block_m, block_n, warps, stages = COMPILE_TIME_CONFIG
    print(f"compile time: first call of the plain kernel after a small kernel's, empty cache, "
          f"{block_m}/{block_n}/{warps}/{stages}, D 128, fp16 (s)")
    print(f"{'causal':>6} | " + " | ".join(f"{name:>8}" for name in kernels) + " | kiln/triton")
    for causal in (False, True):
        case = Case("fwd", causal, 128, 1024, "fp16", 1, 2)
        q, k, v, _ = make_inputs(case, requires_grad=False)
        seconds = {}
        for name, kernel in kernels.items():
            start = time.perf_counter()
            try:
                attention_kernels.forward(q, k, v, causal, 128 ** -0.5, *COMPILE_TIME_CONFIG, kernel=kernel)
                synchronize()
                seconds[name] = time.perf_counter() - start
            except Exception as error:
                print(f"  {name}: error: {one_line(error)}")
                seconds[name] = math.nan
        ratio = f"{seconds['kiln'] / seconds['triton']:.2f}" if "triton" in seconds else "-"
        print(f"{'yes' if causal else 'no':>6} | " + " | ".join(f"{value:8.2f}" for value in seconds.values()) +
              f" | {ratio}")


def parse_configs(text: str, fields: Sequence[str] = ("BLOCK_M", "BLOCK_N", "warps", "stages")) -> list[tuple]:
    """"128/128/8/3,128/64/8/3" as configurations of `fields`."""
    configs = []
    for item in text.split(","):
        values = item.strip().split("/")
        if len(values) != len(fields) or not all(value.isdigit() for value in values):
            raise argparse.ArgumentTypeError(f"expected {'/'.join(fields)}, got {item!r}")
        configs.append(tuple(int(value) for value in values))
    return configs


def parse_backward_configs(text: str) -> list[tuple]:
    """"64/128/128/64/8/2,..." as the plain backward's configurations."""
    return parse_configs(text, ("dKdV_BLOCK_M", "dKdV_BLOCK_N", "dQ_BLOCK_M", "dQ_BLOCK_N", "warps", "stages"))


def best_of(case: Case, name: str, runs: Sequence[tuple[str, Callable[[], tuple]]], expected: tuple, verbose: bool,
            before_each: Callable[[], None] = lambda: None) -> tuple[Cell, str]:
    """The best cell of `runs` (each a configuration's label and its run)
    and its label; every run is checked before it is timed (after
    `before_each`), and one that fails or is wrong is printed."""
    best, best_label, failures = None, "-", []
    for label, run in runs:
        before_each()
        cell = measure(case, run, expected)
        if cell.tflops is None:
            failures.append(cell)
            print(f"    {case.key} {name} {label}: {cell}")
        elif verbose:
            print(f"    {case.key} {name} {label}: {cell} TFLOP/s")
        if cell.tflops is not None and (best is None or cell.tflops > best.tflops):
            best, best_label = cell, label
    if best is None:
        return failures[0], "-"
    wrong = sum(1 for cell in failures if cell.text.startswith("WRONG"))
    return best, best_label + (f" ({wrong} WRONG)" if wrong else "")


#: A column's runs over its configurations, each with its label, and what
#: goes before each: best_of's `runs` and `before_each`.
Runs = tuple[list[tuple[str, Callable[[], tuple]]], Callable[[], None]]


def plain_runs(case: Case, name: str, kernel: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               configs: Sequence[tuple] = CONFIGS) -> Runs:
    """The forward kernel `kernel`'s runs over `configs`; O is filled with
    NaN before each, so that a run that writes nothing is wrong."""
    out, m = torch.empty_like(q), attention_kernels.new_row_statistics(q)
    options = FORWARD_OPTIONS[name[name.index(" "):] if " " in name else ""]

    def run(config: tuple) -> tuple:
        return attention_kernels.forward(q, k, v, case.causal, case.head_dim ** -0.5, *config, kernel=kernel,
                                         out=out, m=m, **options)[:1]
    runs = [("/".join(str(value) for value in config), functools.partial(run, config)) for config in configs]
    return runs, lambda: out.fill_(math.nan)


def plain_backward_runs(case: Case, kernels: tuple, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        do: torch.Tensor, forward_config: tuple, configs: Sequence[tuple] = BACKWARD_CONFIGS) -> Runs:
    """The fwd+bwd runs over the backward's `configs` (the forward at
    `forward_config`, one of CONFIGS) of `kernels`: the plain forward,
    backward preprocess, dK/dV and dQ kernels of one compiler. Each returns
    (O, dQ, dK, dV); nothing goes before it."""
    forward_kernel, *backward_kernels = kernels
    q, k, v = (x.detach() for x in (q, k, v))
    out, m = torch.empty_like(q), attention_kernels.new_row_statistics(q)
    scale = case.head_dim ** -0.5

    def run(config: tuple) -> tuple:
        dkdv_m, dkdv_n, dq_m, dq_n, warps, stages = config
        attention_kernels.forward(q, k, v, case.causal, scale, *forward_config, kernel=forward_kernel,
                                  out=out, m=m)
        return (out, *attention_kernels.backward(q, k, v, out, m, do, case.causal, scale, (dkdv_m, dkdv_n),
                                                 (dq_m, dq_n), warps, stages, kernels=tuple(backward_kernels)))
    return [(f"dkdv {config[0]}/{config[1]} dq {config[2]}/{config[3]} {config[4]}w {config[5]}s",
             functools.partial(run, config)) for config in configs], lambda: None


def forward_tuning_runs(case: Case, backward_kernels: dict[str, tuple], q: torch.Tensor, k: torch.Tensor,
                        v: torch.Tensor, configs: Sequence[tuple]) -> dict[str, Runs]:
    """For each plain column of fwd+bwd row `case`, its forward kernel's
    runs alone over `configs`, timed as a forward row's (the fastest is the
    forward of the column's fwd+bwd runs)."""
    forward_case = dataclasses.replace(case, mode="fwd")
    q, k, v = (x.detach() for x in (q, k, v))
    return {name: plain_runs(forward_case, name, kernels[0], q, k, v, configs)
            for name, kernels in backward_kernels.items()}


def kernel_runs(case: Case, kernels: dict[str, Any], backward_kernels: dict[str, tuple], q: torch.Tensor,
                k: torch.Tensor, v: torch.Tensor, do: torch.Tensor, configs: Sequence[tuple],
                backward_configs: Sequence[tuple], forward_configs: dict[str, tuple]) -> dict[str, Runs]:
    """For each plain, desc or host column of `case`'s row, its runs and
    what goes before each: the forward kernels' in fwd rows, the plain
    forward (at the column's `forward_configs` entry) and backward kernels'
    in fwd+bwd rows."""
    runs = {}
    for name, kernel in kernels.items():
        if case.mode == "fwd":
            runs[name] = plain_runs(case, name, kernel, q, k, v, configs)
        elif name in backward_kernels and name in forward_configs:
            runs[name] = plain_backward_runs(case, backward_kernels[name], q, k, v, do, forward_configs[name],
                                             backward_configs)
    return runs


# -- torch SDPA ------------------------------------------------------------------

def sdpa_cells(case: Case, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor,
               expected: tuple) -> dict[str, Cell]:
    """cuDNN's and FlashAttention-2's cells, through torch's SDPA."""
    def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=case.causal)

    cells = {}
    for name, backend in (("cuDNN", SDPBackend.CUDNN_ATTENTION), ("FA2", SDPBackend.FLASH_ATTENTION)):
        with sdpa_kernel(backend):
            if case.mode == "fwd":
                cells[name] = measure(case, lambda: (attention(q, k, v),), expected)
            else:
                cells[name] = measure(case, forward_and_backward(attention, q, k, v, do), expected)
    return cells


# -- tutorial 06 in a child process ----------------------------------------------

def find_tutorial06() -> Optional[str]:
    folders = []
    if os.environ.get("KILN_TRITON_TESTS"):
        folders.append(os.path.join(os.environ["KILN_TRITON_TESTS"], "tutorials"))
    folders += [os.path.join(REPO, "..", "shared", "triton-3.6", "tutorials"),
                os.path.join(REPO, "shared", "triton-3.6", "tutorials")]
    for folder in folders:
        path = os.path.join(folder, TUTORIAL06)
        if os.path.isfile(path):
            return os.path.abspath(path)
    return None


def tutorial06_not_applicable(case: Case) -> Optional[str]:
    if case.dtype != "fp16":
        return "n/a (fp16 only)"
    if case.mode == "fwd+bwd" and not case.causal:
        return "n/a (causal-only bwd)"
    return None


def tutorial06_cells(compiler: str, path: str, cases: list[Case], timeout: float,
                     single_config: bool) -> dict[str, Cell]:
    """Runs the tutorial's cases in child processes of `compiler` ("kiln":
    through kiln.compat; "triton": the installed Triton). A child that dies
    costs the case it was on; the rest run in a new child."""
    command = [sys.executable] + (["-m", "kiln.compat"] if compiler == "kiln" else []) + \
        [os.path.abspath(__file__), "--tutorial06-worker", path]
    environment = dict(os.environ)
    if single_config:
        environment["PYTEST_VERSION"] = "single-config"  # the tutorial's switch to its one testing config
    cells: dict[str, Cell] = {}
    pending = list(cases)
    while pending:
        with tempfile.TemporaryFile(mode="w+") as stderr:
            child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                     text=True, env=environment)
            timer = threading.Timer(timeout, child.kill)
            timer.start()
            child.stdin.write(json.dumps([dataclasses.asdict(case) for case in pending]))
            child.stdin.close()
            reported_compiler = None
            for line in child.stdout:
                if line.startswith(COMPILER_LINE):
                    reported_compiler = line[len(COMPILER_LINE):].strip()
                elif line.startswith(RESULT_LINE):
                    result = json.loads(line[len(RESULT_LINE):])
                    cells[result["key"]] = Cell(**result["cell"])
                    print(f"    tutorial 06 {compiler}: {result['key']}: {cells[result['key']]}", flush=True)
            status = child.wait()
            timed_out = not timer.is_alive()
            timer.cancel()
            stderr.seek(0)
            last_lines = [line.strip() for line in stderr.read().splitlines() if line.strip()]
        if reported_compiler is not None and reported_compiler != compiler:
            message = f"error: the child ran {reported_compiler}, not {compiler}"
            return {case.key: Cell(text=message) for case in cases}
        reported = sum(1 for case in pending if case.key in cells)
        pending = [case for case in pending if case.key not in cells]
        if not pending:
            break
        if status == LOST_CONTEXT_STATUS and reported:
            continue  # the case that broke the context has its cell
        if timed_out:
            message = f"error: killed after {timeout:g} s"
            cells.update({case.key: Cell(text=message) for case in pending})
            break
        reason = last_lines[-1][:160] if last_lines else f"exit status {status}"
        cells[pending[0].key] = Cell(text=f"error: the child died ({reason})")
        pending = pending[1:]
    return cells


def tutorial06_worker(path: str) -> None:
    """The child process: runs each case read from stdin through the
    tutorial's `attention` and prints `RESULT {key, cell}` lines."""
    cases = [Case(**fields) for fields in json.loads(sys.stdin.read())]
    import triton as compiler  # the real Triton, or Kiln under kiln.compat
    print(COMPILER_LINE + ("kiln" if compiler.__name__ == "kiln" else "triton"), flush=True)

    def report(case: Case, cell: Cell) -> None:
        print(RESULT_LINE + json.dumps({"key": case.key, "cell": cell.to_json()}), flush=True)

    try:
        spec = importlib.util.spec_from_file_location("fused_attention_tutorial", path)
        tutorial = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = tutorial
        spec.loader.exec_module(tutorial)
    except Exception as error:
        for case in cases:
            report(case, Cell(text="error: " + one_line(error)))
        return
    for case in cases:
        report(case, tutorial06_case(tutorial, case))
        try:
            synchronize()
        except Exception:
            sys.exit(LOST_CONTEXT_STATUS)  # the parent goes on in a new child
        free_memory()


def tutorial06_case(tutorial: types.ModuleType, case: Case) -> Cell:
    """`case` through the tutorial's `attention`, with warp specialization
    where the tutorial's own benchmark asks for it: for the forward, on
    Blackwell, and on Hopper when not causal."""
    warp_specialize = case.mode == "fwd" and (tutorial.is_blackwell() or (tutorial.is_hopper() and not case.causal))

    def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return tutorial.attention(q, k, v, case.causal, case.head_dim ** -0.5, warp_specialize)

    try:
        q, k, v, do = make_inputs(case, requires_grad=case.mode == "fwd+bwd")
        if case.mode == "fwd":
            return measure(case, lambda: (attention(q, k, v),), reference(q, k, v, case.causal, None))
        return measure(case, forward_and_backward(attention, q, k, v, do), reference(q, k, v, case.causal, do))
    except Exception as error:  # the inputs or the reference
        return Cell(text="error: " + one_line(error))


# -- the table -------------------------------------------------------------------

def row_cells(case: Case, providers: set, kernels: dict[str, Any], tutorial: dict[str, dict[str, Cell]],
              verbose: bool, tuned: Sequence[tuple] = CONFIGS, backward_kernels: Optional[dict[str, tuple]] = None,
              backward_configs: Sequence[tuple] = BACKWARD_CONFIGS) -> tuple[dict[str, Cell], dict[str, str]]:
    """The cells of `case`'s row and the plain kernel's chosen configs
    (`backward_kernels`: each plain column's forward and backward kernels,
    for its fwd+bwd rows)."""
    cells: dict[str, Cell] = {}
    configs: dict[str, str] = {}
    needs_grad = case.mode == "fwd+bwd"
    q, k, v, do = make_inputs(case, requires_grad=needs_grad)
    expected = reference(q, k, v, case.causal, do if needs_grad else None)
    if providers & {"plain", "nomaps", "desc", "host"}:
        # fwd+bwd: each compiler's forward at its own best configuration.
        forward_configs, forward_labels = {}, {}
        if needs_grad:
            labelled = {"/".join(str(value) for value in config): config for config in tuned}
            forward_case = dataclasses.replace(case, mode="fwd")
            forward_runs = forward_tuning_runs(case, backward_kernels or {}, q, k, v, tuned)
            for name, (runs_of, before_each) in forward_runs.items():
                cell, label = best_of(forward_case, name + " forward", runs_of, expected[:1], verbose, before_each)
                if cell.tflops is not None:
                    forward_configs[name], forward_labels[name] = labelled[label.split(" ")[0]], label
                else:
                    cells[name] = cell  # no configuration of the forward runs: nor does the whole
        runs = kernel_runs(case, kernels, backward_kernels or {}, q, k, v, do, tuned, backward_configs,
                           forward_configs)
        for name in kernels:
            if name in runs:
                cells[name], configs[name] = best_of(case, name, runs[name][0], expected, verbose, runs[name][1])
                if name in forward_labels:
                    configs[name] = f"fwd {forward_labels[name]} {configs[name]}"
            elif name not in cells:
                cells[name] = Cell(text="-")
    if "sdpa" in providers:
        cells.update(sdpa_cells(case, q, k, v, do, expected))
    for compiler, results in tutorial.items():
        cells[f"t06 {compiler}"] = results.get(case.key, Cell(text="-"))
    for suffix in FORWARD_OPTIONS:
        kiln_cell, triton_cell = cells.get("kiln" + suffix), cells.get("triton" + suffix)
        if kiln_cell and triton_cell and kiln_cell.tflops and triton_cell.tflops:
            cells[f"kiln/triton{suffix}"] = Cell(text=f"{kiln_cell.tflops / triton_cell.tflops:.2f}")
    return cells, configs


def cases_from(args: argparse.Namespace) -> list[Case]:
    if args.quick:
        shapes, dtypes = [(128, 4096)], ["fp16"]
    else:
        shapes = [(int(head_dim), int(seq)) for head_dim, seq in (spec.split("x") for spec in args.shapes.split(","))]
        dtypes = args.dtype.split(",")
    causals = {"both": [False, True], "yes": [True], "no": [False]}[args.causal]
    return [Case(mode, causal, head_dim, seq, dtype, max(1, TOKENS // seq), HEADS)
            for mode in args.modes.split(",") for causal in causals for head_dim, seq in shapes
            for dtype in dtypes]


def table_kernels(providers: set, modes: Sequence[str]) -> tuple[dict[str, Any], dict[str, tuple]]:
    """The plain, desc and host columns' forward kernels by column name, and
    the plain columns' forward and backward kernels for fwd+bwd rows."""
    kernels = plain_kernels() if "plain" in providers else {}
    # The plain columns' fwd+bwd: the forward and the three backward kernels.
    backward_kernels = {}
    if "plain" in providers and "fwd+bwd" in modes:
        kiln_kernels = (attention_kernels.attention_forward, attention_kernels.attention_backward_preprocess,
                        attention_kernels.attention_backward_dkdv, attention_kernels.attention_backward_dq)
        backward_kernels["kiln"] = kiln_kernels
        if "triton" in kernels:
            # The forward's twin is the forward rows' own (one Triton compile).
            twins: dict = {}
            backward_kernels["triton"] = (kernels["triton"],
                                          *(triton_twin(kernel, twins) for kernel in kiln_kernels[1:]))
    if "nomaps" in providers:
        kernels["kiln nomaps"] = WithoutPointerTensorMaps(attention_kernels.attention_forward)
    if "desc" in providers:
        kernels.update(plain_kernels(attention_kernels.attention_forward_descriptors, " desc"))
        if triton is not None:
            triton.set_allocator(allocate_triton_scratch)
    if "host" in providers:
        for suffix in HOST_SUFFIXES:
            kernels.update(plain_kernels(attention_kernels.attention_forward_descriptors, suffix))
    return kernels, backward_kernels


def compile_in_workers(count: int) -> None:
    """Compiles the table's kernels (every column, row and configuration)
    in `count` child processes at once, into this process's kernel caches,
    so that the rows load them instead of compiling one after the other.
    A kernel that fails to compile there is compiled again, and its error
    reported, in its row."""
    start = time.perf_counter()
    # The same options (argparse keeps an option's last value).
    command = [sys.executable, os.path.abspath(__file__), *sys.argv[1:], "--compile-workers", "0"]
    children = [subprocess.Popen(command + [COMPILE_WORKER_OPTION, f"{index}/{count}"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True) for index in range(count)]
    for index, child in enumerate(children):
        _, errors = child.communicate()
        if child.returncode != 0:
            lines = [line for line in errors.splitlines() if line.strip()]
            print(f"  compile worker {index} exited with status {child.returncode}: "
                  f"{lines[-1] if lines else 'no message'}")
    print(f"compiled the table's kernels in {count} processes: {time.perf_counter() - start:.1f} s", flush=True)


def compile_worker(args: argparse.Namespace) -> None:
    """A compile worker: calls its share (every `count`-th, from `index`) of
    the table's runs once each, unchecked and untimed."""
    index, count = (int(part) for part in args.compile_worker.split("/"))
    providers = set(args.providers.split(","))
    kernels, backward_kernels = table_kernels(providers, args.modes.split(","))
    task = 0
    for case in cases_from(args):
        q, k, v, do = make_inputs(case, requires_grad=case.mode == "fwd+bwd")
        # A fwd+bwd row's forward configurations, then its backward ones
        # (whichever forward its row picks is among the first).
        all_runs = []
        if case.mode == "fwd+bwd":
            all_runs += forward_tuning_runs(case, backward_kernels, q, k, v, args.configs).values()
        all_runs += kernel_runs(case, kernels, backward_kernels, q, k, v, do, args.configs, args.backward_configs,
                                {name: args.configs[0] for name in backward_kernels}).values()
        for runs, before_each in all_runs:
            for _, run_once in runs:
                if task % count == index:
                    try:
                        before_each()
                        run_once()
                        synchronize()
                    except Exception:
                        pass  # its row compiles it again and reports the error
                task += 1
        del q, k, v, do
        free_memory()


def run(args: argparse.Namespace) -> None:
    """Prints the compile-time table and the table of `args`' rows."""
    providers = set(args.providers.split(","))
    cases = cases_from(args)
    kernels, backward_kernels = table_kernels(providers, args.modes.split(","))
    compile_kernels = {name: kernel for name, kernel in kernels.items() if name in ("kiln", "triton")}
    print(f"device: {torch.cuda.get_device_name() if DEVICE == 'cuda' else DEVICE}, torch {torch.__version__}, "
          f"triton {triton.__version__ if triton is not None else 'not installed'}")
    if compile_kernels:
        compile_times(compile_kernels, args.first_call_processes)
    if kernels and args.compile_workers > 0:
        compile_in_workers(args.compile_workers)

    tutorial: dict[str, dict[str, Cell]] = {}
    if "tutorial06" in providers:
        path = args.tutorial06 or find_tutorial06()
        compilers = ["kiln"] + (["triton"] if triton is not None else [])
        for compiler in compilers:
            runnable = [case for case in cases if tutorial06_not_applicable(case) is None]
            results = {case.key: Cell(text=tutorial06_not_applicable(case)) for case in cases
                       if tutorial06_not_applicable(case) is not None}
            if path is None:
                results.update({case.key: Cell(text="n/a (tutorial not found: --tutorial06 PATH)")
                                for case in runnable})
            elif runnable:
                print(f"tutorial 06 through {compiler} ({path})", flush=True)
                results.update(tutorial06_cells(compiler, path, runnable, args.tutorial06_timeout,
                                                args.tutorial06_configs == "one"))
            tutorial[compiler] = results

    columns = []
    if "plain" in providers:
        columns += ["kiln"] + (["triton", "kiln/triton"] if "triton" in kernels else [])
    if "nomaps" in providers:
        columns += ["kiln nomaps"]
    if "desc" in providers:
        columns += ["kiln desc"] + (["triton desc", "kiln/triton desc"] if "triton desc" in kernels else [])
    if "host" in providers:
        for suffix in HOST_SUFFIXES:
            columns += [f"kiln{suffix}"] + ([f"triton{suffix}", f"kiln/triton{suffix}"]
                                           if f"triton{suffix}" in kernels else [])
    if "sdpa" in providers:
        columns += ["cuDNN", "FA2"]
    columns += [f"t06 {compiler}" for compiler in tutorial]
    header = (f"{'mode':>7} | {'causal':>6} | {'D':>3} | {'S':>5} | {'dtype':>5} | {'BxH':>6} | " +
              " | ".join(f"{column:>11}" for column in columns) + " | configs (kiln; triton)")
    print("TFLOP/s")
    print(header)
    for case in cases:
        cells, configs = row_cells(case, providers, kernels, tutorial, args.verbose, args.configs, backward_kernels,
                                   args.backward_configs)
        print(f"{case.mode:>7} | {'yes' if case.causal else 'no':>6} | {case.head_dim:>3} | {case.seq:>5} | "
              f"{case.dtype:>5} | {f'{case.batch}x{case.heads}':>6} | " +
              " | ".join(f"{str(cells.get(column, Cell(text='-'))):>11}" for column in columns) +
              f" | {'; '.join(configs.values()) or '-'}", flush=True)
        free_memory()

    if "plain" in providers:
        print("kiln's compiled plain kernels (registers, spills, shared memory):")
        for per_device in attention_kernels.attention_forward.cache.values():
            for loaded in per_device.values():
                metadata = loaded.kernel.metadata
                constexprs = metadata["constexprs"]
                label = (f"{metadata['signature']['Q'][1:]} D{constexprs['HEAD_DIM']} "
                         f"{constexprs['BLOCK_M']}/{constexprs['BLOCK_N']}/{metadata['num_warps']}/"
                         f"{metadata['num_stages']}{' causal' if constexprs['CAUSAL'] else ''}"
                         f"{' masked keys' if constexprs['MASK_KEYS'] else ''}")
                print(f"    {label}: {loaded.n_regs} registers, {loaded.n_spills} bytes spilled, "
                      f"{loaded.shared} bytes of shared memory")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only D 128, S 4096, fp16")
    parser.add_argument("--shapes", default="64x1024,64x4096,64x16384,128x1024,128x4096,128x16384",
                        help="DxS pairs: head dimension x sequence length")
    parser.add_argument("--causal", choices=["both", "yes", "no"], default="both")
    parser.add_argument("--dtype", default="fp16,bf16")
    parser.add_argument("--modes", default="fwd,fwd+bwd")
    parser.add_argument("--providers", default="plain,desc,sdpa,tutorial06",
                        help="plain (the plain kernel, Kiln and Triton), nomaps (Kiln's plain kernel compiled "
                             "without pointer tensor maps), desc (its descriptor form), "
                             "sdpa (cuDNN, FA2), tutorial06")
    parser.add_argument("--tutorial06", help=f"path of Triton's {TUTORIAL06}")
    parser.add_argument("--tutorial06-configs", choices=["all", "one"], default="all",
                        help="autotune over the tutorial's configs, or take its one testing config")
    parser.add_argument("--tutorial06-timeout", type=float, default=1800,
                        help="seconds before a tutorial child process is killed")
    parser.add_argument("--verbose", action="store_true", help="print every config of the plain kernel")
    parser.add_argument("--configs", type=parse_configs, default=CONFIGS,
                        help="the kernels' configurations to tune over, BLOCK_M/BLOCK_N/warps/stages separated "
                             "by commas (default: all of CONFIGS)")
    parser.add_argument("--backward-configs", type=parse_backward_configs, default=BACKWARD_CONFIGS,
                        help="the plain backward's configurations for fwd+bwd rows, dK/dV BLOCK_M/BLOCK_N/dQ "
                             "BLOCK_M/BLOCK_N/warps/stages separated by commas (default: all of BACKWARD_CONFIGS)")
    parser.add_argument("--compile-workers", type=int, default=min(12, max(0, (os.cpu_count() or 1) - 2)),
                        help="child processes that compile the table's kernels before its rows are timed "
                             "(0: each row compiles its own)")
    parser.add_argument("--first-call-processes", type=int, default=1,
                        help="fresh processes per compiler and case for the compile-time table (the median is "
                             "reported)")
    parser.add_argument(COMPILE_WORKER_OPTION, help=argparse.SUPPRESS)
    parser.add_argument("--tutorial06-worker", metavar="PATH", help=argparse.SUPPRESS)
    parser.add_argument("--first-call-worker", choices=["kiln", "triton"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_call_worker:
        print(json.dumps({"seconds": first_call_seconds(args.first_call_worker, args.causal == "yes")}))
        return
    if args.first_call_processes < 1:
        parser.error("--first-call-processes: expected 1 or more")
    for option, values, known in (("--dtype", args.dtype, DTYPES), ("--modes", args.modes, MODES),
                                  ("--providers", args.providers, PROVIDERS)):
        unknown = [value for value in values.split(",") if value not in known]
        if unknown:
            parser.error(f"{option}: unknown {', '.join(unknown)} (known: {', '.join(known)})")
    try:
        cases_from(args)
    except ValueError:
        parser.error(f"--shapes: expected DxS pairs such as 128x4096, got {args.shapes}")
    if args.tutorial06_worker:
        tutorial06_worker(args.tutorial06_worker)
        return
    if args.compile_worker:
        compile_worker(args)
        return
    if not torch.cuda.is_available():
        print("bench/attention.py needs a CUDA GPU, and torch sees none: nothing to measure.")
        return
    if sdpa_kernel is None:
        sys.exit(f"bench/attention.py needs torch.nn.attention (torch 2.3 or later); this is torch {torch.__version__}")
    run(args)


if __name__ == "__main__":
    main()
