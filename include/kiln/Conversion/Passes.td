//===- Passes.td - Conversion passes of Kiln ---------------*- tablegen -*-===//
//
// The passes that move a kernel from one dialect level to the next:
// kiln -> kiln_gpu (layouts) -> LLVM + NVVM, and the two that frame the
// NVIDIA lowering: shared memory is placed on kiln_gpu before it, needless
// barriers are erased on LLVM + NVVM after it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_PASSES
#define KILN_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertKilnToKilnGPU : Pass<"convert-kiln-to-kiln-gpu", "mlir::ModuleOp"> {
  let summary = "Give every block a default blocked layout for the CTA's warps";
  let description = [{
    Rewrites every block type in the module to carry a blocked layout
    encoding for `num-warps` warps of `threads-per-warp` threads, one element
    per thread along the fastest dimension, and records the launch shape and
    target as module attributes. Later passes (coalescing) refine the
    layouts; this one only makes them explicit.

    Before:
    ```mlir
    %r = kiln.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
    ```
    After (`num-warps=4`):
    ```mlir
    #blocked = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
    module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32,
                       kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
      %r = kiln.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32, #blocked>
    }
    ```
  }];
  let options = [
    Option<"numWarps", "num-warps", "int", /*default=*/"4", "warps per program (CTA)">,
    Option<"threadsPerWarp", "threads-per-warp", "int", /*default=*/"32", "threads per warp">,
    Option<"target", "target", "std::string", /*default=*/"\"sm_90a\"", "target chip">,
  ];
  let dependentDialects = ["mlir::kiln::gpu::KilnGPUDialect"];
}

