"""Deliberately invalid kernels: a valid generated kernel with one mistake.

Each mutation is either lines inserted into the kernel's body (a type
error, a shape mismatch, an unsupported construct, a wrong arity, an
undefined name, ...), which must fail to compile with an error naming one
of those lines, or a change to the launch (a missing, extra or badly typed
argument, a bad constexpr, a bad grid), which must fail with a clean
`TypeError`/`ValueError`/Kiln error. Mutations marked "ok-or-error" are
ones Triton itself accepts or rejects depending on details; they only
must not end in an internal error, a crash or a hang.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Optional

import fuzz_generator
from fuzz_generator import Case, KernelBuilder

# (lines inserted into the kernel, expectation, known issue). `{B}` is the
# first block dimension's constexpr name, `{F}` a full-block float value.
_F = "offs.to(kl.float32)"
STATEMENTS: list[tuple[str, list[str], str, Optional[str]]] = [
    ("float bitwise", [f"bad = {_F} & 3"], "error", None),
    ("float invert", ["bad = ~offs.to(kl.float16)"], "error", None),
    ("float floordiv", [f"bad = {_F} // 2.0"], "error", None),
    ("math on ints", ["bad = kl.exp(offs)"], "error", None),
    ("math on ints", ["bad = kl.sqrt(offs.to(kl.int64))"], "error", None),
    ("pointer plus pointer", ["bad = out + out"], "error", None),
    ("pointer times int", ["bad = out * 2"], "error", None),
    ("float pointer offset", ["bad = out + 1.5"], "error", None),
    ("pointer comparison", ["bad = out < out"], "error", None),
    ("negated pointer", ["bad = -out"], "error", None),
    # A pointer to an integer is a valid cast (Triton's `ptr.to(tl.int64)`);
    # to a float it is not.
    ("pointer cast", ["bad = out.to(kl.float32)"], "error", None),
    ("load of a non-pointer", ["bad = kl.load(offs)"], "error", None),
    ("non-boolean mask", ["kl.store(out + offs, offs, mask=offs)"], "error", None),
    ("other without mask", ["bad = kl.load(out + offs, other=1)"], "error", None),
    ("arange not a power of two", ["bad = kl.arange(0, 3)"], "error", None),
    ("arange reversed", ["bad = kl.arange(8, 4)"], "error", None),
    ("arange too long", ["bad = kl.arange(0, 2**40)"], "error", None),
    ("arange of floats", ["bad = kl.arange(0.5, 4)"], "error", None),
    ("arange of a runtime value", ["bad = kl.arange(0, n + pid)"], "error", None),
    ("program_id axis", ["bad = kl.program_id(3)"], "error", None),
    ("num_programs axis", ["bad = kl.num_programs(-1)"], "error", None),
    ("full not a power of two", ["bad = kl.full([3], 1, kl.int32)"], "error", None),
    ("full with a string dtype", ["bad = kl.full([4], 1, 'float')"], "error", None),
    ("full of a block", ["bad = kl.full([4], offs, kl.int32)"], "error", None),
    ("zeros of a runtime shape", ["bad = kl.zeros([n + pid], kl.int32)"], "error", None),
    ("expand_dims axis", ["bad = kl.expand_dims(offs, 5)"], "error", None),
    ("reduction axis", ["bad = kl.sum(offs, axis=3)"], "error", None),
    ("reduction of a pointer", ["bad = kl.sum(out + offs, axis=0)"], "error", None),
    ("cast to a string", ["bad = offs.to('int32')"], "error", None),
    ("cast to a number", ["bad = kl.cast(offs, 5)"], "error", None),
    ("bitcast width", ["bad = offs.to(kl.int8, bitcast=True)"], "error", None),
    ("static_assert", ["kl.static_assert(False, 'fuzz')"], "error", None),
    ("static_assert of a runtime value", ["kl.static_assert(pid > 0)"], "error", None),
    ("runtime exponent", ["bad = offs ** offs"], "error", None),
    ("negative exponent", ["bad = offs ** -1"], "error", None),
    ("float exponent", ["bad = offs ** 2.5"], "error", None),
    ("block subscript", ["bad = offs[0]"], "error", None),
    ("block slice", ["bad = offs[1:3]"], "error", None),
    ("missing attribute", ["bad = offs.nonexistent"], "error", None),
    ("missing method", ["bad = offs.nonexistent_method()"], "error", None),
    ("undefined name", ["bad = undefined_name + 1"], "error", None),
    ("missing kl function", ["bad = kl.nonexistent(offs)"], "error", None),
    ("non-jit function", ["bad = sorted(offs)"], "error", None),
    ("numpy function", ["bad = np.sum(offs)"], "error", None),
    ("arity: arange", ["bad = kl.arange(0)"], "error", None),
    ("arity: load", ["bad = kl.load()"], "error", None),
    ("arity: where", ["bad = kl.where(mask, offs)"], "error", None),
    ("arity: maximum", ["bad = kl.maximum(offs)"], "error", None),
    ("arity: exp", [f"bad = kl.exp({_F}, {_F})"], "error", None),
    ("arity: program_id", ["bad = kl.program_id()"], "error", None),
    ("arity: store", ["kl.store(out + offs)"], "error", None),
    ("unknown keyword", ["bad = kl.load(out + offs, bogus=1)"], "error", None),
    ("unknown keyword", ["bad = kl.sum(offs, axis=0, bogus=True)"], "error", None),
    ("where on pointers", ["bad = kl.where(mask, out + offs, out)"], "ok-or-error", None),
    ("where on a pointer and a number", ["bad = kl.where(mask, out + offs, offs)"], "error", None),
    ("break", ["for k in range(4):", "    break"], "error", None),
    ("continue", ["for k in range(n + pid):", "    continue"], "error", None),
    ("try", ["try:", "    bad = offs", "except Exception:", "    bad = offs"], "error", None),
    ("with", ["with open('x') as f:", "    bad = offs"], "error", None),
    ("lambda", ["bad = lambda q: q"], "error", None),
    ("del", ["bad = offs", "del bad"], "error", None),
    ("list comprehension", ["bad = [q for q in range(3)]"], "error", None),
    ("dict", ["bad = {1: offs}"], "error", None),
    ("set", ["bad = {offs}"], "error", None),
    ("runtime print", ["print(offs)"], "error", None),
    ("raise", ["raise ValueError('fuzz')"], "error", None),
    ("import", ["import math"], "error", None),
    ("class", ["class Bad:", "    pass"], "error", None),
    ("nested def", ["def inner():", "    return 1"], "error", None),
    ("walrus", ["bad = (q := 3)"], "error", None),
    ("f-string", ["bad = f'{offs}'"], "ok-or-error", None),
    ("yield", ["yield offs"], "error", None),
    ("global", ["global offs_global", "bad = offs"], "error", None),
    ("matmul operator", ["bad = offs @ offs"], "error", None),
    ("membership", ["bad = offs in offs"], "error", None),
    ("chained comparison", ["bad = 0 < offs < 5"], "ok-or-error", None),
    # Blocks of two elements: a one-element block is a scalar condition, as
    # in Triton (with a warning), and BLOCK may be 1.
    ("block truth value", ["if kl.arange(0, 2) > 0:", "    bad = offs"], "error", None),
    ("block in a while", ["while kl.arange(0, 2) < 3:", "    bad = offs"], "error", None),
    ("iterating a block", ["for q in offs:", "    bad = q"], "error", None),
    ("zero step", ["for k in range(0, 4, 0):", "    bad = offs"], "error", None),
    # Valid: a constant negative step counts down, as in Python and Triton.
    ("negative step", ["for k in range(4, 0, -1):", "    bad = offs"], "ok-or-error", None),
    ("float range", ["for k in range(0.5, 4):", "    bad = offs"], "error", None),
    ("runtime static_range", ["for k in kl.static_range(n + pid):", "    bad = offs"], "error", None),
    ("return in a runtime loop", ["for k in range(n + pid):", "    return"], "error", None),
    ("one-sided variable", ["if n + pid > 3:", "    only = offs", "bad = only + 1"], "error", None),
    ("loop-carried type change", ["acc = offs", "for k in range(n + pid):", "    acc = acc.to(kl.float32)"], "error",
     None),
    ("loop-carried shape change", ["acc = offs", "for k in range(n + pid):", "    acc = kl.sum(acc, axis=0)"], "error",
     None),
    ("if type change", ["acc = offs", "if n + pid > 2:", "    acc = acc.to(kl.float32)", "bad = acc + 1"], "error",
     None),
    ("assignment to a parameter's attribute", ["offs.dtype = kl.int8"], "error", None),
    ("tuple unpacking", ["p, q = offs"], "error", None),
    ("starred", ["bad = kl.maximum(*offs)"], "error", None),
    ("shape mismatch", ["bad = offs + kl.zeros([{twice}], kl.int32)"], "error", None),
    ("shape mismatch", ["bad = kl.where(mask, offs, kl.zeros([{twice}], kl.int32))"], "error", None),
    ("broadcast_to another shape", ["bad = kl.broadcast_to(offs, [{twice}])"], "error", None),
    ("store of a wider block", ["kl.store(out + offs, kl.zeros([{twice}], kl.int32))"], "error", None),
    ("helper arity", ["bad = helper_bad(offs)"], "error", None),
    ("helper arity", ["bad = helper_bad(offs, offs, offs)"], "error", None),
    ("helper keyword", ["bad = helper_bad(offs, c=offs)"], "error", None),
    ("recursive helper", ["bad = helper_recursive(offs)"], "error", None),
    ("device_print of a pointer format", ["kl.device_print(5, offs)"], "error", None),
]

MUTATED_HELPER = "helper_mutated"
HELPERS = ["@kiln.jit\ndef helper_bad(a, b):\n    return a + b\n\n",
           "@kiln.jit\ndef helper_recursive(a):\n    return helper_recursive(a) + 1\n\n"]

# Launch mutations: (what, how, expectation, known issue).
LAUNCHES: list[tuple[str, dict, str, Optional[str]]] = [
    ("missing argument", {"drop": "n"}, "error", None),
    ("missing pointer", {"drop": "out"}, "error", None),
    ("missing constexpr", {"drop": "{B}"}, "error", None),
    ("extra argument", {"extra_positional": "3"}, "error", None),
    ("unknown keyword", {"extra": {"bogus": "1"}}, "error", None),
    ("None for a pointer", {"replace": {"out": "None"}}, "error", None),
    ("string for a scalar", {"replace": {"n": "'7'"}}, "error", None),
    ("list for a pointer", {"replace": {"out": "[1, 2, 3]"}}, "error", None),
    ("complex array", {"replace": {"out": "np.zeros(4, dtype=np.complex64)"}}, "error", None),
    ("object array", {"replace": {"out": "np.array([object()])"}}, "error", None),
    ("huge integer", {"replace": {"n": "2**70"}}, "error", None),
    ("array for a scalar", {"replace": {"n": "np.zeros(4, dtype=np.int32)"}}, "error", None),
    ("float for an int scalar", {"replace": {"n": "7.5"}}, "ok-or-error", None),
    ("bool for an int scalar", {"replace": {"n": "True"}}, "ok-or-error", None),
    ("read-only array", {"readonly": "out"}, "error", None),
    ("meta tensor", {"replace": {"out": "torch.empty(4, device='meta')"}}, "error", None),
    ("block not a power of two", {"replace": {"{B}": "3"}}, "error", None),
    ("block zero", {"replace": {"{B}": "0"}}, "error", None),
    ("block negative", {"replace": {"{B}": "-4"}}, "error", None),
    ("block string", {"replace": {"{B}": "'64'"}}, "error", None),
    ("block float", {"replace": {"{B}": "2.0"}}, "error", None),
    ("block None", {"replace": {"{B}": "None"}}, "error", None),
    ("block too long", {"replace": {"{B}": "2**40"}}, "error", None),
    ("block of 2**21", {"replace": {"{B}": "2**21"}}, "error", None),
    ("constexpr string", {"replace": {"C0": "'x'"}}, "ok-or-error", None),
    ("constexpr list", {"replace": {"C0": "[1, 2]"}}, "ok-or-error", None),
    ("grid zero", {"grid": "(0,)"}, "ok-or-error", None),
    ("grid negative", {"grid": "(-1,)"}, "error", None),
    ("grid string", {"grid": "'abc'"}, "error", None),
    ("grid four dims", {"grid": "(1, 1, 1, 1)"}, "error", None),
    ("grid empty", {"grid": "()"}, "error", None),
    ("grid float", {"grid": "(1.5,)"}, "error", None),
    ("grid huge", {"grid": "(2**40,)"}, "error", None),
    ("grid lambda returning garbage", {"grid": "lambda meta: 'x'"}, "error", None),
    ("num_warps three", {"extra": {"num_warps": "3"}}, "ok-or-error", None),
    ("num_warps string", {"extra": {"num_warps": "'x'"}}, "error", None),
    ("backend unknown", {"extra": {"backend": "'tpu'"}}, "error", None),
]


def _twice(builder: KernelBuilder) -> Optional[str]:
    """A shape that does not broadcast with the block's, or None."""
    shape = list(builder.block_shape)
    for axis, extent in enumerate(shape):
        if extent > 1:
            shape[axis] = extent * 2
            return ", ".join(str(d) for d in shape)
    return None


