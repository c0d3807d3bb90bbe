"""Ahead-of-time compilation: a kernel as files a C program builds with.

``kiln compile FILE.py:KERNEL --signature TYPES [--constexpr NAME=VALUE ...]
--target TARGET -o DIR`` (or :func:`compile_ahead_of_time`) compiles one
specialization of a ``@kiln.jit`` kernel and writes, under DIR, for a
kernel named ``NAME`` (``--name``, default the kernel's):

* an NVIDIA target (``sm_90a``, ``sm_80``, ...): ``NAME.ptx``, ``NAME.cubin``
  when ptxas is installed, ``NAME.h`` and ``NAME.c``. The C source embeds
  the cubin (else the PTX, which the driver compiles when loading) and
  defines ``NAME_load()``, ``NAME_unload()`` and ``NAME_launch(stream, gx,
  gy, gz, args...)`` on the CUDA driver API (link with ``-lcuda``);
* the CPU (``cpu``, or ``cpu:SPEC`` with a ``KILN_CPU_TARGET`` specification
  such as ``cpu:x86-64-v3``): ``NAME.o`` (position independent), ``NAME.ll``,
  ``NAME.h`` and ``NAME.c``, which defines ``NAME_launch(gx, gy, gz,
  args...)``, running every program of the grid on the calling thread (link
  with ``-lm``).

As Triton's AOT tool, the signature types the runtime parameters in order,
each a Triton type string (``*fp32``, ``i32``, ``fp64``, ...) with an optional
``:16`` saying that the argument (a pointer's address, an integer's value)
is divisible by 16, which the compiler may use: a launch must then keep that
promise. Constexpr parameters get their values with ``--constexpr``
(``BLOCK=1024``; a Python literal, else a string).

What needs Kiln's runtime is refused with a clear error: scalar types
without a fixed C spelling here (fp16, bf16, fp8, i1), tensor descriptors
and scratch memory on the GPU, and on the CPU ``device_print``,
``device_assert``, checked mode and libdevice functions.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from kiln.errors import KilnError

__all__ = ["AOTError", "AOTResult", "compile_ahead_of_time", "parse_signature"]


class AOTError(KilnError):
    """A request ``kiln compile`` cannot satisfy, said plainly."""


@dataclass
class AOTResult:
    """What :func:`compile_ahead_of_time` wrote: the file paths by kind."""

    name: str
    files: dict[str, str]


# The C type of each runtime parameter type a launcher passes, by target kind.
_SCALAR_C_TYPES = {"i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
                   "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
                   "fp32": "float", "fp64": "double"}
# Pointers reach every element type: those without a C type of their own
# point to bytes of their size.
_POINTER_C_TYPES = {**_SCALAR_C_TYPES, "fp16": "uint16_t", "bf16": "uint16_t", "fp8e4nv": "uint8_t",
                    "fp8e5": "uint8_t", "i1": "int8_t"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_signature(text: str, parameters: Sequence[str]) -> tuple[dict[str, str], set[str]]:
    """The signature dict and the divisible-by-16 parameters of ``text``, a
    comma-separated type per runtime parameter (``"*fp32:16, i32"``).

    Raises:
        AOTError: for a count or a type that does not fit, naming the entry.
    """
    entries = [entry.strip() for entry in text.split(",")] if text.strip() else []
    if len(entries) != len(parameters):
        raise AOTError(f"--signature has {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} but the kernel "
                       f"has {len(parameters)} runtime parameter{'s' if len(parameters) != 1 else ''} "
                       f"({', '.join(parameters) or 'none'})")
    signature: dict[str, str] = {}
    divisible: set[str] = set()
    for position, (name, entry) in enumerate(zip(parameters, entries)):
        ty, _, hint = entry.partition(":")
        ty = ty.strip()
        if hint and hint.strip() != "16":
            raise AOTError(f"--signature entry {position + 1} ({name}: {entry!r}): the only hint is ':16'")
        element = ty[1:] if ty.startswith("*") else None
        if element is not None and element not in _POINTER_C_TYPES:
            raise AOTError(f"--signature entry {position + 1} ({name}: {entry!r}): unknown pointer element type "
                           f"'{element}'; expected one of {', '.join(sorted(_POINTER_C_TYPES))}")
        if element is None and ty not in _SCALAR_C_TYPES:
            raise AOTError(f"--signature entry {position + 1} ({name}: {entry!r}): unsupported scalar type "
                           f"'{ty}'; expected one of {', '.join(sorted(_SCALAR_C_TYPES))}, or a pointer such as "
                           f"'*fp32'")
        if hint and element is None and not ty.startswith(("i", "u")):
            raise AOTError(f"--signature entry {position + 1} ({name}: {entry!r}): ':16' applies to pointers "
                           f"and integers")
        signature[name] = ty
        if hint:
            divisible.add(name)
    return signature, divisible


def _constant(text: str) -> Any:
    """A ``--constexpr`` value: a Python literal, else the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _load_kernel(path: str, kernel_name: str) -> Any:
    if not os.path.isfile(path):
        raise AOTError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(f"_kiln_aot_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:
        raise AOTError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    kernel = getattr(module, kernel_name, None)
    if kernel is None or not hasattr(kernel, "arg_names"):
        found = sorted(name for name, value in vars(module).items() if hasattr(value, "arg_names"))
        raise AOTError(f"{path} has no @kiln.jit function '{kernel_name}' (it has: {', '.join(found) or 'none'})")
    return kernel


def compile_ahead_of_time(path: str, kernel_name: str, signature: str, constexprs: Mapping[str, str],
                          target: str, out_dir: str, name: Optional[str] = None, num_warps: int = 4,
                          num_stages: int = 3) -> AOTResult:
    """Compiles ``kernel_name`` of the Python file ``path`` for ``target``
    and writes the files described in this module's documentation.

    Raises:
        AOTError: for a request that cannot be met (bad file, kernel,
            signature, constexprs or target; a kernel needing Kiln's runtime).
        kiln.CompilationError: for an error in the kernel, located.
    """
    import kiln
    from kiln.compiler.specialization import Specialization

    kernel = _load_kernel(path, kernel_name)
    name = name or kernel_name
    if not _NAME.fullmatch(name):
        raise AOTError(f"--name {name!r} is not a C identifier")
    runtime = [p for p in kernel.arg_names if p not in kernel.constexpr_names]
    types, divisible = parse_signature(signature, runtime)
    values = {key: _constant(value) for key, value in constexprs.items()}
    unknown = sorted(set(values) - set(kernel.constexpr_names))
    if unknown:
        raise AOTError(f"--constexpr {', '.join(unknown)}: not constexpr parameters of {kernel_name} (they are: "
                       f"{', '.join(sorted(kernel.constexpr_names)) or 'none'})")
    defaults = {name: value for name, value in kernel._defaults.items() if name in kernel.constexpr_names}
    missing = sorted(set(kernel.constexpr_names) - set(values) - set(defaults))
    if missing:
        raise AOTError(f"--constexpr needs a value for {', '.join(missing)}")
    values = {**defaults, **values}
    cpu_spec = None
    if target == "cpu" or target.startswith("cpu:"):
        cpu_spec = target[4:] or "host"
    elif not re.fullmatch(r"sm_\d+a?", target):
        raise AOTError(f"unknown --target {target!r}: expected 'cpu', 'cpu:SPEC' (a KILN_CPU_TARGET "
                       f"specification) or an NVIDIA chip such as 'sm_90a' or 'sm_80'")
    attrs = Specialization(divisible_by_16=frozenset(divisible), equal_to_1=frozenset())
    os.makedirs(out_dir, exist_ok=True)
    if cpu_spec is not None:
        previous = os.environ.get("KILN_CPU_TARGET")
        os.environ["KILN_CPU_TARGET"] = cpu_spec
        try:
            compiled = kiln.compile(kernel, types, values, target="cpu", num_warps=num_warps, num_stages=num_stages,
                                    attrs=attrs)
        finally:
            if previous is None:
                os.environ.pop("KILN_CPU_TARGET", None)
            else:
                os.environ["KILN_CPU_TARGET"] = previous
        files = _write_cpu(compiled, kernel, runtime, types, name, cpu_spec, out_dir)
    else:
        from kiln.compiler.compiler import compile_jit_function

        # The C launcher passes the kernel's own arguments only: descriptors
        # made in the kernel keep their pointer loads instead of getting
        # tensor maps that Kiln's launcher would encode.
        compiled = compile_jit_function(kernel, types, values, attrs, target, num_warps, num_stages,
                                        tensor_map_parameters=False)
        files = _write_gpu(compiled, runtime, types, name, num_warps, out_dir)
    return AOTResult(name, files)


def _c_parameters(runtime: Sequence[str], types: Mapping[str, str], pointer: str) -> list[str]:
    """``type name`` for each runtime parameter; pointers as ``pointer``
    (a format taking the element's C type)."""
    declared = []
    for parameter in runtime:
        ty = types[parameter]
        if ty.startswith("*"):
            declared.append(f"{pointer.format(_POINTER_C_TYPES[ty[1:]])} {parameter}")
        else:
            declared.append(f"{_SCALAR_C_TYPES[ty]} {parameter}")
    return declared


def _header_comment(name: str, kernel_name: str, types: Mapping[str, str], target: str) -> str:
    listed = ", ".join(f"{parameter}: {ty}" for parameter, ty in types.items())
    return (f"/* {name}: the Kiln kernel {kernel_name} compiled ahead of time for {target}\n"
            f" * (kiln compile). Parameters: {listed}. Generated; do not edit. */\n")


def _write(path: str, data: Any) -> str:
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


def _write_cpu(compiled: Any, kernel: Any, runtime: Sequence[str], types: Mapping[str, str], name: str,
               spec: str, out_dir: str) -> dict[str, str]:
    from kiln import _C

    if compiled.metadata.get("checked"):
        raise AOTError("checked mode (KILN_CHECKED) needs Kiln's runtime; compile without it")
    try:
        obj, undefined = _C.cpu.emit_object(compiled.asm["llir"], spec)
    except (RuntimeError, ValueError) as error:
        raise AOTError(f"cannot emit the object file for cpu:{spec}: {error}") from None
    needs_runtime = sorted(symbol for symbol in undefined
                           if symbol.startswith(("__kiln_cpu_", "__nv_")) and symbol != "__kiln_cpu_cancel")
    if needs_runtime:
        raise AOTError(f"kernel {kernel.__name__} needs Kiln's runtime ({', '.join(needs_runtime)}: device_print, "
                       f"device_assert or libdevice functions), which ahead-of-time CPU code does not offer yet")
    entry = f"{compiled.name}.kiln_entry"
    parameters = _c_parameters(runtime, types, "{}*")
    signature = ", ".join(["uint32_t grid_x", "uint32_t grid_y", "uint32_t grid_z", *parameters])
    header = (_header_comment(name, kernel.__name__, types, f"the CPU ({spec})")
              + f"#ifndef KILN_AOT_{name.upper()}_H\n#define KILN_AOT_{name.upper()}_H\n\n#include <stdint.h>\n\n"
              + "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
              + "/* Runs programs (0..grid_x) x (0..grid_y) x (0..grid_z) on the calling thread. */\n"
              + f"void {name}_launch({signature});\n\n"
              + "#ifdef __cplusplus\n}\n#endif\n\n#endif\n")
    slots = ", ".join(f"(void *)&{parameter}" for parameter in runtime) or "0"
    cancel = ("/* Kiln's runtime sets this to stop a launch early; nothing does here. */\n"
              "int32_t __kiln_cpu_cancel = 0;\n\n" if "__kiln_cpu_cancel" in undefined else "")
    source = (_header_comment(name, kernel.__name__, types, f"the CPU ({spec})")
              + f"#include \"{name}.h\"\n\n"
              + cancel
              + "/* The object's entry: parameter slots, program id, grid. */\n"
              + f"extern void {name}_entry(void **params, int32_t x, int32_t y, int32_t z, int32_t nx, int32_t ny,\n"
              + f"                         int32_t nz) __asm__(\"{entry}\");\n\n"
              + f"void {name}_launch({signature}) {{\n"
              + f"  void *params[] = {{{slots}}};\n"
              + "  for (uint32_t z = 0; z < grid_z; ++z)\n"
              + "    for (uint32_t y = 0; y < grid_y; ++y)\n"
              + "      for (uint32_t x = 0; x < grid_x; ++x)\n"
              + f"        {name}_entry(params, (int32_t)x, (int32_t)y, (int32_t)z, (int32_t)grid_x, "
              + "(int32_t)grid_y, (int32_t)grid_z);\n"
              + "}\n")
    return {"object": _write(os.path.join(out_dir, f"{name}.o"), obj),
            "llir": _write(os.path.join(out_dir, f"{name}.ll"), compiled.asm["llir"]),
            "header": _write(os.path.join(out_dir, f"{name}.h"), header),
            "source": _write(os.path.join(out_dir, f"{name}.c"), source)}


_PTX_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)", re.S)


