//===- KilnGPUAttrs.td - Layout encodings ------------------*- tablegen -*-===//
//
// The layouts a kiln_gpu block can carry.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GPU_ATTRS
#define KILN_GPU_ATTRS

include "kiln/Dialect/KilnGPU/IR/KilnGPUDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def KilnGPU_BlockedEncodingAttr : AttrDef<KilnGPU_Dialect, "BlockedEncoding"> {
  let mnemonic = "blocked";
  let summary = "Elements tiled over threads, warps and registers";
  let description = [{
    Along each dimension `d` a thread holds `sizePerThread[d]` consecutive
    elements; `threadsPerWarp[d]` threads of a warp and `warpsPerCTA[d]` warps
    tile the next levels. `order` lists the dimensions from fastest- to
    slowest-varying, for thread numbering and for each thread's registers.
    A block larger than one tile (sizePerThread * threadsPerWarp *
    warpsPerCTA) wraps around, so each thread holds several tiles; a smaller
    one is replicated, so several threads hold the same element.

    Example: four contiguous f32 per thread, 128 threads, 512 elements a tile.
    ```mlir
    #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"unsigned">:$sizePerThread,
    ArrayRefParameter<"unsigned">:$threadsPerWarp,
    ArrayRefParameter<"unsigned">:$warpsPerCTA,
    ArrayRefParameter<"unsigned">:$order
  );
  let assemblyFormat = [{
    `<` `{` `sizePerThread` `=` `[` $sizePerThread `]` `,`
            `threadsPerWarp` `=` `[` $threadsPerWarp `]` `,`
            `warpsPerCTA` `=` `[` $warpsPerCTA `]` `,`
            `order` `=` `[` $order `]` `}` `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned getRank() const { return getOrder().size(); }
    /// Elements one CTA covers along each dimension before wrapping around.
    SmallVector<int64_t> getShapePerCTATile() const;
    /// Number of elements each thread holds for a block of `shape`.
    int64_t getElementsPerThread(ArrayRef<int64_t> shape) const;
  }];
}

def KilnGPU_SliceEncodingAttr : AttrDef<KilnGPU_Dialect, "SliceEncoding"> {
  let mnemonic = "slice";
  let summary = "A parent layout with one dimension removed";
  let description = [{
    The layout of a block that becomes a block of the parent layout when a
    dimension of size one is inserted at `dim` (by `kiln.expand_dims`): each
    thread holds exactly the elements it holds of that expanded block, in the
    same order, so `expand_dims` moves no data. Threads that the parent
    spreads along `dim` hold replicas.

    Example: the rows of a 2-D layout's row index.
    ```mlir
    #kiln_gpu.slice<{dim = 1, parent = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>}>
    ```
  }];
  let parameters = (ins "unsigned":$dim, "BlockedEncodingAttr":$parent);
  let assemblyFormat = "`<` `{` `dim` `=` $dim `,` `parent` `=` $parent `}` `>`";
  let genVerifyDecl = 1;
}

def KilnGPU_TargetAttr : AttrDef<KilnGPU_Dialect, "Target"> {
  let mnemonic = "target";
  let summary = "The NVIDIA chip a kernel is compiled for";
  let description = [{
    The module attribute `kiln_gpu.target`: an NVIDIA chip by its name,
    `sm_` and the compute capability (major and minor digit), with an `a`
    suffix for the architecture-specific features (sm_90a's wgmma and
    setmaxnreg). What each chip offers is the NVIDIA target's to say
    (kiln/Target/NVIDIA/TensorCores.h).

    Example:
    ```mlir
    module attributes {kiln_gpu.target = #kiln_gpu.target<sm_90a>} {}
    ```
  }];
  let parameters = (ins "unsigned":$capability, "bool":$archSpecific);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The target a chip name such as "sm_80" or "sm_90a" names, or null
    /// for anything else.
    static TargetAttr getFromName(::mlir::MLIRContext *context, ::llvm::StringRef name);
    /// The chip's name, e.g. "sm_90a".
    std::string getName() const;
  }];
}

