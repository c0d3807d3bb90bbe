//===- KilnGPUOps.td - Operations of the kiln_gpu dialect --*- tablegen -*-===//
//
// Operations that only exist once blocks have layouts.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GPU_OPS
#define KILN_GPU_OPS

include "kiln/Dialect/KilnGPU/IR/KilnGPUAttrs.td"
include "kiln/Dialect/Kiln/IR/KilnTraits.td"
include "kiln/Dialect/Kiln/IR/KilnTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def KilnGPU_ConvertLayoutOp : Op<KilnGPU_Dialect, "convert_layout",
    [Pure, SameOperandsAndResultShape, SameOperandsAndResultElementType,
     Kiln_SameElementValues]> {
  let summary = "Move a block's elements to another layout";
  let description = [{
    Returns the same block under another layout encoding. Lowering may need
    to exchange elements between threads (through shared memory); a
    conversion between identical layouts folds away.

    Example:
    ```mlir
    %b = kiln_gpu.convert_layout %a : tensor<1024xf32, #blocked1> -> tensor<1024xf32, #blocked4>
    ```
  }];
  let arguments = (ins Kiln_Block:$src);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
}

def KilnGPU_AsyncDotWaitOp : Op<KilnGPU_Dialect, "async_dot_wait",
    [AllTypesMatch<["src", "result"]>, MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait for the asynchronous dots that write a block";
  let description = [{
    Returns `src` once at most `pending` of the asynchronous tensor-core
    operation groups the thread has issued are still running (the most
    recent ones; groups complete in order): the accumulator of a loop of
    asynchronous dots (see kiln-gpu-async-dots) is only read through this
    op, and so is the first dot's result in a loop whose second dot runs an
    iteration late (kiln-gpu-overlap-dots), with the second dot's group
    still running. Lowers to `wgmma.wait_group pending`, which takes and
    returns the block's registers.

    Example:
    ```mlir
    %done = kiln_gpu.async_dot_wait %acc : tensor<128x128xf32, #wgmma>
    %scores = kiln_gpu.async_dot_wait %s {pending = 1 : i32} : tensor<128x64xf32, #wgmma>
    ```
  }];
  let arguments = (ins Kiln_Block:$src, DefaultValuedAttr<I32Attr, "0">:$pending);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$src attr-dict `:` type($src)";
  let builders = [
    OpBuilder<(ins "::mlir::Type":$type, "::mlir::Value":$src), [{
      build($_builder, $_state, type, src, /*pending=*/0);
    }]>
  ];
}

//===----------------------------------------------------------------------===//
// Software-pipelined dot operands (kiln-gpu-pipeline-loads)
//===----------------------------------------------------------------------===//

def KilnGPU_AsyncCopyOp : Op<KilnGPU_Dialect, "async_copy",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Start copying a block from global memory into a dot operand slot";
  let description = [{
    Starts copying the elements `ptr` points to into slot `slot` of
    `buffer`, at the places a dot reading that slot through
    kiln_gpu.shared_operand expects them. Elements whose `mask` is false are
    not read and become zero. The copy is asynchronous (`cp.async`): it
    joins the thread's current group, which kiln_gpu.async_commit_group
    closes and kiln_gpu.async_wait waits for.

    With `transposed`, `ptr` points to the operand's transpose, as a
    K-major slot of B holds it: a `[N, K]` block (such as the block of a
    tensor descriptor that the kernel reads as `b.T`), whose element
    `(n, k)` is the operand's `(k, n)`. Only a K-major slot of B takes it.

    Example:
    ```mlir
    kiln_gpu.async_copy %ptrs, %slot, %mask {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 16384, slots = 3>} : tensor<128x64x!kiln.ptr<f16>, #blocked>, tensor<128x64xi1, #blocked>
    ```
  }];
  let arguments = (ins RankedTensorOf<[Kiln_PointerType]>:$ptr, I32:$slot,
                       Optional<RankedTensorOf<[I1]>>:$mask,
                       KilnGPU_OperandBufferAttr:$buffer, UnitAttr:$transposed);
  let assemblyFormat = "$ptr `,` $slot (`,` $mask^)? attr-dict `:` type($ptr) (`,` type($mask)^)?";
  let hasVerifier = 1;
}