def KilnGPUAllocateSharedMemory
    : Pass<"kiln-gpu-allocate-shared-memory", "mlir::ModuleOp"> {
  let summary = "Place the scratch and the pipeline slots in shared memory by liveness";
  let description = [{
    Runs on kiln_gpu, before `convert-kiln-gpu-to-nvvm`, while loops still
    delimit where the pipeline slots are live. A kernel's dynamic shared
    memory holds the scratch (layout conversions, reductions and scans
    across warps, shape ops, dots with operands in registers: one op at a
    time, all from offset 0, each as large as its lowering needs) and the
    pipeline slots that `kiln_gpu.async_copy` and TMA copies fill (from the
    first copy to the `kiln_gpu.async_wait {pending = 0}` or
    `kiln_gpu.inval_tma_barriers` that drains them). The slots follow the
    largest scratch used while they are live, rounded up to 1024 bytes
    (wgmma's swizzle phase comes from the address); scratch used only
    outside those spans reuses the slots' bytes, and then a
    `kiln.debug_barrier` before each span's first copy makes every thread
    finish reading the scratch before the copies overwrite it.

    Records, as module attributes, the bytes needed in all
    (`kiln_gpu.shared`, also what the launcher allocates) and, when the
    kernel has slots, where they start (`kiln_gpu.pipeline_offset`).

    Before (`num-warps = 4`: 17 KiB of scratch for the conversion, two
    4 KiB slots):
    ```mlir
    %y = kiln_gpu.convert_layout %x : tensor<64x64xf32, #mma> -> tensor<64x64xf32, #bA>
    kiln_gpu.async_copy %pa, %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32x!kiln.ptr<f16>, #bA>
    kiln_gpu.async_wait {pending = 0 : i32}
    ```
    After:
    ```mlir
    module attributes {kiln_gpu.pipeline_offset = 0 : i32, kiln_gpu.shared = 17408 : i32, ...} {
      %y = kiln_gpu.convert_layout %x : tensor<64x64xf32, #mma> -> tensor<64x64xf32, #bA>
      kiln.debug_barrier
      kiln_gpu.async_copy %pa, %slot {buffer = ...} : tensor<64x32x!kiln.ptr<f16>, #bA>
      kiln_gpu.async_wait {pending = 0 : i32}
    ```
  }];
}

def ConvertKilnGPUToNVVM : Pass<"convert-kiln-gpu-to-nvvm", "mlir::ModuleOp"> {
  let summary = "Lower kiln_gpu kernels to per-thread LLVM and NVVM operations";
  let description = [{
    Lowers each block value to the vector of elements that one thread holds
    under its layout, and each op to the per-thread code that computes them:
    `make_range` from the thread and warp index, element-wise arith and math
    on vectors, and loads and stores as predicated PTX accesses as wide as
    the layout's contiguous run (up to 16 bytes). Kernels become `llvm.func`
    with the `nvvm.kernel` attribute and a required CTA size.

    Shared memory must already be placed: the pass reads
    `kiln_gpu.shared` (declaring the dynamic shared memory when it is not
    0) and `kiln_gpu.pipeline_offset`, which
    `kiln-gpu-allocate-shared-memory` records, and reports a module
    without the former. Each lowering that touches shared memory puts a
    barrier (`nvvm.barrier0`) where its own accesses need one, marking those
    that order shared memory only with `kiln.shared_only`;
    `kiln-nvvm-erase-needless-barriers` then drops the needless ones.

    With `checked`, each kernel gains one (i64 base, i64 bytes) pair per
    pointer parameter and a pointer to an error record; every load, store
    and atomic whose address derives from a pointer parameter compares each
    of its runs with that extent, predicates off the runs outside and
    records the first fault (site, parameter, element index) with a
    compare-and-swap. The sites are listed in `kiln_gpu.checked_sites`.

    Before:
    ```mlir
    %x = kiln.load %p, %m : tensor<1024x!kiln.ptr<f32>, #blocked4> -> tensor<1024xf32, #blocked4>
    ```
    After (per thread, 2 chunks of 4 elements):
    ```mlir
    %v0 = llvm.inline_asm has_side_effects "mov.u32 $0, $4; ... @$9 ld.global.v4.b32 { $0, $1, $2, $3 }, [ $8 + 0 ];" ...
    ```
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"sm_90a\"", "target chip">,
    Option<"maxnreg", "maxnreg", "int", /*default=*/"0",
           "registers per thread that ptxas may use in a kernel (.maxnreg); 0: no limit">,
    Option<"checked", "checked", "bool", /*default=*/"false",
           "bounds-check every load, store and atomic against its parameter's "
           "memory (extra kernel parameters and an error record)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect"];
}

def KilnNVVMEraseNeedlessBarriers
    : Pass<"kiln-nvvm-erase-needless-barriers", "mlir::ModuleOp"> {
  let summary = "Erase CTA barriers that order nothing";
  let description = [{
    Runs on the LLVM + NVVM module after `convert-kiln-gpu-to-nvvm`, whose
    lowerings each put a barrier wherever their own shared-memory accesses
    need one. Erases an `nvvm.barrier0`
    - that follows another in the same block with no memory access or side
      effect between them: it orders nothing the first did not (a
      `debug_barrier` right before a scalar atomic's own barrier, as in the
      layer-norm tutorial's lock release);
    - that orders shared memory only (marked `kiln.shared_only`) and that no
      shared access can precede: none lies before it in the entry block of
      its function. Loads and stores through global pointers, shuffles and
      special registers do not count; inline PTX counts unless it names
      global memory only.
    Then removes the `kiln.shared_only` marks.

    Before:
    ```mlir
    %v = llvm.load %p : !llvm.ptr<1> -> f32
    nvvm.barrier0 {kiln.shared_only}
    llvm.store %v, %s : f32, !llvm.ptr<3>
    nvvm.barrier0 {kiln.shared_only}
    nvvm.barrier0
    %w = llvm.load %s : !llvm.ptr<3> -> f32
    ```
    After:
    ```mlir
    %v = llvm.load %p : !llvm.ptr<1> -> f32
    llvm.store %v, %s : f32, !llvm.ptr<3>
    nvvm.barrier0
    %w = llvm.load %s : !llvm.ptr<3> -> f32
    ```
  }];
}

def KilnNVVMNameConsumerBarriers
    : Pass<"kiln-nvvm-name-consumer-barriers", "mlir::ModuleOp"> {
  let summary = "Make a warp-specialized kernel's CTA barriers the consumer warps' own";
  let description = [{
    Runs on the LLVM + NVVM module after `kiln-nvvm-erase-needless-barriers`.
    In a warp-specialized kernel (the module attribute
    `kiln_gpu.producer_warps`, which `convert-kiln-gpu-to-nvvm` sets when it
    branches a kiln_gpu.producer off), the producer warps never reach the
    barriers that the lowerings placed for the kernel's blocks: a CTA-wide
    `nvvm.barrier0` would wait for them forever. Each becomes named barrier
    1 over the `kiln_gpu.num_warps` consumer warps. The barrier before the
    branch, which every warp passes (an `nvvm.barrier` with no thread
    count), stays.

    Before (`kiln_gpu.num_warps = 8`, `kiln_gpu.producer_warps = 4`):
    ```mlir
    nvvm.barrier0
    ```
    After:
    ```mlir
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %c256 = llvm.mlir.constant(256 : i32) : i32
    nvvm.barrier id = %c1 number_of_threads = %c256
    ```
  }];
}

def ConvertKilnToLLVMCPU : Pass<"convert-kiln-to-llvm-cpu", "mlir::ModuleOp"> {
  let summary = "Lower kiln kernels to host LLVM, one program instance per call";
  let description = [{
    Lowers a kernel in the kiln dialect for the CPU backend. A program
    instance runs on one host thread, so a block is the LLVM vector of all
    its elements in row-major order: element-wise arith and math lower
    through the upstream patterns, `expand_dims` is free and `broadcast` is a
    shuffle. Loads and stores become masked vector loads and stores when the
    axis-info analysis proves a 1-D block contiguous, and masked gathers and
    scatters otherwise, so masked-off lanes never touch memory.

    The kernel gains trailing parameters: the program id and the number of
    programs along each axis (six i32), and a pointer to the launch's bounds
    table. An entry function `<kernel>.kiln_entry(ptr params, i32 x 6, ptr
    bounds)` reads each parameter from its 8-byte slot and calls the kernel:
    the launcher calls every program through it.

    With `checked`, every load and store compares each active lane's address
    with the bounds of the kernel parameter it derives from (found by tracing
    `addptr` chains, through loop-carried values), skips the lanes outside
    it, and reports the first one through `__kiln_cpu_check(site, any,
    index)`; the sites' source locations are listed in the module attribute
    `kiln_cpu.sites`.

    Before:
    ```mlir
    %x = kiln.load %p, %m : tensor<1024x!kiln.ptr<f32>> -> tensor<1024xf32>
    ```
    After (a contiguous, 4-byte aligned block):
    ```mlir
    %x = llvm.intr.masked.load %base, %m, %zero {alignment = 4 : i32} : (!llvm.ptr, vector<1024xi1>, vector<1024xf32>) -> vector<1024xf32>
    ```
  }];
  let options = [
    Option<"checked", "checked", "bool", /*default=*/"false",
           "bounds-check every access against the parameter buffers">,
    Option<"vectorGathers", "vector-gathers", "bool", /*default=*/"true",
           "the target gathers 32- and 64-bit elements in one instruction "
           "(AVX2); without, every gather of more than 16 lanes is a loop "
           "over its lanes">,
    Option<"vectorScatters", "vector-scatters", "bool", /*default=*/"true",
           "the target scatters 32- and 64-bit elements in one instruction "
           "(AVX-512); without, every scatter of more than 16 lanes is a "
           "loop over its lanes">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // KILN_CONVERSION_PASSES
