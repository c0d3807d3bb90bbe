"""``kiln compile``: ahead-of-time kernels that C programs build with.

On the CPU target a C program is compiled against the generated files,
linked with the object, run, and its results compared with a float64
reference computed here from the same inputs. On an NVIDIA target the
generated launcher is compiled against the CUDA headers (when installed);
running it needs a GPU.
"""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

KERNELS = textwrap.dedent("""
    import kiln
    import kiln.language as kl


    @kiln.jit
    def scaled_exp_add(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: kl.constexpr):
        offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
        mask = offs < n
        x = kl.load(x_ptr + offs, mask=mask)
        y = kl.load(y_ptr + offs, mask=mask)
        kl.store(out_ptr + offs, kl.exp(x) * scale + y, mask=mask)


    @kiln.jit
    def row_sums(x_ptr, out_ptr, stride, COLS: kl.constexpr):
        row = kl.program_id(0)
        values = kl.load(x_ptr + row * stride + kl.arange(0, COLS))
        kl.store(out_ptr + row, kl.sum(values.to(kl.float64), axis=0))


    @kiln.jit
    def row_products(a_ptr, b_ptr, c_ptr, M, N: kl.constexpr, K: kl.constexpr, BLOCK: kl.constexpr):
        # Descriptors made from the arguments, read by a pipelined dot:
        # Kiln's own launcher would pass their tensor maps.
        a_desc = kl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK, BLOCK])
        b_desc = kl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BLOCK, N])
        row = kl.program_id(0) * BLOCK
        acc = kl.zeros([BLOCK, N], dtype=kl.float32)
        for k in range(0, K, BLOCK):
            acc = kl.dot(a_desc.load([row, k]), b_desc.load([k, 0]), acc)
        offs = row + kl.arange(0, BLOCK)
        kl.store(c_ptr + offs[:, None] * N + kl.arange(0, N)[None, :], acc, mask=offs[:, None] < M)

    @kiln.jit
    def printing(x_ptr, BLOCK: kl.constexpr):
        kl.device_print("x", kl.load(x_ptr + kl.arange(0, BLOCK)))
""")

# Reads the inputs the test wrote, launches, writes the outputs.
MAIN = textwrap.dedent("""
    #include <stdio.h>
    #include <stdlib.h>
    #include "scaled_exp_add.h"
    #include "row_sums.h"

    static void *read_all(const char *path, size_t bytes) {
      void *data = aligned_alloc(64, bytes);
      FILE *f = fopen(path, "rb");
      if (!f || fread(data, 1, bytes, f) != bytes) { perror(path); exit(2); }
      fclose(f);
      return data;
    }

    int main(int argc, char **argv) {
      int n = atoi(argv[1]);
      float scale = (float)atof(argv[2]);
      float *x = read_all(argv[3], n * sizeof(float));
      float *y = read_all(argv[4], n * sizeof(float));
      float *out = aligned_alloc(64, n * sizeof(float) + 64);
      unsigned blocks = (unsigned)((n + 127) / 128);
      scaled_exp_add_launch(blocks, 1, 1, x, y, out, n, scale);
      fwrite(out, sizeof(float), n, stdout);
      /* rows of 32 doubles summed per program */
      double *matrix = read_all(argv[5], 7 * 40 * sizeof(double));
      double sums[7];
      row_sums_launch(7, 1, 1, matrix, sums, 40);
      fwrite(sums, sizeof(double), 7, stdout);
      return 0;
    }
""")


