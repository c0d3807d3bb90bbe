//===- Passes.td - Conversion passes of Kiln ---------------*- tablegen -*-===//
//
// The passes that move a kernel from one dialect level to the next:
// kiln -> kiln_gpu (layouts) -> LLVM + NVVM.
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

def ConvertKilnGPUToLLVM : Pass<"convert-kiln-gpu-to-llvm", "mlir::ModuleOp"> {
  let summary = "Lower kiln_gpu kernels to per-thread LLVM and NVVM operations";
  let description = [{
    Lowers each block value to the vector of elements that one thread holds
    under its layout, and each op to the per-thread code that computes them:
    `make_range` from the thread and warp index, element-wise arith and math
    on vectors, and loads and stores as predicated PTX accesses as wide as
    the layout's contiguous run (up to 16 bytes). Kernels become `llvm.func`
    with the `nvvm.kernel` attribute and a required CTA size. Last, CTA
    barriers that order nothing are erased: one right after another with
    no memory access between, and a shared-memory-only barrier with no
    shared access before it in the entry block.

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
