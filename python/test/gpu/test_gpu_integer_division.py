"""Integer division where C leaves it undefined, on the GPU next to the CPU.

docs/design/cpu_backend.md fixes what the CPU backend gives for x // 0,
x % 0 and INT_MIN // -1 and says the unsigned quotient by zero (all ones) is
what NVIDIA's division gives. This checks that claim, that the defined cases
agree between the backends, and prints the GPU's values for the signed cases
PTX leaves machine-specific (run with -s to see them).
"""

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl


@kiln.jit
def divide_kernel(x_ptr, y_ptr, q_ptr, r_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask)
    y = kl.load(y_ptr + offs, mask=mask, other=1)
    kl.store(q_ptr + offs, x // y, mask=mask)
    kl.store(r_ptr + offs, x % y, mask=mask)


def divide(x: np.ndarray, y: np.ndarray, device: str) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
    q, r = torch.zeros_like(xs), torch.zeros_like(xs)
    divide_kernel[(1,)](xs, ys, q, r, x.size, BLOCK=16)
    return q.cpu().numpy(), r.cpu().numpy()


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.int16])
def test_division_edge_cases_on_the_gpu(dtype):
    info = np.iinfo(dtype)
    signed = info.min < 0
    x = np.array([7, info.max, info.min, 100, 9, 5], dtype=dtype)
    y = np.array([0, 0, -1 if signed else 0, 7, 3, 0], dtype=dtype)
    gpu_q, gpu_r = divide(x, y, "cuda")
    cpu_q, cpu_r = divide(x, y, "cpu")
    print(f"{np.dtype(dtype).name}: x={x.tolist()} y={y.tolist()} gpu q={gpu_q.tolist()} r={gpu_r.tolist()} "
          f"cpu q={cpu_q.tolist()} r={cpu_r.tolist()}")
    defined = y != 0
    if signed:
        defined &= ~((x == info.min) & (y == -1))
    assert (gpu_q[defined] == cpu_q[defined]).all() and (gpu_r[defined] == cpu_r[defined]).all()
    if not signed:
        assert (gpu_q[y == 0] == info.max).all()