def kiln_compile(*arguments, cwd=None):
    return subprocess.run([sys.executable, "-m", "kiln", "compile", *arguments], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return path


def c_compiler():
    for name in ("cc", "gcc", "clang-22", "clang"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no C compiler")


def test_cpu_kernels_run_from_a_c_program(kernels, tmp_path):
    out = tmp_path / "aot"
    first = kiln_compile(f"{kernels}:scaled_exp_add", "--signature", "*fp32:16, *fp32:16, *fp32:16, i32, fp32",
                         "--constexpr", "BLOCK=128", "--target", "cpu", "-o", str(out))
    assert first.returncode == 0, first.stderr
    second = kiln_compile(f"{kernels}:row_sums", "-s", "*fp64:16, *fp64, i32", "-c", "COLS=32", "-t",
                          "cpu:x86-64-v2", "-o", str(out))
    assert second.returncode == 0, second.stderr
    for name in ("scaled_exp_add", "row_sums"):
        for suffix in ("o", "h", "c", "ll"):
            assert (out / f"{name}.{suffix}").exists()
    (tmp_path / "main.c").write_text(MAIN)
    program = tmp_path / "main"
    build = subprocess.run([c_compiler(), "-O1", "-Wall", "-Werror", "-I", str(out), str(tmp_path / "main.c"),
                            str(out / "scaled_exp_add.c"), str(out / "scaled_exp_add.o"), str(out / "row_sums.c"),
                            str(out / "row_sums.o"), "-lm", "-o", str(program)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr

    rng = np.random.default_rng(7)
    n = 1000  # not a multiple of the block: the last program is masked
    x = rng.uniform(-3, 3, n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    matrix = rng.standard_normal((7, 40))
    x.tofile(tmp_path / "x.bin")
    y.tofile(tmp_path / "y.bin")
    matrix.tofile(tmp_path / "m.bin")
    run = subprocess.run([str(program), str(n), "0.75", str(tmp_path / "x.bin"), str(tmp_path / "y.bin"),
                          str(tmp_path / "m.bin")], capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr
    result = np.frombuffer(run.stdout[:4 * n], dtype=np.float32)
    expected = np.exp(x.astype(np.float64)) * 0.75 + y.astype(np.float64)
    np.testing.assert_allclose(result, expected, rtol=2e-6, atol=1e-6)
    sums = np.frombuffer(run.stdout[4 * n:], dtype=np.float64)
    np.testing.assert_allclose(sums, matrix[:, :32].sum(axis=1), rtol=1e-12)


def test_gpu_launcher_compiles_against_the_cuda_headers(kernels, tmp_path):
    out = tmp_path / "aot"
    result = kiln_compile(f"{kernels}:scaled_exp_add", "-s", "*fp32:16, *fp32:16, *fp32:16, i32, fp32", "-c",
                          "BLOCK=128", "-t", "sm_90a", "-n", "exp_add", "-o", str(out))
    assert result.returncode == 0, result.stderr
    ptx = (out / "exp_add.ptx").read_text()
    assert ".entry scaled_exp_add(" in ptx and ".target sm_90a" in ptx
    source = (out / "exp_add.c").read_text()
    assert "cuLaunchKernel(exp_add_function, grid_x, grid_y, grid_z, 128, 1, 1, 0, stream, params, NULL)" in source
    cuda_include = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")
    if not os.path.exists(os.path.join(cuda_include, "cuda.h")):
        pytest.skip("no CUDA headers to compile the launcher against")
    build = subprocess.run([c_compiler(), "-c", "-Wall", "-Werror", "-I", cuda_include, "-I", str(out),
                            str(out / "exp_add.c"), "-o", str(tmp_path / "exp_add.o")], capture_output=True,
                           text=True)
    assert build.returncode == 0, build.stderr
    if (out / "exp_add.cubin").exists():
        # The embedded image is the cubin, byte for byte.
        assert (out / "exp_add.cubin").read_bytes()[:4] == b"\x7fELF"
        assert f"exp_add_image[{(out / 'exp_add.cubin').stat().st_size}]" in source


def test_gpu_kernel_making_descriptors_takes_its_own_arguments_only(kernels, tmp_path):
    """Descriptors made in the kernel get no tensor-map parameters ahead of
    time (the C launcher passes the kernel's arguments only): their loads
    keep their pointers. Compiled for Kiln's launcher, the same kernel
    takes two maps after its own four parameters."""
    import importlib.util

    import kiln

    spec = importlib.util.spec_from_file_location("aot_test_kernels", kernels)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32"}
    jit = kiln.compile(module.row_products, signature, {"N": 64, "K": 128, "BLOCK": 64}, target="sm_90a")
    assert len(jit.metadata["derived_tensor_maps"]) == 2 and jit.asm["ptx"].count(".param .align 64 .b8") == 2
    out = tmp_path / "aot"
    result = kiln_compile(f"{kernels}:row_products", "-s", "*fp16:16, *fp16:16, *fp32:16, i32", "-c", "N=64",
                          "-c", "K=128", "-c", "BLOCK=64", "-t", "sm_90a", "-o", str(out))
    assert result.returncode == 0, result.stderr
    ptx = (out / "row_products.ptx").read_text()
    assert ptx.count(".param .u64") + ptx.count(".param .u32") == 4 and ".align 64" not in ptx


@pytest.mark.parametrize("arguments, message", [
    (["{k}:scaled_exp_add", "-s", "*fp32, *fp32, i32", "-c", "BLOCK=128", "-t", "cpu"],
     "--signature has 3 entries but the kernel has 5 runtime parameters (x_ptr, y_ptr, out_ptr, n, scale)"),
    (["{k}:scaled_exp_add", "-s", "*fp32, *fp32, *fp32, i32, fp16", "-c", "BLOCK=128", "-t", "cpu"],
     "--signature entry 5 (scale: 'fp16'): unsupported scalar type 'fp16'"),
    (["{k}:scaled_exp_add", "-s", "*fp32, *fp32, *fp32:8, i32, fp32", "-c", "BLOCK=128", "-t", "cpu"],
     "--signature entry 3 (out_ptr: '*fp32:8'): the only hint is ':16'"),
    (["{k}:scaled_exp_add", "-s", "*fp32, *fp32, *fp32, i32, fp32", "-c", "BLOCK=128", "-t", "gfx942"],
     "unknown --target 'gfx942'"),
    (["{k}:scaled_exp_add", "-s", "*fp32, *fp32, *fp32, i32, fp32", "-t", "cpu"],
     "--constexpr needs a value for BLOCK"),
    (["{k}:scaled_exp_add", "-s", "*fp32, *fp32, *fp32, i32, fp32", "-c", "BLOCK=128", "-c", "SIZE=2", "-t", "cpu"],
     "--constexpr SIZE: not constexpr parameters of scaled_exp_add"),
    (["{k}:missing", "-s", "", "-t", "cpu"], "has no @kiln.jit function 'missing' (it has: printing, row_products, "
                                             "row_sums, scaled_exp_add)"),
    (["{k}:scaled_exp_add", "-s", "*fp32, *fp32, *fp32, i32, fp32", "-c", "BLOCK=100", "-t", "cpu"],
     "kernels.py:8:39: error in scaled_exp_add"),  # the CompilationError, located: arange of 100
    (["{k}:printing", "-s", "*fp32", "-c", "BLOCK=16", "-t", "cpu"],
     "needs Kiln's runtime (__kiln_cpu_print"),
    (["kernels.py", "-s", "", "-t", "cpu"], "expected FILE.py:KERNEL"),
])
def test_bad_requests_exit_non_zero_with_a_message(kernels, tmp_path, arguments, message):
    result = kiln_compile(*[a.replace("{k}", str(kernels)) for a in arguments], "-o", str(tmp_path / "out"))
    assert result.returncode == 1
    assert message in result.stderr, result.stderr


def test_a_usage_error_exits_2(tmp_path):
    result = kiln_compile("x.py:k", "-t", "cpu", "-o", str(tmp_path))
    assert result.returncode == 2 and "--signature" in result.stderr
