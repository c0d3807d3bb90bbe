//===- KilnTypes.td - Types of the kiln dialect -------------*- tablegen -*-===//
//
// The pointer type and the type constraints that kiln ops share. Blocks are
// builtin ranked tensors; only the pointer element type is kiln's own.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TYPES
#define KILN_TYPES

include "kiln/Dialect/Kiln/IR/KilnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

class Kiln_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Kiln_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Kiln_PointerType : Kiln_Type<"Pointer", "ptr"> {
  let summary = "Pointer to an element in device memory";
  let description = [{
    A typed pointer into global memory (address space 1 by default). Pointer
    arithmetic (`kiln.addptr`) advances it in units of the pointee type.

    Example:
    ```mlir
    !kiln.ptr<f32>
    !kiln.ptr<f16, 1>
    ```
  }];
  let parameters = (ins "Type":$pointeeType, DefaultValuedParameter<"int", "1">:$addressSpace);
  let builders = [
    TypeBuilderWithInferredContext<(ins "Type":$pointeeType,
                                        CArg<"int", "1">:$addressSpace), [{
      return $_get(pointeeType.getContext(), pointeeType, addressSpace);
    }]>
  ];
  let assemblyFormat = "`<` $pointeeType (`,` $addressSpace^)? `>`";
}

// Element types a block may hold.
def Kiln_Float : AnyTypeOf<[F16, BF16, F32, F64]>;
def Kiln_Int : AnyTypeOf<[I1, I8, I16, I32, I64]>;
def Kiln_Scalar : AnyTypeOf<[Kiln_Float, Kiln_Int, Kiln_PointerType]>;
def Kiln_Block : RankedTensorOf<[Kiln_Float, Kiln_Int, Kiln_PointerType]>;
def Kiln_ScalarOrBlock : AnyTypeOf<[Kiln_Scalar, Kiln_Block]>;

def Kiln_PtrLike : AnyTypeOf<[Kiln_PointerType, RankedTensorOf<[Kiln_PointerType]>]>;
def Kiln_IntLike : AnyTypeOf<[Kiln_Int, RankedTensorOf<[Kiln_Int]>]>;
// An address as an integer: what kiln.ptr_to_int gives and kiln.int_to_ptr takes.
def Kiln_I64Like : AnyTypeOf<[I64, RankedTensorOf<[I64]>]>;
def Kiln_BoolLike : AnyTypeOf<[I1, RankedTensorOf<[I1]>]>;
def Kiln_F32Like : AnyTypeOf<[F32, RankedTensorOf<[F32]>]>;
def Kiln_I8Like : AnyTypeOf<[I8, RankedTensorOf<[I8]>]>;

// A TMA tensor map: a kernel parameter of 128 opaque bytes, addressed
// generically (it lives in the parameter space).
def Kiln_TensorMapPtr : Type<
    CPred<"::llvm::isa<::mlir::kiln::PointerType>($_self) && "
          "::llvm::cast<::mlir::kiln::PointerType>($_self).getAddressSpace() == 0 && "
          "::llvm::cast<::mlir::kiln::PointerType>($_self).getPointeeType().isInteger(8)">,
    "a tensor map (!kiln.ptr<i8, 0>)", "::mlir::kiln::PointerType">,
  BuildableType<"::mlir::kiln::PointerType::get($_builder.getI8Type(), 0)">;

#endif // KILN_TYPES
