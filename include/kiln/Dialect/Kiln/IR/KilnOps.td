//===- KilnOps.td - Operations of the kiln dialect ---------*- tablegen -*-===//
//
// Grid queries, index ranges, block shape changes, pointer arithmetic and
// masked loads and stores. Each op verifies the shapes and element types it
// relates, so that a frontend mistake surfaces as a verifier message at the
// kernel source line that produced the op.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_OPS
#define KILN_OPS

include "kiln/Dialect/Kiln/IR/KilnTypes.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Kiln_CacheModifier : I32EnumAttr<"CacheModifier", "cache modifier of a memory access", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"ca", 1>, I32EnumAttrCase<"cg", 2>,
    I32EnumAttrCase<"cs", 3>, I32EnumAttrCase<"wb", 4>, I32EnumAttrCase<"wt", 5>,
    I32EnumAttrCase<"cv", 6>]> {
  let cppNamespace = "::mlir::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_CacheModifierAttr : EnumAttr<Kiln_Dialect, Kiln_CacheModifier, "cache"> {
  let assemblyFormat = "`<` $value `>`";
}

def Kiln_EvictionPolicy : I32EnumAttr<"EvictionPolicy", "eviction policy of a memory access", [
    I32EnumAttrCase<"normal", 0>, I32EnumAttrCase<"evict_first", 1>,
    I32EnumAttrCase<"evict_last", 2>]> {
  let cppNamespace = "::mlir::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_EvictionPolicyAttr : EnumAttr<Kiln_Dialect, Kiln_EvictionPolicy, "evict"> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Grid queries
//===----------------------------------------------------------------------===//

def Kiln_ProgramIdOp : Kiln_Op<"program_id", [Pure]> {
  let summary = "Index of this program instance along a grid axis";
  let description = [{
    Returns the index, along grid axis 0, 1 or 2, of the program instance
    that runs the kernel.

    Example:
    ```mlir
    %pid = kiln.program_id {axis = 0 : i32} : i32
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Kiln_NumProgramsOp : Kiln_Op<"num_programs", [Pure]> {
  let summary = "Number of program instances along a grid axis";
  let description = [{
    Returns the size of the launch grid along axis 0, 1 or 2.

    Example:
    ```mlir
    %n = kiln.num_programs {axis = 0 : i32} : i32
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Block creation and shape
//===----------------------------------------------------------------------===//

def Kiln_MakeRangeOp : Kiln_Op<"make_range", [Pure]> {
  let summary = "Block of consecutive integers [start, end)";
  let description = [{
    Returns the 1-D block `[start, start + 1, ..., end - 1]` of i32. The
    length `end - start` must be a power of two, as every block dimension.

    Example:
    ```mlir
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    ```
  }];
  let arguments = (ins I32Attr:$start, I32Attr:$end);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_SplatOp : Kiln_Op<"splat", [Pure,
    TypesMatchWith<"result element type matches the scalar", "result", "src",
                   "::llvm::cast<::mlir::RankedTensorType>($_self).getElementType()">]> {
  let summary = "Block with every element equal to a scalar";
  let description = [{
    Example:
    ```mlir
    %b = kiln.splat %n : i32 -> tensor<1024xi32>
    ```
  }];
  let arguments = (ins Kiln_Scalar:$src);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
}

def Kiln_BroadcastOp : Kiln_Op<"broadcast", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Repeat a block along its dimensions of size one";
  let description = [{
    Returns a block of the result shape whose dimensions of size one in the
    source are repeated. Source and result have the same rank; every other
    dimension must match.

    Example:
    ```mlir
    %b = kiln.broadcast %a : tensor<1x64xf32> -> tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Block:$src);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ExpandDimsOp : Kiln_Op<"expand_dims", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Insert a dimension of size one";
  let description = [{
    Example:
    ```mlir
    %b = kiln.expand_dims %a {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    ```
  }];
  let arguments = (ins Kiln_Block:$src, I32Attr:$axis);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pointers and memory
//===----------------------------------------------------------------------===//

def Kiln_AddPtrOp : Kiln_Op<"addptr", [Pure, SameOperandsAndResultShape,
    AllTypesMatch<["ptr", "result"]>]> {
  let summary = "Advance pointers by element offsets";
  let description = [{
    Adds `offset` elements of the pointee type to `ptr`. Both operands are
    scalars or blocks of the same shape.

    Example:
    ```mlir
    %p = kiln.addptr %base, %offs : tensor<1024x!kiln.ptr<f32>>, tensor<1024xi32>
    ```
  }];
  let arguments = (ins Kiln_PtrLike:$ptr, Kiln_IntLike:$offset);
  let results = (outs Kiln_PtrLike:$result);
  let assemblyFormat = "$ptr `,` $offset attr-dict `:` type($ptr) `,` type($offset)";
  let hasFolder = 1;
}

// Pointer casts. Each is element-wise on a scalar or a block; a pointer's
// value is its byte address in its address space, which all three keep.

def Kiln_PtrToIntOp : Kiln_Op<"ptr_to_int", [Pure, Elementwise,
    SameOperandsAndResultShape]> {
  let summary = "Addresses of pointers as 64-bit integers";
  let description = [{
    Returns the byte address each pointer of `src` holds, as an i64 (a
    scalar, or a block of `src`'s shape); a null pointer gives 0.

    Example:
    ```mlir
    %a = kiln.ptr_to_int %p : tensor<128x!kiln.ptr<f32>> -> tensor<128xi64>
    ```
  }];
  let arguments = (ins Kiln_PtrLike:$src);
  let results = (outs Kiln_I64Like:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
}

def Kiln_IntToPtrOp : Kiln_Op<"int_to_ptr", [Pure, Elementwise,
    SameOperandsAndResultShape]> {
  let summary = "Pointers to the addresses that 64-bit integers hold";
  let description = [{
    Returns, for each i64 of `src` (a scalar, or a block), the pointer of
    the result's type to that byte address. Nothing is known of where such
    a pointer points beyond its value: accessing memory through it is
    defined only where the address is one the kernel could reach otherwise
    (one of its arguments' buffers, with the pointee's alignment).

    Example:
    ```mlir
    %p = kiln.int_to_ptr %a : tensor<128xi64> -> tensor<128x!kiln.ptr<i32>>
    ```
  }];
  let arguments = (ins Kiln_I64Like:$src);
  let results = (outs Kiln_PtrLike:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
}

def Kiln_PtrBitcastOp : Kiln_Op<"ptr_bitcast", [Pure, Elementwise,
    SameOperandsAndResultShape]> {
  let summary = "The same addresses as pointers to another element type";
  let description = [{
    Returns each pointer of `src` unchanged, as a pointer of the result's
    pointee type: loads and stores through it move elements of that type
    from the same byte address, and `kiln.addptr` on it advances in units
    of that type. Both pointer types are in one address space.

    Example:
    ```mlir
    %q = kiln.ptr_bitcast %p : tensor<128x!kiln.ptr<f32>> -> tensor<128x!kiln.ptr<i8>>
    ```
  }];
  let arguments = (ins Kiln_PtrLike:$src);
  let results = (outs Kiln_PtrLike:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_LoadOp : Kiln_Op<"load", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    TypesMatchWith<"mask has the shape of ptr", "ptr", "mask",
                   "::mlir::kiln::getI1SameShape($_self)",
                   "!::llvm::cast<::mlir::kiln::LoadOp>($_op).getMask() || std::equal_to<>()">,
    TypesMatchWith<"other has the type of result", "result", "other", "$_self",
                   "!::llvm::cast<::mlir::kiln::LoadOp>($_op).getOther() || std::equal_to<>()">]> {
  let summary = "Masked load of a block (or scalar) from global memory";
  let description = [{
    Loads the element each pointer points to. Where `mask` is false the
    memory is not accessed and the result holds `other` (or an unspecified
    value when `other` is absent). `mask` and `other` have the shape of
    `ptr`; `other` has its pointee type. The cache modifier, if any, is one
    a load takes: `ca`, `cg` or `cv`.

    A load through a host tensor descriptor may also name the descriptor's
    TMA tensor map (a kernel parameter, `!kiln.ptr<i8, 0>`) and the
    coordinates of the block's first element in it, one i32 per dimension.
    They describe the same elements: where the block lands in shared memory
    anyway (a pipelined dot operand on sm_90a), the compiler may copy it
    with the tensor memory accelerator instead; everywhere else the pointers
    and mask are what is loaded.

    Example:
    ```mlir
    %x = kiln.load %p, %m, %zero : tensor<1024x!kiln.ptr<f32>> -> tensor<1024xf32>
    %a = kiln.load %ptrs, %inside, %zero tensor_map %map[%row, %col]
        : tensor<128x64x!kiln.ptr<f16>> -> tensor<128x64xf16>
    ```
  }];
  let arguments = (ins Kiln_PtrLike:$ptr, Optional<Kiln_BoolLike>:$mask,
                   Optional<Kiln_ScalarOrBlock>:$other,
                   Optional<Kiln_TensorMapPtr>:$tensorMap,
                   Variadic<I32>:$tensorCoords,
                   DefaultValuedAttr<Kiln_CacheModifierAttr, "::mlir::kiln::CacheModifier::none">:$cache,
                   DefaultValuedAttr<Kiln_EvictionPolicyAttr, "::mlir::kiln::EvictionPolicy::normal">:$evict,
                   UnitAttr:$isVolatile);
  let results = (outs Kiln_ScalarOrBlock:$result);
  let assemblyFormat = [{
    $ptr (`,` $mask^)? (`,` $other^)? (`tensor_map` $tensorMap^ `[` $tensorCoords `]`)?
    attr-dict `:` type($ptr) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "Value":$ptr, "Value":$mask, "Value":$other)>
  ];
  let extraClassDeclaration = [{
    /// Forgets the tensor map and its coordinates: the load reads through
    /// its pointers and mask only.
    void dropTensorMap() {
      getTensorMapMutable().clear();
      getTensorCoordsMutable().clear();
    }
  }];
  let hasVerifier = 1;
}

def Kiln_MakeTensorMapOp : Kiln_Op<"make_tensor_map", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "The TMA tensor map of a tensor descriptor made in the kernel";
  let description = [{
    Names the tensor map of the tensor that a descriptor made in the kernel
    (`make_tensor_descriptor`) describes: the elements at `base` with
    `shape` and, in elements, `strides` (one per dimension but the last,
    which is contiguous). Loads through the descriptor name the result as
    their tensor map (see `kiln.load`); `nan_padding` fills elements out of
    bounds with NaN instead of zero.

    The op computes nothing. Before layouts are assigned it is either
    replaced by a kernel parameter that the launcher encodes, where its
    operands are computed from the kernel's arguments alone
    (kiln-hoist-tensor-maps), or dropped, its loads keeping their pointers.

    Example:
    ```mlir
    %map = kiln.make_tensor_map %q[%rows, %c128] strides [%c128] : !kiln.ptr<f16>
    ```
  }];
  let arguments = (ins Kiln_PointerType:$base, Variadic<I64>:$shape,
                   Variadic<I64>:$strides, UnitAttr:$nanPadding);
  let results = (outs Kiln_TensorMapPtr:$result);
  let assemblyFormat = [{
    $base `[` $shape `]` `strides` ` ` `[` $strides `]` attr-dict `:` qualified(type($base))
  }];
  let hasVerifier = 1;
}

def Kiln_StoreOp : Kiln_Op<"store", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    TypesMatchWith<"mask has the shape of ptr", "ptr", "mask",
                   "::mlir::kiln::getI1SameShape($_self)",
                   "!::llvm::cast<::mlir::kiln::StoreOp>($_op).getMask() || std::equal_to<>()">]> {
  let summary = "Masked store of a block (or scalar) to global memory";
  let description = [{
    Stores each element of `value` where its pointer points, skipping the
    elements whose `mask` is false. The cache modifier, if any, is one a
    store takes: `wb`, `cg`, `cs` or `wt`.

    Example:
    ```mlir
    kiln.store %p, %x, %m : tensor<1024x!kiln.ptr<f32>>, tensor<1024xf32>
    ```
  }];
  let arguments = (ins Kiln_PtrLike:$ptr, Kiln_ScalarOrBlock:$value,
                   Optional<Kiln_BoolLike>:$mask,
                   DefaultValuedAttr<Kiln_CacheModifierAttr, "::mlir::kiln::CacheModifier::none">:$cache,
                   DefaultValuedAttr<Kiln_EvictionPolicyAttr, "::mlir::kiln::EvictionPolicy::normal">:$evict);
  let assemblyFormat = [{
    $ptr `,` $value (`,` $mask^)? attr-dict `:` type($ptr) `,` type($value)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and scans
//===----------------------------------------------------------------------===//

def Kiln_ReduceOp : Kiln_Op<"reduce", [RecursiveMemoryEffects,
    SingleBlock]> {
  let summary = "Combine the elements of blocks along one axis";
  let description = [{
    Reduces one or more blocks of the same shape along `axis` with the
    combine function in the region. The region takes two groups of scalars,
    an accumulated value of each operand followed by a new one, and returns
    the combined value of each operand with `kiln.reduce.return`. The
    combine function must be associative: the lowerings combine in any
    grouping, though always in increasing order along `axis`.

    Each result has its operand's shape with `axis` removed, or is a scalar
    when the operands are 1-D.

    Example (sum of each row):
    ```mlir
    %s = kiln.reduce(%x) {axis = 1 : i32} : (tensor<16x64xf32>) -> tensor<16xf32> {
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      kiln.reduce.return %c : f32
    }
    ```
  }];
  let arguments = (ins Variadic<Kiln_Block>:$srcs, I32Attr:$axis);
  let results = (outs Variadic<Kiln_ScalarOrBlock>:$result);
  let regions = (region SizedRegion<1>:$combineOp);
  let assemblyFormat = [{
    `(` $srcs `)` attr-dict `:` functional-type($srcs, $result) $combineOp
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Kiln_ReduceReturnOp : Kiln_Op<"reduce.return", [Pure, Terminator,
    HasParent<"ReduceOp">]> {
  let summary = "Result of a reduction's combine function";
  let arguments = (ins Variadic<Kiln_Scalar>:$result);
  let assemblyFormat = "$result attr-dict `:` type($result)";
}

def Kiln_ScanOp : Kiln_Op<"scan", [RecursiveMemoryEffects,
    SingleBlock]> {
  let summary = "Inclusive prefix combination of blocks along one axis";
  let description = [{
    Element `i` along `axis` of each result is the combination of the
    operand's elements `0..i` along `axis` (`i..n-1` when `reverse` is set),
    with the associative combine function in the region, taking the earlier
    value first. The region has the form of `kiln.reduce`'s.

    Example (cumulative sum):
    ```mlir
    %s = kiln.scan(%x) {axis = 0 : i32, reverse = false} : (tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      kiln.scan.return %c : f32
    }
    ```
  }];
  let arguments = (ins Variadic<Kiln_Block>:$srcs, I32Attr:$axis, BoolAttr:$reverse);
  let results = (outs Variadic<Kiln_Block>:$result);
  let regions = (region SizedRegion<1>:$combineOp);
  let assemblyFormat = [{
    `(` $srcs `)` attr-dict `:` functional-type($srcs, $result) $combineOp
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Kiln_ScanReturnOp : Kiln_Op<"scan.return", [Pure, Terminator,
    HasParent<"ScanOp">]> {
  let summary = "Result of a scan's combine function";
  let arguments = (ins Variadic<Kiln_Scalar>:$result);
  let assemblyFormat = "$result attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// External element-wise functions
//===----------------------------------------------------------------------===//

def Kiln_ExternElementwiseOp : Kiln_Op<"extern_elementwise", [Pure, Elementwise,
    SameOperandsAndResultShape]> {
  let summary = "Element-wise call of an external pure function";
  let description = [{
    Applies the scalar function `symbol` to each element of its operands,
    which are scalars or blocks of one shape, and returns the block (or
    scalar) of results. The function must be pure: it reads nothing but its
    arguments, so the call may be reordered, duplicated or removed like any
    arithmetic op. The frontend picks `symbol` for the element types (the
    NVIDIA libdevice names, `__nv_expf`, ...); each backend says what a name
    means: the GPU links libdevice, the CPU provides host equivalents.

    Example:
    ```mlir
    %y = kiln.extern_elementwise "__nv_powf"(%x, %e) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    ```
  }];
  let arguments = (ins StrAttr:$symbol, Variadic<Kiln_ScalarOrBlock>:$srcs);
  let results = (outs Kiln_ScalarOrBlock:$result);
  let assemblyFormat = [{
    $symbol `(` $srcs `)` attr-dict `:` functional-type($srcs, $result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Inline assembly
//===----------------------------------------------------------------------===//

def Kiln_ElementwiseInlineAsmOp : Kiln_Op<"elementwise_inline_asm", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<ConditionallySpeculatable>]> {
  let summary = "Element-wise inline assembly";
  let description = [{
    Runs the assembly text `asm_string` on the elements of its operands,
    which are scalars or blocks of one shape (numbers or pointers), giving
    one scalar or block of that shape per result. Each run handles
    `packed_element` elements of every operand and result at once: `$0`,
    `$1`, ... name first the result registers, then the operand registers,
    as `constraints` (LLVM's inline-asm constraint string) lists them.
    Elements narrower than 32 bits travel packed into 32-bit registers
    (`packed_element = 4` puts four i8 in one `r` register), wider ones one
    register each. With `pure` the text has no effect but its results, so
    the op may be merged or removed like arithmetic; without it the op
    reads and writes memory and stays where it is.

    The text is the target's own (PTX on NVIDIA GPUs); a backend without
    an assembly language refuses the op.

    Example:
    ```mlir
    %z = kiln.elementwise_inline_asm "shf.l.wrap.b32 $0, $1, $2, $3;" "=r,r,r,r"(%x, %y, %s)
        {packed_element = 1 : i32, pure = true}
        : (tensor<128xi32>, tensor<128xi32>, tensor<128xi32>) -> tensor<128xi32>
    ```
  }];
  let arguments = (ins StrAttr:$asm_string, StrAttr:$constraints,
                       BoolAttr:$pure, I32Attr:$packed_element,
                       Variadic<Kiln_ScalarOrBlock>:$args);
  let results = (outs Variadic<Kiln_ScalarOrBlock>:$result);
  let assemblyFormat = [{
    $asm_string $constraints `(` $args `)` attr-dict `:` functional-type($args, $result)
  }];
  let hasVerifier = 1;
}

include "kiln/Dialect/Kiln/IR/KilnAtomicOps.td"
include "kiln/Dialect/Kiln/IR/KilnHintOps.td"
include "kiln/Dialect/Kiln/IR/KilnShapeOps.td"
include "kiln/Dialect/Kiln/IR/KilnDotOps.td"

#endif // KILN_OPS
