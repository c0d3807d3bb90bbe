//===- KilnDotOps.td - Matrix products of blocks ------------*- tablegen -*-===//
//
// kiln.dot: the block-level matrix product that the GPU backend maps onto
// tensor cores and the CPU backend onto vector multiply-adds.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DOT_OPS
#define KILN_DOT_OPS

def Kiln_InputPrecision : I32EnumAttr<"InputPrecision",
    "how fp32 operands of a dot are multiplied", [
    I32EnumAttrCase<"ieee", 0>, I32EnumAttrCase<"tf32", 1>,
    I32EnumAttrCase<"tf32x3", 2>]> {
  let cppNamespace = "::mlir::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_InputPrecisionAttr : EnumAttr<Kiln_Dialect, Kiln_InputPrecision, "precision"> {
  let assemblyFormat = "`<` $value `>`";
}

def Kiln_Float8Format : I32EnumAttr<"Float8Format",
    "the 8-bit float format of a dot operand held as i8 bytes", [
    I32EnumAttrCase<"e4m3", 0>, I32EnumAttrCase<"e5m2", 1>]> {
  let cppNamespace = "::mlir::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_Float8FormatAttr : EnumAttr<Kiln_Dialect, Kiln_Float8Format, "float8"> {
  let assemblyFormat = "`<` $value `>`";
}

def Kiln_F32ToFloat8Op : Kiln_Op<"f32_to_float8", [Pure, Elementwise,
    SameOperandsAndResultShape]> {
  let summary = "Round f32 values to 8-bit floats, held as bytes";
  let description = [{
    Rounds each f32 of `src` (a scalar or a block) to the nearest value of
    the 8-bit float `format` (e4m3: OCP E4M3FN; e5m2), ties to even, and
    returns its byte. Finite values beyond the largest finite value of the
    format, and infinities, saturate to it with their sign; a NaN, whatever
    its sign, becomes the NaN byte 0x7f. These are the results
    of PTX's `cvt.rn.satfinite.{e4m3,e5m2}x2.f32`, which NVIDIA targets of
    sm_90 and later lower this op to; every other target expands it into
    integer ops (kiln-expand-float8-rounding), so the result never depends
    on the target, on denormal flushing or on fp contraction.

    Example:
    ```mlir
    %b = kiln.f32_to_float8 %x {format = #kiln.float8<e5m2>} : tensor<128xf32> -> tensor<128xi8>
    ```
  }];
  let arguments = (ins Kiln_F32Like:$src, Kiln_Float8FormatAttr:$format);
  let results = (outs Kiln_I8Like:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  // Constants fold (a load's `other`, a splat in a select): LLVM's APFloat
  // rounds them after the saturation.
  let hasFolder = 1;
}

def Kiln_DotOp : Kiln_Op<"dot", [Pure, AllTypesMatch<["c", "d"]>]> {
  let summary = "Matrix product of two blocks, added to a third";
  let description = [{
    `d = a @ b + c` for `a` of shape [M, K], `b` of shape [K, N] and `c` of
    shape [M, N], or the batched form with a leading batch dimension on all
    three. `a` and `b` have one element type: f16, bf16 or f32 multiplied
    into an f32 (or, for f16, also an f16) accumulator, or i8 into i32.
    Products are summed in an unspecified order.

    8-bit floats are i8 bytes in the IR; `aFloat8` and `bFloat8` (both or
    neither) say that `a` and `b` hold such bytes and in which format
    (`e4m3`, Triton's `float8e4nv`, or `e5m2`, its `float8e5`; the two may
    differ), multiplied into an f32 or f16 accumulator. Targets without
    8-bit float tensor cores decode them to f16 first (kiln-decode-fp8-dots),
    which holds every value of both formats.

    `inputPrecision` says how f32 operands are multiplied: exactly
    (`ieee`), rounded to tf32 (`tf32`, 10 explicit mantissa bits, what
    tensor cores take), or split into a high and low tf32 part and
    multiplied three times (`tf32x3`, close to fp32 accuracy). Backends
    without tf32 arithmetic may compute more precisely than asked.
    `maxNumImpreciseAcc`, when at most K, bounds how many products an fp8
    dot may accumulate at reduced precision before promoting (Triton's
    argument of the same name; at least one instruction's); 0 or absent
    means full precision, more than K none asked for. A target
    that cannot promote within a dot computes it precisely instead (one
    without 8-bit float tensor cores decodes the operands to f16).

    Example:
    ```mlir
    %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<tf32>} : tensor<64x32xf16> * tensor<32x128xf16> -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Kiln_Block:$a, Kiln_Block:$b, Kiln_Block:$c,
                   Kiln_InputPrecisionAttr:$inputPrecision,
                   DefaultValuedAttr<I32Attr, "0">:$maxNumImpreciseAcc,
                   OptionalAttr<Kiln_Float8FormatAttr>:$aFloat8,
                   OptionalAttr<Kiln_Float8FormatAttr>:$bFloat8);
  let results = (outs Kiln_Block:$d);
  let assemblyFormat = [{
    $a `,` $b `,` $c attr-dict `:` type($a) `*` type($b) `->` type($d)
  }];
  let extraClassDeclaration = [{
    /// Whether the operands are 8-bit float bytes.
    bool hasFloat8Operands() { return getAFloat8().has_value(); }
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

#endif // KILN_DOT_OPS
