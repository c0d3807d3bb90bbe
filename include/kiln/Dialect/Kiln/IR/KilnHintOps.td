//===- KilnHintOps.td - Compiler hints and debugging ops -----*- tablegen -*-===//
//
// Ops that tell the compiler facts about values (read by the axis-info
// analysis, lowered to nothing) and ops that help debugging kernels.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_HINT_OPS
#define KILN_HINT_OPS

def Kiln_AxisHintOp : Kiln_Op<"axis_hint", [Pure, AllTypesMatch<["src", "result"]>]> {
  let summary = "Assert facts about an integer value's divisibility and runs";
  let description = [{
    Returns `src` unchanged and tells the axis-info analysis, per dimension,
    facts the user guarantees: every element is a multiple of
    `divisibility`, runs of `contiguity` consecutive elements increase by
    one, runs of `constancy` elements are equal. Absent arrays claim nothing.
    A scalar has one dimension. Every value must be a power of two.

    Example:
    ```mlir
    %o = kiln.axis_hint %off {divisibility = array<i64: 16>} : i32
    ```
  }];
  let arguments = (ins Kiln_IntLike:$src,
                   OptionalAttr<DenseI64ArrayAttr>:$divisibility,
                   OptionalAttr<DenseI64ArrayAttr>:$contiguity,
                   OptionalAttr<DenseI64ArrayAttr>:$constancy);
  let results = (outs Kiln_IntLike:$result);
  let assemblyFormat = "$src attr-dict `:` type($src)";
  let hasVerifier = 1;
}

def Kiln_AssumeOp : Kiln_Op<"assume", [MemoryEffects<[MemWrite]>]> {
  let summary = "A condition the user guarantees to hold";
  let description = [{
    States that `cond` is true. The axis-info analysis reads the form
    `x % c == 0` (with `c` a constant) as `x` being a multiple of `c`'s
    largest power-of-two divisor; other conditions are accepted and
    ignored. Lowers to nothing. It is marked as writing memory only so that
    dead-code elimination keeps it (and the condition it reads).

    Example:
    ```mlir
    kiln.assume %cond : i1
    ```
  }];
  let arguments = (ins Kiln_BoolLike:$cond);
  let assemblyFormat = "$cond attr-dict `:` type($cond)";
}

def Kiln_DebugBarrierOp : Kiln_Op<"debug_barrier"> {
  let summary = "Wait until every thread of the program reaches this point";
  let description = [{
    Synchronizes the threads that run one program instance (a CTA barrier
    on the GPU); a no-op where a program is one thread.

    Example:
    ```mlir
    kiln.debug_barrier
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Kiln_PrintOp : Kiln_Op<"print", [MemoryEffects<[MemWrite]>]> {
  let summary = "Print scalars or every element of blocks at run time";
  let description = [{
    Prints, for every element of each operand (once per element, whatever
    the layout), a line `pid (x, y, z) idx (i, ...) <prefix><value>`, with
    `(operand k) ` after the prefix when there are several operands.
    `isSigned` tells, per operand, whether integers print as signed; `hex`
    prints integers (and the bits of floats) in hexadecimal.

    Example:
    ```mlir
    kiln.print %x {prefix = "x: ", hex = false, isSigned = array<i32: 1>} : tensor<128xi32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_ScalarOrBlock>:$args, StrAttr:$prefix,
                   BoolAttr:$hex, DenseI32ArrayAttr:$isSigned);
  let assemblyFormat = "$args attr-dict `:` type($args)";
  let hasVerifier = 1;
}

def Kiln_AssertOp : Kiln_Op<"assert", [MemoryEffects<[MemWrite]>]> {
  let summary = "Report every element of a condition that is false";
  let description = [{
    For each element of `cond` that is false, reports `message` with the
    source `file`, `line` and `function` of the assertion. The frontend only
    emits it in debug mode.

    Example:
    ```mlir
    kiln.assert %ok {message = "x > 0", file = "k.py", line = 12 : i32, function = "k"} : tensor<128xi1>
    ```
  }];
  let arguments = (ins Kiln_BoolLike:$cond, StrAttr:$message, StrAttr:$file,
                   I32Attr:$line, StrAttr:$function);
  let assemblyFormat = "$cond attr-dict `:` type($cond)";
}

#endif // KILN_HINT_OPS