def KilnGPU_AsyncCopyBlockOp : Op<KilnGPU_Dialect, "async_copy_block",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Start copying a block from global memory into a block slot";
  let description = [{
    Starts copying the elements `ptr` points to into slot `slot` of
    `buffer`, in row-major order. Elements whose `mask` is false are not
    read and become zero. Each element is copied once, by the thread that
    owns it in the pointers' layout. The copy is asynchronous (`cp.async`),
    in the thread's current group, as kiln_gpu.async_copy's; elements are
    4 or 8 bytes wide.

    Example:
    ```mlir
    kiln_gpu.async_copy_block %ptrs, %slot, %mask {buffer = #kiln_gpu.block_buffer<offset = 65536, slotBytes = 256, slots = 3>} : tensor<64x!kiln.ptr<f32>, #slice>, tensor<64xi1, #slice>
    ```
  }];
  let arguments = (ins RankedTensorOf<[Kiln_PointerType]>:$ptr, I32:$slot,
                       Optional<RankedTensorOf<[I1]>>:$mask,
                       KilnGPU_BlockBufferAttr:$buffer);
  let assemblyFormat = "$ptr `,` $slot (`,` $mask^)? attr-dict `:` type($ptr) (`,` type($mask)^)?";
  let hasVerifier = 1;
}

def KilnGPU_LoadBlockOp : Op<KilnGPU_Dialect, "load_block",
    [MemoryEffects<[MemRead]>]> {
  let summary = "A block read from a block slot into registers";
  let description = [{
    The block in slot `slot` of `buffer`, as kiln_gpu.async_copy_block
    wrote it, read into the result's layout. The copies into the slot must
    be complete and visible (kiln_gpu.async_wait).

    Example:
    ```mlir
    %m = kiln_gpu.load_block %slot {buffer = #kiln_gpu.block_buffer<offset = 65536, slotBytes = 256, slots = 3>} : tensor<64xf32, #slice>
    ```
  }];
  let arguments = (ins I32:$slot, KilnGPU_BlockBufferAttr:$buffer);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$slot attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def KilnGPU_AsyncCommitGroupOp : Op<KilnGPU_Dialect, "async_commit_group",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "Close the thread's current group of asynchronous copies";
  let description = [{
    The copies started since the previous commit form one group
    (`cp.async.commit_group`), which kiln_gpu.async_wait counts.

    Example:
    ```mlir
    kiln_gpu.async_commit_group
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def KilnGPU_AsyncWaitOp : Op<KilnGPU_Dialect, "async_wait",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait for asynchronous copies, then for every thread";
  let description = [{
    Waits until at most `pending` of the thread's committed copy groups are
    still in flight (`cp.async.wait_group`), makes the copied data visible
    to the tensor cores' asynchronous proxy where wgmma reads it, then
    synchronizes the CTA: after it, every thread's completed copies can be
    read and every thread is done with what it read before.

    Example:
    ```mlir
    kiln_gpu.async_wait {pending = 1 : i32}
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntNonNegative]>:$pending);
  let assemblyFormat = "attr-dict";
}