def KilnGPU_TensorCores : I32EnumAttr<"TensorCores",
    "the tensor-core instruction family a dot lowers to", [
    I32EnumAttrCase<"mma", 0>, I32EnumAttrCase<"wgmma", 1>]> {
  let cppNamespace = "::mlir::kiln::gpu";
  let genSpecializedAttr = 0;
}
// `mma`: mma.sync (with ldmatrix from shared memory), sm_80 and later;
// `wgmma`: the warpgroup's wgmma.mma_async, sm_90a.
def KilnGPU_TensorCoresAttr : EnumAttr<KilnGPU_Dialect, KilnGPU_TensorCores, "tensor_cores"> {
  let assemblyFormat = "`<` $value `>`";
}

// The tensor cores as a parameter of another attribute, printed in full
// (#kiln_gpu.tensor_cores<wgmma>) rather than stripped of its dialect.
def KilnGPU_TensorCoresParameter : AttrParameter<"TensorCoresAttr", ""> {
  let printer = "$_printer.printAttribute($_self)";
}

def KilnGPU_OperandBufferAttr : AttrDef<KilnGPU_Dialect, "OperandBuffer"> {
  let mnemonic = "operand_buffer";
  let summary = "Where a pipelined dot operand lies in shared memory";
  let description = [{
    A ring of `slots` copies of one operand tile of a tensor-core dot
    (`operand` 0 for A, 1 for B), each `slotBytes` long, starting `offset`
    bytes into the kernel's pipeline buffers. Inside a slot the tile is laid
    out as the dot's instruction family reads it (`tensorCores`: wgmma or
    mma): rows of 16-byte chunks XOR-swizzled by row, A's rows permuted
    for wgmma. kiln_gpu.async_copy writes a slot and
    kiln_gpu.shared_operand reads it. Tiles are f16, bf16 or i8 (8-bit
    floats are i8). A `kMajor` slot of B holds its tile transposed,
    [N][K], as copied from a B whose elements are contiguous along K in
    global memory; the tensor cores read it K-major. An N-major B tile is
    only f16 or bf16: the tensor cores read 8-bit B K-major, and the copies
    cannot transpose.

    Example: three 16 KiB slots of a wgmma A tile.
    ```mlir
    #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 16384, slots = 3>
    ```
  }];
  let parameters = (ins "unsigned":$operand, KilnGPU_TensorCoresParameter:$tensorCores,
                        "int64_t":$offset, "int64_t":$slotBytes, "unsigned":$slots,
                        DefaultValuedParameter<"bool", "false">:$kMajor);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isWgmma() const { return getTensorCores().getValue() == TensorCores::wgmma; }
    /// Bytes from the start of the pipeline buffers to the end of this one.
    int64_t getEnd() const { return getOffset() + getSlotBytes() * getSlots(); }
  }];
}

def KilnGPU_BlockBufferAttr : AttrDef<KilnGPU_Dialect, "BlockBuffer"> {
  let mnemonic = "block_buffer";
  let summary = "Where a pipelined block that no dot reads lies in shared memory";
  let description = [{
    A ring of `slots` copies of a block that a loop reads into registers
    (attention's backward reads its rows of M and Delta so), each
    `slotBytes` long, starting `offset` bytes into the kernel's pipeline
    buffers. Inside a slot the block's elements lie in row-major order,
    unswizzled. kiln_gpu.async_copy_block writes a slot and
    kiln_gpu.load_block reads it. The offset and the slots' size are
    multiples of 16 bytes, the widest copy.

    Example: three 256-byte slots.
    ```mlir
    #kiln_gpu.block_buffer<offset = 65536, slotBytes = 256, slots = 3>
    ```
  }];
  let parameters = (ins "int64_t":$offset, "int64_t":$slotBytes, "unsigned":$slots);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes from the start of the pipeline buffers to the end of this one.
    int64_t getEnd() const { return getOffset() + getSlotBytes() * getSlots(); }
  }];
}

#endif // KILN_GPU_ATTRS