def _write_gpu(compiled: Any, runtime: Sequence[str], types: Mapping[str, str], name: str, num_warps: int,
               out_dir: str) -> dict[str, str]:
    ptx = compiled.asm["ptx"]
    match = _PTX_ENTRY.search(ptx)
    if match is None:
        raise AOTError("the PTX has no kernel entry")
    entry, params = match.group(1), [p for p in match.group(2).split(",") if p.strip()]
    if len(params) != len(runtime):
        raise AOTError(f"kernel {compiled.name} takes {len(params)} parameters on the GPU for its {len(runtime)} "
                       f"runtime arguments: it needs Kiln's runtime (tensor maps or scratch memory), which "
                       f"ahead-of-time code does not offer yet")
    shared = int(compiled.metadata.get("shared", 0))
    cubin = compiled.asm.get("cubin")
    image = cubin if cubin is not None else ptx.encode() + b"\0"
    kind = "cubin" if cubin is not None else "PTX (the driver compiles it when loading)"
    parameters = _c_parameters(runtime, types, "CUdeviceptr")
    signature = ", ".join(["CUstream stream", "unsigned grid_x", "unsigned grid_y", "unsigned grid_z", *parameters])
    header = (_header_comment(name, compiled.name, types, compiled.metadata.get("target", "the GPU"))
              + f"#ifndef KILN_AOT_{name.upper()}_H\n#define KILN_AOT_{name.upper()}_H\n\n"
              + "#include <stdint.h>\n#include <cuda.h>\n\n"
              + "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
              + "/* Loads the kernel into the current context (call once, with a context current). */\n"
              + f"CUresult {name}_load(void);\nCUresult {name}_unload(void);\n"
              + f"/* Launches over the grid on `stream`: {num_warps * 32} threads and {shared} bytes of shared\n"
              + " * memory per program. */\n"
              + f"CUresult {name}_launch({signature});\n\n"
              + "#ifdef __cplusplus\n}\n#endif\n\n#endif\n")
    wrapped = ",\n".join(",".join(str(byte) for byte in image[i:i + 24]) for i in range(0, len(image), 24))
    slots = ", ".join(f"(void *)&{parameter}" for parameter in runtime) or "0"
    source = (_header_comment(name, compiled.name, types, compiled.metadata.get("target", "the GPU"))
              + f"#include \"{name}.h\"\n\n#include <stddef.h>\n\n"
              + f"/* The {kind}. */\n"
              + f"static const unsigned char {name}_image[{len(image)}] = {{\n{wrapped}\n}};\n\n"
              + f"static CUmodule {name}_module;\nstatic CUfunction {name}_function;\n\n"
              + f"CUresult {name}_load(void) {{\n"
              + f"  CUresult result = cuModuleLoadData(&{name}_module, {name}_image);\n"
              + "  if (result != CUDA_SUCCESS)\n    return result;\n"
              + f"  result = cuModuleGetFunction(&{name}_function, {name}_module, \"{entry}\");\n"
              + ("  if (result != CUDA_SUCCESS)\n    return result;\n"
                 f"  /* Beyond 48 KiB a kernel must opt in to its shared memory. */\n"
                 f"  result = cuFuncSetAttribute({name}_function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "
                 f"{shared});\n" if shared > 49152 else "")
              + "  return result;\n}\n\n"
              + f"CUresult {name}_unload(void) {{\n  return cuModuleUnload({name}_module);\n}}\n\n"
              + f"CUresult {name}_launch({signature}) {{\n"
              + f"  void *params[] = {{{slots}}};\n"
              + f"  return cuLaunchKernel({name}_function, grid_x, grid_y, grid_z, {num_warps * 32}, 1, 1, {shared}, "
              + "stream, params, NULL);\n}\n")
    files = {"ptx": _write(os.path.join(out_dir, f"{name}.ptx"), ptx),
             "header": _write(os.path.join(out_dir, f"{name}.h"), header),
             "source": _write(os.path.join(out_dir, f"{name}.c"), source)}
    if cubin is not None:
        files["cubin"] = _write(os.path.join(out_dir, f"{name}.cubin"), cubin)
    return files