def mutate(builder: KernelBuilder, case: Case) -> Case:
    """`case` with one mistake, chosen by the case's seed."""
    rng = random.Random(case.seed * 104729 + 3)
    block = next(iter(builder.block_params))
    if rng.random() < 0.7:
        what, lines, expect, known = rng.choice(STATEMENTS)
        twice = _twice(builder)
        if "{twice}" in "".join(lines):
            if twice is None:
                what, lines, expect, known = STATEMENTS[0]
            lines = [line.replace("{twice}", twice or "") for line in lines]
        # Between two statements after the prologue (which defines offs and
        # mask), before the stores; or in a helper the kernel calls there,
        # where the error must name the helper's line.
        at = rng.randint(1, len(builder.body) - 1)
        in_helper = rng.random() < 0.2
        inserted = [f"{MUTATED_HELPER}_result = {MUTATED_HELPER}(offs, out, mask, n, pid)"] if in_helper else lines
        new_body = [line for statement in builder.body[:at] for line in statement.lines] + inserted + \
            [line for statement in builder.body[at:] for line in statement.lines]
        helpers = builder.helpers
        extra = [h.rstrip("\n") for h in HELPERS]
        if in_helper:
            extra.append("\n".join(["@kiln.jit", f"def {MUTATED_HELPER}(offs, out, mask, n, pid):"]
                                   + ["    " + line for line in lines] + ["    return offs"]))
        builder.helpers = helpers + extra
        source = builder.module(new_body, builder.launch_lines(), builder.decorator)
        builder.helpers = helpers
        error_lines = _line_numbers(source, lines, MUTATED_HELPER if in_helper else fuzz_generator.KERNEL_NAME)
        return replace(case, source=source, expect=expect, what=what + (" in a helper" if in_helper else ""),
                       known=known, outputs={}, error_lines=error_lines)
    what, how, expect, known = rng.choice(LAUNCHES)

    def name(text: str) -> str:
        return text.replace("{B}", block)
    if "C0" in "".join(how.get("replace", {})) and "C0" not in builder.constexprs:
        what, how, expect, known = LAUNCHES[0]
    if "readonly" in how and builder.buffer_dtype(how["readonly"]).name == "bfloat16":
        # bfloat16 arrays are torch tensors, which have no read-only flag.
        what, how, expect, known = LAUNCHES[0]
    launch = builder.launch_lines(drop=name(how["drop"]) if "drop" in how else None,
                                  extra=how.get("extra"), grid=how.get("grid"),
                                  replace={name(k): v for k, v in how.get("replace", {}).items()})
    if "extra_positional" in how:
        head, inside = launch[-2].split("](", 1)
        parts = inside[:-1].split(", ")
        positional = len(_split_call(launch[-2]))
        parts.insert(positional, how["extra_positional"])
        launch[-2] = f"{head}]({', '.join(parts)})"
    if "readonly" in how:
        launch.insert(len(launch) - 2, f"{how['readonly']}.setflags(write=False)")
    source = builder.module(builder.body_lines(), launch, builder.decorator)
    return replace(case, source=source, expect=expect, what=what, known=known, outputs={})


def _split_call(call: str) -> list[str]:
    """The positional arguments of the launch line `kernel[grid](a, b, K=1)`
    (the fuzzer writes no commas inside an argument)."""
    inside = call[call.index("](") + 2:-1]
    return [part.strip() for part in inside.split(", ") if "=" not in part]


def _line_numbers(source: str, inserted: list[str], function: str) -> list[int]:
    """1-based lines of `source` holding the lines inserted into `function`
    (and the lines of the helpers some mistakes call, where a mistake in
    the call is reported)."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {function}("))
    wanted = ["    " + line for line in inserted]
    for i in range(start, len(lines) - len(wanted) + 1):
        if lines[i:i + len(wanted)] == wanted:
            numbers = list(range(i + 1, i + 1 + len(wanted)))
            helper_lines = [j + 1 for j, line in enumerate(lines)
                            if line.startswith("    return a + b") or "helper_recursive(a)" in line]
            return numbers + helper_lines
    raise ValueError("inserted lines not found")
