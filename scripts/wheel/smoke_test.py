"""Checks an installed Kiln wheel: run it with the interpreter the wheel is
installed in, from a directory outside the checkout (scripts/build_wheel.sh
--check does).

It checks that ``kiln`` is the installed package (not a checkout's), runs a
kernel on the CPU backend, compiles a kernel calling a libdevice function
for ``sm_90a`` (PTX, no GPU needed), and shows that the compiler reads the
libdevice the wheel bundles before the CUDA toolkit's: a copy of the package
whose bundled file is damaged fails to compile, naming that file (a wheel
built without libdevice skips that). Exits non-zero, with the reason, on the
first failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Every compile here compiles: no entry of an earlier run's on-disk cache
# (nor of the user's) stands in for one.
os.environ["KILN_DISABLE_CACHE"] = "1"

import kiln  # noqa: E402 - after the environment is set
import kiln.language as kl  # noqa: E402


@kiln.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


@kiln.jit
def erf_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.erf(kl.load(x_ptr + offs, mask=mask)), mask=mask)


ERF_SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


def check_installed() -> Path:
    """The installed package's directory; fails if kiln comes from elsewhere."""
    package = Path(kiln.__file__).resolve().parent
    if Path(sys.prefix).resolve() not in package.parents:
        raise SystemExit(f"kiln is imported from {package}, not from this environment ({sys.prefix})")
    print(f"kiln {kiln.__version__} from {package}")
    return package


def check_cpu_kernel() -> None:
    import numpy as np

    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 0.5, dtype=np.float32)
    out = np.empty_like(x)
    add_kernel[(kiln.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    if not np.array_equal(out, x + y):
        raise SystemExit("vector add on the CPU backend gave wrong results")
    print("CPU backend: vector add correct")


def check_ptx() -> None:
    # The bundled libdevice, not a KILN_LIBDEVICE_PATH of the caller's.
    os.environ.pop("KILN_LIBDEVICE_PATH", None)
    kernel = kiln.compile(erf_kernel, signature=ERF_SIGNATURE, constexprs={"BLOCK": 256}, target="sm_90a")
    ptx = kernel.asm["ptx"]
    if ".entry erf_kernel" not in ptx or "__nv_" in ptx or ".extern" in ptx:
        raise SystemExit(f"the sm_90a PTX of a kernel calling erf is not self-contained:\n{ptx}")
    print(f"sm_90a: {len(ptx.splitlines())} lines of PTX, libdevice's erf linked in")


def check_bundled_libdevice_first(package: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="kiln-smoke-") as tmp:
        copy = Path(tmp) / "kiln"
        shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
        damaged = copy / "lib" / "libdevice.10.bc"
        damaged.write_bytes(b"not bitcode")
        code = ("import kiln, sys\n"
                "sys.path.insert(0, sys.argv[1])\n"
                "from smoke_test import ERF_SIGNATURE, erf_kernel\n"
                "try:\n"
                "    kiln.compile(erf_kernel, signature=ERF_SIGNATURE, constexprs={'BLOCK': 256}, target='sm_90a')\n"
                "except kiln.CompilationError as error:\n"
                "    print(error)\n"
                "else:\n"
                "    print('compiled')\n")
        env = {key: value for key, value in os.environ.items() if key != "KILN_LIBDEVICE_PATH"}
        env["PYTHONPATH"] = tmp
        result = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parent)], cwd=tmp,
                                env=env, capture_output=True, text=True)
        if str(damaged) not in result.stdout:
            raise SystemExit("the compiler did not read the bundled libdevice first; with it damaged, compiling "
                             f"gave:\n{result.stdout}{result.stderr}")
    print("the bundled libdevice is read before the CUDA toolkit's")


def main() -> None:
    package = check_installed()
    check_cpu_kernel()
    check_ptx()
    if (package / "lib" / "libdevice.10.bc").is_file():
        check_bundled_libdevice_first(package)
    else:  # built with KILN_WHEEL_LIBDEVICE=none: the PTX above used the toolkit's
        print("no bundled libdevice in this wheel (built with KILN_WHEEL_LIBDEVICE=none)")


if __name__ == "__main__":
    main()
