"""Vector add: Kiln vs Triton vs torch on a CUDA machine.

Reports, for fp32:
  * bandwidth for n = 2**28 (3 * n * 4 bytes moved / median time of do_bench);
  * host overhead per launch of a tiny kernel (n = 1024, one program), from a
    Python loop of 10000 launches timed with time.perf_counter;
  * first-call latency (compile + load + launch) in a fresh process with an
    empty on-disk cache (KILN_CACHE_DIR / TRITON_CACHE_DIR set to new
    temporary folders).

Triton's columns are left out when triton cannot be imported.

With --checked, Kiln's kernels are compiled and launched in checked mode
(KILN_CHECKED=1, every access bounds-checked; each launch then waits for the
kernel to read its error record): compare with a run without it.

    python bench/vector_add.py [--n 268435456] [--launches 10000] [--checked]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Callable, Optional

import torch

import kiln
import kiln.language as kl
from kiln.testing import do_bench

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

BLOCK = 1024


@kiln.jit
def kiln_add(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    pid = kl.program_id(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


if triton is not None:

    @triton.jit
    def triton_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def launchers(x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> dict[str, Callable[[], object]]:
    """One zero-argument callable per implementation, all writing ``out``."""
    n = x.numel()
    grid = ((n + BLOCK - 1) // BLOCK,)
    result = {"kiln": lambda: kiln_add[grid](x, y, out, n, BLOCK=BLOCK)}
    if triton is not None:
        result["triton"] = lambda: triton_add[grid](x, y, out, n, BLOCK=BLOCK)
    result["torch"] = lambda: torch.add(x, y, out=out)
    return result


def bandwidth(n: int) -> dict[str, float]:
    """GB/s of each implementation on n fp32 elements (checked against torch)."""
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    result = {}
    for name, run in launchers(x, y, out).items():
        out.fill_(float("nan"))
        run()
        if not torch.equal(out, x + y):
            raise AssertionError(f"{name} computed a wrong vector add")
        ms = do_bench(run, return_mode="median")
        result[name] = 3 * n * 4 / (ms * 1e-3) / 1e9
    return result


def launch_overhead(launches: int) -> dict[str, float]:
    """Microseconds of host time per launch of a one-program kernel."""
    n = 1024
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    result = {}
    for name, run in launchers(x, y, out).items():
        for _ in range(100):
            run()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(launches):
            run()
        elapsed = time.perf_counter() - start
        torch.cuda.synchronize()
        result[name] = elapsed / launches * 1e6
    return result


_KERNEL_FILES = {
    "kiln": """import kiln
import kiln.language as kl


@kiln.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)
""",
    "triton": """import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
""",
}

# Run in a fresh process: imports the kernel file (and so kiln or triton),
# then compiles and launches once. Prints the times as JSON.
_FIRST_CALL = """
import importlib.util, json, sys, time
import torch
x = torch.randn(4096, device="cuda"); y = torch.randn(4096, device="cuda"); out = torch.empty_like(x)
torch.cuda.synchronize()
start = time.perf_counter()
spec = importlib.util.spec_from_file_location("first_call_kernel", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
imported = time.perf_counter()
module.add[(4,)](x, y, out, 4096, BLOCK=1024)
torch.cuda.synchronize()
done = time.perf_counter()
assert torch.equal(out, x + y)
print(json.dumps({"import_s": imported - start, "first_call_s": done - imported}))
"""


def first_call(which: str) -> Optional[dict[str, float]]:
    """Import and first-launch seconds for ``which`` in a fresh process with
    empty on-disk caches."""
    with tempfile.TemporaryDirectory() as scratch:
        kernel_file = os.path.join(scratch, "first_call_kernel.py")
        with open(kernel_file, "w") as f:
            f.write(_KERNEL_FILES[which])
        env = dict(os.environ, KILN_CACHE_DIR=os.path.join(scratch, "kiln-cache"),
                   TRITON_CACHE_DIR=os.path.join(scratch, "triton-cache"))
        completed = subprocess.run([sys.executable, "-c", _FIRST_CALL, kernel_file], env=env,
                                   capture_output=True, text=True, timeout=600)
    if completed.returncode != 0:
        print(f"first call of {which} failed:\n{completed.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2**28, help="elements for the bandwidth test")
    parser.add_argument("--launches", type=int, default=10000, help="launches for the overhead test")
    parser.add_argument("--checked", action="store_true", help="run Kiln's kernels in checked mode (KILN_CHECKED=1)")
    args = parser.parse_args()
    if args.checked:
        os.environ["KILN_CHECKED"] = "1"  # read at each launch, and by the first-call process
    if not torch.cuda.is_available():
        sys.exit("bench/vector_add.py needs a CUDA device")

    names = ["kiln"] + (["triton"] if triton is not None else []) + ["torch"]
    gbps = bandwidth(args.n)
    overhead = launch_overhead(args.launches)
    firsts = {name: first_call(name) for name in names if name != "torch"}

    print(f"vector add, fp32, {torch.cuda.get_device_name()}" + (", Kiln checked" if args.checked else ""))
    print(f"{'':32}" + "".join(f"{name:>12}" for name in names))
    print(f"{f'GB/s (n = {args.n})':32}" + "".join(f"{gbps[name]:>12.1f}" for name in names))
    print(f"{'us per tiny launch (host)':32}" + "".join(f"{overhead[name]:>12.2f}" for name in names))

    def first(name: str, field: str) -> str:
        entry = firsts.get(name)
        return f"{entry[field]:>12.3f}" if entry else f"{'-':>12}"

    print(f"{'s first call (compile+launch)':32}" + "".join(first(name, "first_call_s") for name in names))
    print(f"{'s import (cold process)':32}" + "".join(first(name, "import_s") for name in names))


if __name__ == "__main__":
    main()
