//===- KilnAtomicOps.td - Atomic read-modify-write ops -------*- tablegen -*-===//
//
// Atomic read-modify-write and compare-and-swap on global memory, on scalars
// and element-wise on blocks. Each returns the values memory held before
// the operation. Ordering and scope are attributes, so that every target
// lowers them to its own atomic instructions.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ATOMIC_OPS
#define KILN_ATOMIC_OPS

def Kiln_RMWKind : I32EnumAttr<"RMWKind", "operation of an atomic read-modify-write", [
    I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"fadd", 1>,
    I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"umax", 3>,
    I32EnumAttrCase<"min", 4>, I32EnumAttrCase<"umin", 5>,
    I32EnumAttrCase<"And", 6, "and">, I32EnumAttrCase<"Or", 7, "or">,
    I32EnumAttrCase<"Xor", 8, "xor">, I32EnumAttrCase<"xchg", 9>,
    I32EnumAttrCase<"fmax", 10>, I32EnumAttrCase<"fmin", 11>]> {
  let cppNamespace = "::mlir::kiln";
  let genSpecializedAttr = 0;
}
// Printed as a bare keyword: it leads the op's custom form.
def Kiln_RMWKindAttr : EnumAttr<Kiln_Dialect, Kiln_RMWKind, "rmw"> {
  let assemblyFormat = "$value";
}

def Kiln_MemSemantic : I32EnumAttr<"MemSemantic", "memory ordering of an atomic", [
    I32EnumAttrCase<"relaxed", 0>, I32EnumAttrCase<"acquire", 1>,
    I32EnumAttrCase<"release", 2>, I32EnumAttrCase<"acq_rel", 3>]> {
  let cppNamespace = "::mlir::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_MemSemanticAttr : EnumAttr<Kiln_Dialect, Kiln_MemSemantic, "sem"> {
  let assemblyFormat = "`<` $value `>`";
}

def Kiln_MemSyncScope : I32EnumAttr<"MemSyncScope", "threads an atomic is ordered with", [
    I32EnumAttrCase<"gpu", 0>, I32EnumAttrCase<"cta", 1>, I32EnumAttrCase<"sys", 2>]> {
  let cppNamespace = "::mlir::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_MemSyncScopeAttr : EnumAttr<Kiln_Dialect, Kiln_MemSyncScope, "scope"> {
  let assemblyFormat = "`<` $value `>`";
}

def Kiln_AtomicRMWOp : Kiln_Op<"atomic_rmw", [
    MemoryEffects<[MemRead, MemWrite]>,
    TypesMatchWith<"mask has the shape of ptr", "ptr", "mask",
                   "::mlir::kiln::getI1SameShape($_self)",
                   "!::llvm::cast<::mlir::kiln::AtomicRMWOp>($_op).getMask() || std::equal_to<>()">,
    AllTypesMatch<["val", "result"]>]> {
  let summary = "Atomic read-modify-write of a scalar or of each block element";
  let description = [{
    Atomically replaces the element each pointer points to with
    `kind(old, val)` and returns `old`. Where `mask` is false memory is not
    touched and the result is unspecified. `val` has the pointee type and
    the shape of `ptr`.

    `add`, `max`, `min`, `umax`, `umin`, `and`, `or` and `xor` take 32- or
    64-bit integers (`max`/`min` compare as signed, `umax`/`umin` as
    unsigned); `fadd` takes f16, bf16, f32 or f64; `fmax` and `fmin` take
    f32 or f64 (NaNs aside, as `arith.maxnumf`/`arith.minnumf`); `xchg`
    takes 32- or 64-bit integers and floats.

    Example:
    ```mlir
    %old = kiln.atomic_rmw add, %p, %v, %m {sem = #kiln.sem<acq_rel>, scope = #kiln.scope<gpu>}
        : tensor<256x!kiln.ptr<i32>>, tensor<256xi32>
    ```
  }];
  let arguments = (ins Kiln_RMWKindAttr:$kind, Kiln_PtrLike:$ptr,
                   Kiln_ScalarOrBlock:$val, Optional<Kiln_BoolLike>:$mask,
                   DefaultValuedAttr<Kiln_MemSemanticAttr, "::mlir::kiln::MemSemantic::acq_rel">:$sem,
                   DefaultValuedAttr<Kiln_MemSyncScopeAttr, "::mlir::kiln::MemSyncScope::gpu">:$scope);
  let results = (outs Kiln_ScalarOrBlock:$result);
  let assemblyFormat = [{
    $kind `,` $ptr `,` $val (`,` $mask^)? attr-dict `:` type($ptr) `,` type($val)
  }];
  let hasVerifier = 1;
}

def Kiln_AtomicCASOp : Kiln_Op<"atomic_cas", [
    MemoryEffects<[MemRead, MemWrite]>,
    AllTypesMatch<["cmp", "val", "result"]>]> {
  let summary = "Atomic compare-and-swap of a scalar or of each block element";
  let description = [{
    Atomically stores `val` where each pointer points if memory holds `cmp`
    there, and returns what memory held. Elements are 16, 32 or 64 bits wide.

    Example:
    ```mlir
    %old = kiln.atomic_cas %lock, %c0, %c1 {sem = #kiln.sem<acquire>}
        : !kiln.ptr<i32>, i32
    ```
  }];
  let arguments = (ins Kiln_PtrLike:$ptr, Kiln_ScalarOrBlock:$cmp,
                   Kiln_ScalarOrBlock:$val,
                   DefaultValuedAttr<Kiln_MemSemanticAttr, "::mlir::kiln::MemSemantic::acq_rel">:$sem,
                   DefaultValuedAttr<Kiln_MemSyncScopeAttr, "::mlir::kiln::MemSyncScope::gpu">:$scope);
  let results = (outs Kiln_ScalarOrBlock:$result);
  let assemblyFormat = [{
    $ptr `,` $cmp `,` $val attr-dict `:` type($ptr) `,` type($val)
  }];
  let hasVerifier = 1;
}

#endif // KILN_ATOMIC_OPS