def KilnGPU_AsyncCopyArriveOp : Op<KilnGPU_Dialect, "async_copy_arrive",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Arrive on a slot's mbarrier once the thread's copies land";
  let description = [{
    When `pred` holds, has every thread arrive on slot `slot`'s mbarrier
    (`barriers` bytes into the pipeline buffers, plus 8 per slot) once all
    the `cp.async` copies it has started so far are complete
    (`cp.async.mbarrier.arrive.noinc`), without waiting for them. The
    mbarrier expects one arrival per thread a phase
    (kiln_gpu.init_tma_barriers): the phase completes when every thread's
    copies into the slot have landed, which kiln_gpu.wait_tma_barrier
    with `threadCopies` waits for, in place of kiln_gpu.async_wait's CTA
    barrier. `pred` must be the same in every thread.

    Example:
    ```mlir
    kiln_gpu.async_copy_arrive %slot, %runs {barriers = 98304 : i64}
    ```
  }];
  let arguments = (ins I32:$slot, I1:$pred,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$barriers);
  let assemblyFormat = "$slot `,` $pred attr-dict";
  let hasVerifier = 1;
}

def KilnGPU_InitTmaBarriersOp : Op<KilnGPU_Dialect, "init_tma_barriers",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Initialize the mbarriers that TMA copies into slots complete";
  let description = [{
    One thread initializes `count` mbarriers (8 bytes each), starting
    `offset` bytes into the kernel's pipeline buffers, each expecting
    `arrivals` arrivals per phase (one per kiln_gpu.async_tma_copy into a
    slot, one per thread where the threads' `cp.async` copies fill the
    slots, see kiln_gpu.async_copy_arrive, or one per warp for the
    releases of kiln_gpu.release_slot), and makes them visible to the
    TMA unit; then every thread waits
    for the others. Barrier `i` belongs to slot `i` of the buffers whose
    copies name this `offset`. In a warp-specialized kernel the wait is on
    the consumer warps' named barrier, unless `allWarps` says that the op
    runs before the producer warps branch off, which then wait too.

    Example:
    ```mlir
    kiln_gpu.init_tma_barriers {offset = 98304 : i64, count = 3 : i32, arrivals = 2 : i32}
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$offset,
                       ConfinedAttr<I32Attr, [IntPositive]>:$count,
                       ConfinedAttr<I32Attr, [IntPositive]>:$arrivals,
                       UnitAttr:$allWarps);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def KilnGPU_AsyncTmaCopyOp : Op<KilnGPU_Dialect, "async_tma_copy",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Start copying a block into a dot operand slot with the TMA unit";
  let description = [{
    When `pred` holds, starts copying the `tile`-shaped block whose first
    element is at `coords` of the 2-D tensor `tensorMap` describes (a
    kernel parameter) into slot `slot` of `buffer`, laid out as a dot
    reading the slot expects, and arrives at the slot's mbarrier (the one
    `barriers` bytes into the pipeline buffers, plus 8 per slot) expecting
    the tile's bytes. Elements outside the tensor are filled as the tensor
    map says (zero, or NaN). The tile is the block as loaded: `[M][K]` for
    A, `[K][N]` for a B slot, `[N][K]` for a K-major one. The copies are
    issued by the lanes of the first warp, one box of the tensor map each
    (`getTmaBox`), or of warp `warp` when set (a warp-specialized kernel's
    producer warp); kiln_gpu.wait_tma_barrier waits for them.

    Example:
    ```mlir
    kiln_gpu.async_tma_copy %map[%m, %k], %slot, %runs {barriers = 98304 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 16384, slots = 3>, tile = tensor<128x64xf16>}
    ```
  }];
  let arguments = (ins Kiln_TensorMapPtr:$tensorMap, Variadic<I32>:$coords, I32:$slot, I1:$pred,
                       KilnGPU_OperandBufferAttr:$buffer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$barriers,
                       TypeAttrOf<AnyRankedTensor>:$tile,
                       OptionalAttr<ConfinedAttr<I32Attr, [IntNonNegative]>>:$warp);
  let assemblyFormat = [{
    $tensorMap `[` $coords `]` `,` $slot `,` $pred attr-dict
  }];
  let hasVerifier = 1;
}

def KilnGPU_WaitTmaBarrierOp : Op<KilnGPU_Dialect, "wait_tma_barrier",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait for the copies into a slot, then for every thread";
  let description = [{
    Waits until the phase of slot `slot`'s mbarrier (`barriers` bytes into
    the pipeline buffers, plus 8 per slot) whose parity is `phase` has
    completed, i.e. the copies into the slot (by the TMA unit, or with
    `threadCopies` the threads' own) have landed, then synchronizes
    the CTA: after it, every thread is also done with what it read before.
    With `perThread`, each thread only waits for the phase: where the
    slot's release (kiln_gpu.release_slot) tells the warp that copies into
    it when it may be refilled, and for that warp's own wait for the
    release. With `warp` (and `perThread`), only that warp's lanes wait:
    the warp that issues the copies into the slot, in a loop whose other
    warps go on. With `threadCopies`, the slot is filled by the threads'
    own `cp.async` copies, which kiln_gpu.async_copy_arrive has complete
    the mbarrier's phase: after the wait, where wgmma reads the slot, each
    thread makes them visible to the tensor cores' asynchronous proxy.

    Example:
    ```mlir
    kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 98304 : i64}
    kiln_gpu.wait_tma_barrier %slot, %parity {barriers = 98328 : i64, perThread, warp = 0 : i32}
    kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 98304 : i64, perThread, threadCopies}
    ```
  }];
  let arguments = (ins I32:$slot, I32:$phase,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$barriers,
                       UnitAttr:$perThread,
                       OptionalAttr<ConfinedAttr<I32Attr, [IntNonNegative]>>:$warp,
                       UnitAttr:$threadCopies);
  let assemblyFormat = "$slot `,` $phase attr-dict";
  let hasVerifier = 1;
}

def KilnGPU_ReleaseSlotOp : Op<KilnGPU_Dialect, "release_slot",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Tell a warp-specialized kernel's producer that a slot may be refilled";
  let description = [{
    Each warp, once its lanes are done with what they read from slot
    `slot`, arrives (one lane for the warp) on the slot's "empty" mbarrier,
    `barriers` bytes into the pipeline buffers plus 8 per slot, which
    kiln_gpu.init_tma_barriers initialized with one arrival per consumer
    warp. The producer waits for that phase before copying into the slot
    again.

    Example:
    ```mlir
    kiln_gpu.release_slot %slot {barriers = 98328 : i64}
    ```
  }];
  let arguments = (ins I32:$slot, ConfinedAttr<I64Attr, [IntNonNegative]>:$barriers);
  let assemblyFormat = "$slot attr-dict";
  let hasVerifier = 1;
}

def KilnGPU_ProducerOp : Op<KilnGPU_Dialect, "producer",
    [SingleBlock, NoTerminator, RecursiveMemoryEffects]> {
  let summary = "The code a warp-specialized kernel's producer warps run";
  let description = [{
    Marks a kernel as warp-specialized: it launches `warps` more warps than
    the module's `kiln_gpu.num_warps`, after them (the layouts of its blocks
    stay those of the `num_warps` consumer warps). Those producer warps run
    this region, and only it: the first of them issues the TMA copies in it
    (each naming its warp), then they exit. Everything outside the region
    runs on the consumer warps alone, whose CTA barriers become a named
    barrier of the consumer warps. The region holds scalar code, copies and
    waits only; the op comes first in its kernel, after the
    `allWarps` kiln_gpu.init_tma_barriers. With `producerRegisters` and
    `consumerRegisters` set, the producer warps give registers back
    (`setmaxnreg.dec`) and the consumer warps take them
    (`setmaxnreg.inc`).

    Example:
    ```mlir
    kiln_gpu.producer {warps = 4 : i32} {
      kiln_gpu.async_tma_copy %map[%m, %k], %c0, %true {barriers = 98304 : i64, buffer = #buf, tile = tensor<64x128xf16>, warp = 8 : i32}
    }
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntPositive]>:$warps,
                       OptionalAttr<ConfinedAttr<I32Attr, [IntPositive]>>:$producerRegisters,
                       OptionalAttr<ConfinedAttr<I32Attr, [IntPositive]>>:$consumerRegisters);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

