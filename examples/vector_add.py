"""Vector addition with Kiln: the smallest complete kernel.

With a CUDA GPU this runs the kernel there on 98432 fp32 elements, checks the
result against torch and times it. Without one it does the same on the CPU
backend (torch CPU tensors run there), then compiles the kernel ahead of time
for sm_90a and shows the PTX a GPU would run.
"""

import re
import time

import torch

import kiln
import kiln.language as kl
from kiln.compiler.specialization import Specialization


@kiln.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    pid = kl.program_id(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[lambda meta: (kiln.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=1024)
    return out


def runnable_device() -> str:
    """The torch device to run on: "cuda" with a usable GPU, else "cpu".

    Kiln picks the backend from where the tensors are, so the rest of this
    script is the same on either device.
    """
    if torch.cuda.is_available() and kiln._C.driver.is_available():
        return "cuda"
    return "cpu"


def run(device: str, size: int = 98432) -> None:
    torch.manual_seed(0)
    x = torch.rand(size, device=device, dtype=torch.float32)
    y = torch.rand(size, device=device, dtype=torch.float32)

    out = add(x, y)  # the first call compiles
    expected = x + y
    # warmup() returns the compiled kernel a launch with these arguments uses.
    compiled = add_kernel.warmup(x, y, out, size, BLOCK=1024, grid=(1,))
    print(f"ran on the {compiled.metadata['backend']} backend")
    print(f"kiln: {out[:4].tolist()} ...")
    print(f"torch: {expected[:4].tolist()} ...")
    if not torch.equal(out, expected):
        max_err = (out - expected).abs().max().item()
        raise SystemExit(f"MISMATCH: max abs error {max_err}")
    print(f"result matches torch exactly ({size} fp32 elements on {device})")

    repeats = 100
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        add(x, y)
    synchronize()
    per_call_us = (time.perf_counter() - start) / repeats * 1e6
    print(f"time: {per_call_us:.1f} us per call (average of {repeats}, launch overhead included)")


def show_ptx(head: int = 60) -> None:
    compiled = kiln.compile(
        add_kernel,
        signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
        constexprs={"BLOCK": 1024},
        target="sm_90a",
        num_warps=4,
        # What the JIT would derive at launch for n = 98432 and tensors from
        # torch's allocator: every pointer 16-byte aligned, n divisible by 16.
        attrs=Specialization(divisible_by_16=frozenset({"x_ptr", "y_ptr", "out_ptr", "n"})),
    )
    lines = compiled.asm["ptx"].splitlines()
    print(f"PTX for sm_90a ({len(lines)} lines), first {min(head, len(lines))}:")
    print("\n".join(lines[:head]))
    # The compiler emits 128-bit loads only where it proved the accesses
    # contiguous, 16-byte aligned and uniformly masked, so they are the lines
    # worth looking for.
    global_loads = [line.strip() for line in lines if re.search(r"\bld\.global\.", line)]
    vector_loads = [line for line in global_loads if re.search(r"\bld\.global(\.\w+)*\.v4\b", line)]
    print(f"\n{len(global_loads)} global loads, {len(vector_loads)} of them 128-bit (ld.global.v4):")
    for line in vector_loads:
        print(f"  {line}")


def main() -> None:
    device = runnable_device()
    if device == "cpu":
        print("no CUDA GPU found: running on Kiln's CPU backend.\n")
    run(device)
    if device == "cpu":
        print("\nThe same kernel compiled for a GPU:\n")
        show_ptx()


if __name__ == "__main__":
    main()
