"""GPU-only runtime tests: what the launch path does with a real device.

* CUDA graphs: Kiln launches captured by ``torch.cuda.graph`` replay with
  the recorded arguments; a launch that would compile during a capture is a
  clear error; ``kiln.testing.do_bench_cudagraph`` and autotuning with
  ``use_cuda_graph=True`` time real replays.
* Arrays from other frameworks: CuPy arrays (``__cuda_array_interface__``,
  their stream waited for) and JAX arrays (DLPack), when those are installed.
* ``enable_reflect_ftz``: exp2 of -127 is 0 with the flush (the default, as
  in Triton) and 2^-127 without it.
* Devices: tensors on another GPU than the current one launch there (skipped
  with one GPU).
* ``kiln compile`` for the GPU: a C program links the generated launcher
  with libcuda, runs it and checks its output.

Mocked versions of the launch-path logic run on every machine in
../unit/test_runtime.py; these check the real driver and device.
"""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.testing import do_bench_cudagraph


@kiln.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, alpha * kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask),
             mask=mask)


@kiln.jit
def exp2_kernel(x_ptr, out_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.math.exp2(kl.load(x_ptr + offs)))


def randn(n, seed, device="cuda"):
    generator = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(n, device=device, generator=generator)


def grid(n, block=256):
    return (kiln.cdiv(n, block),)


# -- CUDA graphs ------------------------------------------------------------------------


def test_captured_launches_replay_with_their_arguments():
    n = 5000
    x, y = randn(n, 1), randn(n, 2)
    out = torch.full((n,), float("nan"), device="cuda")
    axpy_kernel[grid(n)](x, y, out, n, 2.0, BLOCK=256)  # compiles and loads before the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        axpy_kernel[grid(n)](x, y, out, n, 3.0, BLOCK=256)
    out.fill_(float("nan"))
    for seed in (3, 4):
        x.copy_(randn(n, seed))  # the graph reads the arrays' current contents
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, (3.0 * x.double() + y.double()).float(), rtol=1e-6, atol=1e-6)


def test_a_compile_inside_a_capture_is_a_clear_error():
    n = 1000
    x, y, out = randn(n, 5), randn(n, 6), torch.empty(n, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="cannot happen while a CUDA graph is being captured"):
        with torch.cuda.graph(graph):
            axpy_kernel[grid(n, 128)](x, y, out, n, 1.0, BLOCK=128)


def test_do_bench_cudagraph_times_replays():
    n = 1 << 20
    x, y, out = randn(n, 7), randn(n, 8), torch.empty(n, device="cuda")
    ms = do_bench_cudagraph(lambda: axpy_kernel[grid(n, 1024)](x, y, out, n, 1.5, BLOCK=1024))
    assert 0 < ms < 10
    torch.testing.assert_close(out, (1.5 * x.double() + y.double()).float(), rtol=1e-6, atol=1e-6)


def test_autotuning_with_cuda_graphs():
    tuned = kiln.autotune([kiln.Config({"BLOCK": 256}), kiln.Config({"BLOCK": 1024})], key=["n"],
                          use_cuda_graph=True)(axpy_kernel)
    n = 1 << 18
    x, y, out = randn(n, 9), randn(n, 10), torch.empty(n, device="cuda")
    tuned[lambda meta: (kiln.cdiv(n, meta["BLOCK"]),)](x, y, out, n, -0.5)
    torch.testing.assert_close(out, (-0.5 * x.double() + y.double()).float(), rtol=1e-6, atol=1e-6)
    assert all(0 < timing[0] < 10 for timing in tuned.configs_timings.values())


# -- denormals ----------------------------------------------------------------------------


@pytest.mark.parametrize("enable_reflect_ftz", [None, True, False])
def test_exp2_flushes_denormal_results_only_with_reflect_ftz(enable_reflect_ftz):
    x = torch.full((128,), -127.0, device="cuda")
    out = torch.empty_like(x)
    exp2_kernel[(1,)](x, out, BLOCK=128, enable_reflect_ftz=enable_reflect_ftz)
    if enable_reflect_ftz in (None, True):
        assert torch.equal(out, torch.zeros_like(out))
    else:  # ex2.approx keeps subnormal results, within its relative error
        torch.testing.assert_close(out, torch.full_like(out, 2.0 ** -127), rtol=1e-5, atol=0)


# -- arrays from other frameworks ---------------------------------------------------------