// The consumer warpgroups' turns at the tensor cores (kiln-gpu-ping-pong).
class KilnGPU_TurnOp<string mnemonic> : Op<KilnGPU_Dialect, mnemonic,
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def KilnGPU_BeginTurnsOp : KilnGPU_TurnOp<"begin_turns"> {
  let summary = "Give the first warpgroup the first turn at the tensor cores";
  let description = [{
    kiln_gpu.await_turn and kiln_gpu.pass_turn make a kernel's warpgroups
    issue their dots in turn, round the ring of its `kiln_gpu.num_warps / 4`
    warpgroups (FlashAttention-3's ping-pong): warpgroup w waits for its
    turn, issues, and passes the turn to warpgroup w + 1, so that one
    warpgroup's other work runs while the next one's dots run. This op,
    once before the first kiln_gpu.await_turn, lets warpgroup 0 take its
    first turn without waiting: warpgroup 0 arrives on its own turn
    barrier (a named barrier, `bar.arrive`).

    Example:
    ```mlir
    kiln_gpu.begin_turns
    ```
  }];
}

def KilnGPU_AwaitTurnOp : KilnGPU_TurnOp<"await_turn"> {
  let summary = "Wait until the previous warpgroup passes this one the turn";
  let description = [{
    Waits on the warpgroup's turn barrier (a named barrier, `bar.sync`,
    counting this warpgroup's threads and the previous one's) until the
    previous warpgroup round the ring has passed the turn
    (kiln_gpu.pass_turn), or, for warpgroup 0's first turn,
    kiln_gpu.begin_turns gave it. See kiln_gpu.begin_turns.

    Example:
    ```mlir
    kiln_gpu.await_turn
    ```
  }];
}