def test_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    n = 3000
    rng = cupy.random.default_rng(11)
    x, y = rng.standard_normal(n, dtype=cupy.float32), rng.standard_normal(n, dtype=cupy.float32)
    out = cupy.full(n, cupy.nan, dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        # The producer writes on its own stream and names it in the arrays'
        # interface (CuPy exports its current stream): the launch, on torch's
        # stream, must wait for that write.
        x *= 2
        axpy_kernel[grid(n)](x, y, out, n, 0.25, BLOCK=256)
    torch.cuda.synchronize()
    expected = 0.25 * cupy.asnumpy(x).astype("float64") + cupy.asnumpy(y).astype("float64")
    assert abs(cupy.asnumpy(out) - expected).max() < 1e-5


def test_jax_arrays():
    # JAX would otherwise take most of the GPU's memory at its first use,
    # from every test process.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    gpus = [device for device in jax.devices() if device.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX sees no GPU")
    n = 2000
    key = jax.random.PRNGKey(12)
    x = jax.device_put(jax.random.normal(key, (n,), dtype=jnp.float32), gpus[0])
    y = jax.device_put(jax.random.normal(jax.random.PRNGKey(13), (n,), dtype=jnp.float32), gpus[0])
    # JAX arrays are immutable (their DLPack capsules are read-only): the
    # result goes to a torch tensor, and writing into a JAX array is refused.
    out = torch.full((n,), float("nan"), device="cuda")
    axpy_kernel[grid(n)](x, y, out, n, 4.0, BLOCK=256)
    torch.cuda.synchronize()
    import numpy as np

    expected = 4.0 * np.asarray(x, dtype=np.float64) + np.asarray(y, dtype=np.float64)
    assert abs(out.cpu().numpy() - expected).max() < 1e-4
    frozen = jax.device_put(jnp.zeros(n, dtype=jnp.float32), gpus[0])
    with pytest.raises(ValueError, match="read-only"):
        axpy_kernel[grid(n)](x, y, frozen, n, 4.0, BLOCK=256)


# -- devices --------------------------------------------------------------------------------


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_another_device_launch_there():
    n = 4000
    torch.cuda.set_device(0)
    x, y = randn(n, 14, "cuda:1"), randn(n, 15, "cuda:1")
    out = torch.full((n,), float("nan"), device="cuda:1")
    axpy_kernel[grid(n)](x, y, out, n, 2.0, BLOCK=256)
    torch.cuda.synchronize(1)
    assert torch.cuda.current_device() == 0
    torch.testing.assert_close(out, (2.0 * x.double() + y.double()).float(), rtol=1e-6, atol=1e-6)
    assert 1 in axpy_kernel.cache


# -- ahead of time --------------------------------------------------------------------------

AOT_KERNEL = textwrap.dedent("""
    import kiln
    import kiln.language as kl


    @kiln.jit
    def scale_add(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: kl.constexpr):
        offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
        mask = offs < n
        kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) * scale + kl.load(y_ptr + offs, mask=mask),
                 mask=mask)
""")

AOT_MAIN = textwrap.dedent("""
    #include <math.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include "scale_add.h"

    #define CHECK(call) \\
      do { CUresult r = (call); if (r != CUDA_SUCCESS) { printf("%s: %d\\n", #call, r); return 1; } } while (0)

    int main(void) {
      int n = 10000;
      CUdevice device; CUcontext context; CUdeviceptr x, y, out;
      CHECK(cuInit(0)); CHECK(cuDeviceGet(&device, 0)); CHECK(cuCtxCreate(&context, NULL, 0, device));
      float *host = malloc(3 * n * sizeof(float));
      for (int i = 0; i < n; ++i) { host[i] = sinf(i * 0.37f); host[n + i] = cosf(i * 0.11f); }
      CHECK(cuMemAlloc(&x, n * 4)); CHECK(cuMemAlloc(&y, n * 4)); CHECK(cuMemAlloc(&out, n * 4));
      CHECK(cuMemcpyHtoD(x, host, n * 4)); CHECK(cuMemcpyHtoD(y, host + n, n * 4));
      CHECK(scale_add_load());
      CHECK(scale_add_launch(0, (n + 127) / 128, 1, 1, x, y, out, n, 1.5f));
      CHECK(cuMemcpyDtoH(host + 2 * n, out, n * 4));
      double worst = 0;
      for (int i = 0; i < n; ++i) {
        double want = (double)host[i] * 1.5 + host[n + i];
        worst = fmax(worst, fabs(host[2 * n + i] - want));
      }
      printf("max error %g\\n", worst);
      return worst < 1e-5 ? 0 : 2;
    }
""")


def test_aot_launcher_runs_from_a_c_program(tmp_path):
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if compiler is None or not os.path.exists(os.path.join(cuda_home, "include", "cuda.h")):
        pytest.skip("needs a C compiler and the CUDA headers")
    (tmp_path / "kernels.py").write_text(AOT_KERNEL)
    capability = torch.cuda.get_device_capability()
    target = "sm_90a" if capability == (9, 0) else f"sm_{capability[0]}{capability[1]}"
    made = subprocess.run([sys.executable, "-m", "kiln", "compile", f"{tmp_path / 'kernels.py'}:scale_add",
                           "-s", "*fp32:16, *fp32:16, *fp32:16, i32, fp32", "-c", "BLOCK=128", "-t", target,
                           "-o", str(tmp_path / "aot")], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    (tmp_path / "main.c").write_text(AOT_MAIN)
    library_dirs = [os.path.join(cuda_home, "lib64", "stubs"), os.path.join(cuda_home, "lib64")]
    build = subprocess.run([compiler, "-O1", "-I", os.path.join(cuda_home, "include"), "-I", str(tmp_path / "aot"),
                            str(tmp_path / "main.c"), str(tmp_path / "aot" / "scale_add.c"),
                            *[f"-L{d}" for d in library_dirs], "-lcuda", "-lm", "-o", str(tmp_path / "main")],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