def KilnGPU_PassTurnOp : KilnGPU_TurnOp<"pass_turn"> {
  let summary = "Give the next warpgroup the turn";
  let description = [{
    Arrives, without waiting, on the turn barrier of the next warpgroup
    round the ring (`bar.arrive`), which its kiln_gpu.await_turn waits for.
    See kiln_gpu.begin_turns.

    Example:
    ```mlir
    kiln_gpu.pass_turn
    ```
  }];
}

def KilnGPU_InvalTmaBarriersOp : Op<KilnGPU_Dialect, "inval_tma_barriers",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait for every thread, then invalidate the slots' mbarriers";
  let description = [{
    Synchronizes the CTA, then one thread invalidates the `count` mbarriers
    kiln_gpu.init_tma_barriers initialized at `offset`, so that their bytes
    may hold other data (or be initialized again). No copy may be in flight.

    Example:
    ```mlir
    kiln_gpu.inval_tma_barriers {offset = 98304 : i64, count = 3 : i32}
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$offset,
                       ConfinedAttr<I32Attr, [IntPositive]>:$count);
  let assemblyFormat = "attr-dict";
}

def KilnGPU_SharedOperandOp : Op<KilnGPU_Dialect, "shared_operand",
    [MemoryEffects<[MemRead]>]> {
  let summary = "A dot operand read from a slot of shared memory";
  let description = [{
    The block in slot `slot` of `buffer`, as the dots that use it read it:
    straight from shared memory by the tensor cores, never through a
    thread's registers. Only kiln.dot may use it, as the operand the buffer
    names.

    Example:
    ```mlir
    %a = kiln_gpu.shared_operand %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 16384, slots = 3>} : tensor<128x64xf16, #blocked>
    %d = kiln.dot %a, %b, %acc : ...
    ```
  }];
  let arguments = (ins I32:$slot, KilnGPU_OperandBufferAttr:$buffer);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$slot attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // KILN_GPU_OPS
