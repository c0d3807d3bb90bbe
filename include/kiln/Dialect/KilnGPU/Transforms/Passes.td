//===- Passes.td - Transformations of kiln_gpu -------------*- tablegen -*-===//
//
// Passes that choose and refine the layouts of kiln_gpu blocks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GPU_TRANSFORMS_PASSES
#define KILN_GPU_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def KilnGPUCoalesce : Pass<"kiln-gpu-coalesce", "mlir::ModuleOp"> {
  let summary = "Choose layouts so that global memory accesses are coalesced and vectorized";
  let description = [{
    Uses the axis-info analysis (contiguity, divisibility, constancy) of each
    load's and store's pointers to find how many consecutive elements one
    thread can access in a single instruction (at most 16 bytes, and no more
    than the pointer alignment proves), along whichever dimension is widest
    (the layout's fastest one unless another is strictly wider: a
    column-major block runs down its columns). Every block of that shape is
    given a blocked layout holding that many contiguous elements per thread
    along that dimension, so that consecutive threads access consecutive
    16-byte chunks. A load or store that this layout would split into
    narrower accesses than its own pointers allow along another dimension
    (a column-major output of a block loaded row-major; attention's K
    block, read transposed, of the same shape as Q) gets a layout of its
    own: its pointers, mask and `other` are recomputed under it, and its
    value converted.

    Before (f32 pointers known contiguous and 16-byte aligned):
    ```mlir
    #blocked = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
    %x = kiln.load %p : tensor<1024x!kiln.ptr<f32>, #blocked> -> tensor<1024xf32, #blocked>
    ```
    After:
    ```mlir
    #blocked4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
    %x = kiln.load %p : tensor<1024x!kiln.ptr<f32>, #blocked4> -> tensor<1024xf32, #blocked4>
    ```
  }];
}

def KilnGPUMatchShapeLayouts : Pass<"kiln-gpu-match-shape-layouts", "mlir::ModuleOp"> {
  let summary = "Give the operands of shape-changing ops the layouts their results imply";
  let description = [{
    `kiln.expand_dims` moves no data when its operand has the slice of its
    result's layout, and `kiln.broadcast` moves none when its operand has the
    result's own layout (each thread then already holds the elements it
    repeats). Layout assignment gives every shape its own layout, so this
    pass recomputes the producers of such operands under the layout needed:
    ranges, splats, constants, element-wise ops, pointer arithmetic, loads
    and shape changes are cloned with the new layout (cheaper than moving
    elements between threads). A producer that cannot be recomputed (a block
    carried by a loop) is reported.

    Before:
    ```mlir
    %r = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #blocked1d>
    %e = kiln.expand_dims %r {axis = 1 : i32} : tensor<32xi32, #blocked1d> -> tensor<32x1xi32, #blocked2d>
    ```
    After:
    ```mlir
    %r2 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #kiln_gpu.slice<{dim = 1, parent = #blocked2d}>>
    %e = kiln.expand_dims %r2 {axis = 1 : i32} : tensor<32xi32, #kiln_gpu.slice<{dim = 1, parent = #blocked2d}>> -> tensor<32x1xi32, #blocked2d>
    ```
  }];
}

def KilnGPUAccelerateMatmul : Pass<"kiln-gpu-accelerate-matmul", "mlir::ModuleOp"> {
  let summary = "Give dots the accumulator layout of the tensor-core instructions";
  let description = [{
    A `kiln.dot` that the target's tensor cores can compute (sm_80 and
    later: 2-D or batched 3-D, f16 or bf16 operands, f32 with tf32 or
    tf32x3 precision, or i8 into i32, dimensions that tile by the
    instruction) gets as result
    layout the one `mma.sync` leaves its accumulator in: each thread holds
    pairs of columns of an 8x8 tile, 4 threads along a row, 8 rows a warp,
    warps tiled over the block (on sm_90a, where the block tiles by it and
    wgmma takes the operands, the warpgroup MMA's). That layout is an
    ordinary blocked layout, so everything downstream (element-wise ops,
    loop-carried values, stores) works on it unchanged. Other dots (f32
    with ieee precision among them) keep a blocked result and are computed
    with FMAs. Dots of 8-bit floats keep their bytes where wgmma computes
    them (sm_90a) and are otherwise decoded to f16 operands first (as
    kiln-decode-fp8-dots does).

    The accumulator operand is recomputed (or converted) under that layout.
    A block carried by an `scf.for` that is converted to the dot's layout
    on entry and back before the yield is carried in the dot's layout
    instead, and conversions of the result are sunk below element-wise ops
    so that stores take the dot's layout directly (their pointers are
    recomputed), unless the store's own layout writes wider vectors than
    the accumulator's pairs of columns: then the (narrowed) result goes
    through shared memory once, and leaves in 16-byte stores.

    Before:
    ```mlir
    %d = kiln.dot %a, %b, %c : tensor<64x32xf16, #blockedA> * tensor<32x64xf16, #blockedB> -> tensor<64x64xf32, #blocked>
    ```
    After:
    ```mlir
    %c2 = kiln_gpu.convert_layout %c : tensor<64x64xf32, #blocked> -> tensor<64x64xf32, #mma>
    %d2 = kiln.dot %a, %b, %c2 : tensor<64x32xf16, #blockedA> * tensor<32x64xf16, #blockedB> -> tensor<64x64xf32, #mma>
    %d = kiln_gpu.convert_layout %d2 : tensor<64x64xf32, #mma> -> tensor<64x64xf32, #blocked>
    ```
    where `#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>`.
  }];
}

def KilnGPUForwardLayouts : Pass<"kiln-gpu-forward-layouts", "mlir::ModuleOp"> {
  let summary = "Run the users of a layout conversion in its source's layout where that moves fewer bytes";
  let description = [{
    A `kiln_gpu.convert_layout` moves its whole block between threads
    through shared memory. Its users can often run in the source's layout
    instead: element-wise ops in any layout, a reduction in a blocked layout
    (its result in the slice), `expand_dims` of that slice, `broadcast`, a
    value carried by an `scf.for` (with its initial value, yielded value and
    result), a result of an `scf.if` (with the values both regions yield
    for it), and the A and B operands of a `kiln.dot`. For each conversion
    the pass follows all such users at once, the conversion's forward
    slice, gives every value in it the source's layout, recomputes (or
    converts) the operands that enter the slice from outside, and converts
    back only where the slice meets an op that needs its old layout. It
    rewrites when that lowers the bytes moved through shared memory, each
    conversion weighted by the loops it runs in; a conversion inside the
    slice that becomes an identity disappears, and so does one whose only
    reader, an operand entering the slice, now takes its source instead.

    This keeps an attention kernel's softmax in the first dot's accumulator
    layout: the scores, their row maxima and sums, the running maximum the
    loop carries, and the probabilities that become the next dot's A
    operand, which wgmma then reads from registers.

    Before:
    ```mlir
    %s = kiln.dot %q, %k, %zero : ... -> tensor<128x64xf32, #acc>
    %c = kiln_gpu.convert_layout %s : tensor<128x64xf32, #acc> -> tensor<128x64xf32, #blocked>
    %m = kiln.reduce(%c) {axis = 1 : i32} : (tensor<128x64xf32, #blocked>) -> tensor<128xf32, #kiln_gpu.slice<{dim = 1, parent = #blocked}>> { ... }
    ```
    After:
    ```mlir
    %s = kiln.dot %q, %k, %zero : ... -> tensor<128x64xf32, #acc>
    %m = kiln.reduce(%s) {axis = 1 : i32} : (tensor<128x64xf32, #acc>) -> tensor<128xf32, #kiln_gpu.slice<{dim = 1, parent = #acc}>> { ... }
    ```
  }];
}

def KilnGPUPipelineLoads : Pass<"kiln-gpu-pipeline-loads", "mlir::ModuleOp"> {
  let summary = "Copy a loop's dot operands and row loads into multi-buffered shared memory ahead of use";
  let description = [{
    Software pipelining of an `scf.for` whose tensor-core dots (wgmma or
    mma.sync; one in a matmul, two in attention) read loaded operands. Each
    load that only feeds one dot operand (zero
    or no `other`, at least 4 contiguous bytes per access, the last
    dimension fastest; f16, bf16, or an i8 A: f32 operands are rounded or
    split in registers, and an i8 B is stored K-major, which a copy cannot
    do; a B read as the transpose of a `[N, K]` block with runs along K is
    copied as it lies into a K-major slot, `kiln_gpu.async_copy ...
    transposed`) becomes a ring of `num-stages` slots in shared memory
    filled by `cp.async`:

    * before the loop, the copies of the first L iterations (each its own
      commit group, masked off past the end of the loop);
    * at the top of the body, `kiln_gpu.async_wait` for the current slot's
      group (L - 1 groups may stay in flight) and a CTA barrier;
    * the dot reads its operands straight from the slot
      (`kiln_gpu.shared_operand`);
    * after the dot, the copies of iteration i + L into the slot L ahead.

    The pointers and masks of iteration i + L are the load's own, cloned
    with the induction variable advanced by L steps; the values the loop
    carries for them (pointer increments) start L iterations ahead. A
    pointer block advanced by a loop-invariant splat each iteration is
    first carried as an i64 sum of the offsets instead, the block rebuilt
    from its initial value, so that the lowering only computes the
    pointers the copies use. L is
    `num-stages` - 1. A wgmma dot that only accumulates, both operands in
    slots, is also made asynchronous (marked `kiln_gpu.wgmma_buffer = 0`,
    its result read through `kiln_gpu.async_dot_wait`): each wgmma then
    waits only for the group before it, so on more than one warpgroup the
    previous iteration's slot may still be read when a warpgroup copies,
    and the ring gets one more slot. A dot operand loaded once before the
    loop (attention's Q) is copied once into a slot of its own, as the
    first commit group; a later loop of the same block that reads the same
    block from a slot at the same place reads it as the earlier loop left
    it, where no copy between wrote those bytes (the causal forward's two
    loops: kiln-gpu-allocate-shared-memory then keeps the slot from the
    scratch in between), and otherwise copies it again. Its load stays
    while anything else reads it.
    A block read as B by several wgmma dots, as loaded by one and
    transposed by another (attention's backward), has one slot: it holds
    the block's rows along its slowest dimension, which one dot reads as
    `[K][N]` and the other as `[N][K]` (K-major), each through its own
    `kiln_gpu.shared_operand`. Through host tensor descriptors the TMA unit
    copies the blocks instead; the load's masked pointers, computed from
    the same carried offsets, run ahead with the coordinates and die. In
    such a loop a block loaded once through a tensor map is copied by the
    TMA unit too, on an mbarrier of its own (one phase, placed before the
    ring's), initialized and copied before the ring's first copies, waited
    for by every thread before the loop, and invalidated after the last
    loop that reads its slot. In a
    loop of several wgmma dots (attention's) that all wait for themselves
    (no asynchronous dot, no dot run an iteration late), that carries an
    accumulator 128 columns wide or more, in a kernel of two warpgroups or
    more, each thread's copies of an iteration also arrive on the slot's
    mbarrier once they land (`kiln_gpu.async_copy_arrive`, the mbarriers
    initialized with one arrival per thread, after the slots), and the top
    of the body waits for that phase (`kiln_gpu.wait_tma_barrier ...
    {threadCopies}`, with a CTA barrier) instead of `kiln_gpu.async_wait`:
    kiln-gpu-release-tma-slots can then drop the barrier. In a loop of
    chained dots (attention's forward) whose accumulator is narrower than
    128 columns, the second dot is made asynchronous (marked
    `kiln_gpu.wgmma_buffer = 0`): its accumulator is read through
    `kiln_gpu.async_dot_wait` by its first reader in the next iteration
    (the rescale, after the next first dot's own wait) and after the loop,
    so that the dot runs while the warps meet at the next barrier; on more
    than one warpgroup the ring gets one more slot. A loop with
    chained dots (kiln-gpu-overlap-dots) on one warpgroup with one 64-row
    tile, the only loop of the kernel that computes dots, has its copies
    run one iteration less ahead and is marked `kiln_gpu.overlap_dots`.
    (The two versions of a loop that kiln-tensor-map-pointer-loads makes,
    in an `scf.if` marked `kiln.tensor_map_version`, count as one loop: a
    program runs one of them. Such a version's loop through tensor maps is
    copied by threads, as the other, and kiln-gpu-drop-unread-tensor-maps
    then keeps the other alone: TMA copies in a rotated loop of a version
    are not measured yet, and the version not rotated was slower.)
    Runs on sm_80 and later when `num-stages` (or the loop's
    `kiln.num_stages`) is 2 or more; a loop that stores, or whose pointer
    values are used outside the copies, is left to kiln-gpu-prefetch-loads.

    Before:
    ```mlir
    scf.for %i = %lb to %ub step %s iter_args(%acc = %zero, %p = %p0) {
      %a = kiln.load %p, %mask : ...
      %d = kiln.dot %a, %b, %acc : ...
      %q = kiln.addptr %p, %step : ...
      scf.yield %d, %q
    }
    ```
    After (`num-stages` = 3, L = 2):
    ```mlir
    kiln_gpu.async_copy %p0, %c0, %m0 {buffer = #buf} : ...
    kiln_gpu.async_commit_group
    kiln_gpu.async_copy %p1, %c1, %m1 {buffer = #buf} : ...
    kiln_gpu.async_commit_group
    scf.for %i = %lb to %ub step %s iter_args(%acc = %zero, %p = %p2, %slot = %c0) {
      kiln_gpu.async_wait {pending = 1 : i32}
      %a = kiln_gpu.shared_operand %slot {buffer = #buf} : ...
      %d = kiln.dot %a, %b, %acc : ...
      kiln_gpu.async_copy %p, %next_slot, %ahead_mask {buffer = #buf} : ...
      kiln_gpu.async_commit_group
      %q = kiln.addptr %p, %step : ...
      scf.yield %d, %q, %slot_plus_one
    }
    kiln_gpu.async_wait {pending = 0 : i32}
    ```

    The loop's other loads of 1-D blocks of 32- or 64-bit elements
    through pointers (attention's backward loads its rows of M and Delta
    so), where the copy stage can run their pointers ahead as well, go
    through block slots: `kiln_gpu.async_copy_block` into a ring of as many
    `#kiln_gpu.block_buffer` slots, in the operands' commit groups, and
    `kiln_gpu.load_block` from the slot the dots read, just before the
    block's first reader, then `other` where the load's mask is false
    (the copies zero-fill those elements). Their
    latency then hides behind earlier iterations instead of stalling the
    code that reads them. Not with TMA copies, nor in a loop marked
    `kiln_gpu.overlap_dots`. The copy reads its pointers and mask
    recomputed under a blocked layout of its own, 16 bytes a thread: the
    reader's layout (a row of an accumulator) gives each element to many
    threads, and copied from there every thread would issue a cp.async per
    pair of elements it holds.

    ```mlir
      %m = kiln_gpu.load_block %slot {buffer = #rows} : tensor<64xf32, #row>
      %m_or_other = arith.select %mask, %m, %other : ...
      ...
      kiln_gpu.async_copy_block %m_ptrs_ahead, %next_slot, %ahead_mask {buffer = #rows}
          : tensor<64x!kiln.ptr<f32>, #copy>, tensor<64xi1, #copy>
      kiln_gpu.async_commit_group
    ```

    On sm_90a, where every pipelined load also names a tensor map (a host
    tensor descriptor's kernel parameter, `kiln.load ... tensor_map`) whose
    box a wgmma slot can take (`getTmaBox`), the TMA unit copies them
    instead: `kiln_gpu.async_tma_copy` from the load's coordinates, not its
    pointers (a B read as the transpose of a loaded `[N][K]` block goes
    into a K-major slot). An mbarrier per slot, after the slots, counts
    the copies (`kiln_gpu.init_tma_barriers` before the first); the loop
    also carries the parity of the slot's phase, which flips each round,
    and waits with `kiln_gpu.wait_tma_barrier`; after the loop,
    `kiln_gpu.inval_tma_barriers`. Each tensor-map parameter records its
    box (`kiln.tensor_map_box`), which the launcher encodes the map with.

    After, with TMA copies (`num-stages` = 3):
    ```mlir
    kiln_gpu.init_tma_barriers {offset = 24576 : i64, count = 3 : i32, arrivals = 2 : i32}
    kiln_gpu.async_tma_copy %map_a[%m, %k0], %c0, %runs0 {barriers = 24576 : i64, buffer = #buf_a, tile = tensor<64x32xf16>}
    ...
    scf.for %i = %lb to %ub step %s iter_args(%acc = %zero, %slot = %c0, %phase = %c0) {
      kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 24576 : i64}
      %a = kiln_gpu.shared_operand %slot {buffer = #buf_a} : ...
      %d = kiln.dot %a, %b, %acc : ...
      kiln_gpu.async_tma_copy %map_a[%m, %k_ahead], %next_slot, %runs {barriers = 24576 : i64, buffer = #buf_a, tile = tensor<64x32xf16>}
      scf.yield %d, %slot_plus_one, %next_phase
    }
    kiln_gpu.inval_tma_barriers {offset = 24576 : i64, count = 3 : i32}
    ```
  }];
  let options = [
    Option<"numStages", "num-stages", "int", /*default=*/"3",
           "software pipeline depth: slots per operand (2 or more)">,
  ];
}

def KilnGPUPrefetchLoads : Pass<"kiln-gpu-prefetch-loads", "mlir::ModuleOp"> {
  let summary = "Load a loop's dot operands one iteration ahead";
  let description = [{
    In an `scf.for` that computes a `kiln.dot` and stores nothing (a
    pipelined loop's copies into its slots do not count), each load whose
    result feeds a dot operand is issued one iteration early: the
    loop carries the loaded block, the body loads the next iteration's
    block (its pointers and mask recomputed from the values the loop
    yields, its mask also false past the last iteration) before the dot,
    and a copy of the load before the loop fetches the first. The global
    memory latency of iteration i + 1 then overlaps the tensor-core work of
    iteration i. Runs when `num-stages` is 2 or more.

    Before:
    ```mlir
    scf.for %i = %lb to %ub step %s iter_args(%acc = %zero, %p = %p0) {
      %a = kiln.load %p : ...
      %d = kiln.dot %a, %b, %acc : ...
      %q = kiln.addptr %p, %step : ...
      scf.yield %d, %q
    }
    ```
    After:
    ```mlir
    %a0 = kiln.load %p0, %first_mask : ...
    scf.for %i = %lb to %ub step %s iter_args(%acc = %zero, %p = %p0, %a = %a0) {
      %q = kiln.addptr %p, %step : ...
      %a_next = kiln.load %q, %not_last_mask : ...
      %d = kiln.dot %a, %b, %acc : ...
      scf.yield %d, %q, %a_next
    }
    ```
  }];
  let options = [
    Option<"numStages", "num-stages", "int", /*default=*/"3",
           "software pipeline depth (prefetching needs 2 or more)">,
  ];
}

def KilnGPUOverlapDots : Pass<"kiln-gpu-overlap-dots", "mlir::ModuleOp"> {
  let summary = "Run the second of a loop's chained wgmma dots an iteration late, during the next softmax";
  let description = [{
    In attention's loop the second dot (`acc = dot(p, v, acc * alpha)`)
    needs the softmax of the first (`s = dot(q, k)`), so as written the
    tensor cores idle during the softmax, and the softmax waits for the
    tensor cores. kiln-gpu-pipeline-loads marks such a loop
    (`kiln_gpu.overlap_dots`) when its operands are in pipeline slots,
    one warpgroup computes one 64-row tile and no other loop of the kernel
    computes dots (where it measured faster), and
    runs the copies one iteration less ahead so that a slot stays valid an
    iteration longer; kiln-gpu-warp-specialize marks the consumers' loop of
    a warp-specialized attention on two or more warpgroups with three slots
    or more (the pass then runs again after it), whose slot release
    (`kiln_gpu.release_slot`) runs late too, after the wait for the second
    dot (and, for the last block, after the loop). This pass then rotates
    it: iteration i issues the
    first dot of block i, then the second dot of block i - 1 (the
    accumulator chain, the probabilities and the values it reads from the
    rest of the iteration carried from the previous one), waits for the
    first dot only (`kiln_gpu.async_dot_wait {pending = 1}`: wgmma groups
    complete in order), computes block i's softmax while the second dot
    runs, and waits for that before the iteration ends. Before the rotated
    loop runs iteration 0 without its second dot; after it, the second dot
    of the last block; all inside an `scf.if` on the loop running at all.

    Before:
    ```mlir
    scf.for %i = %lb to %ub step %c iter_args(%acc = %zero, %m = %m0) {
      %s = kiln.dot %q, %k, %zero0 : ...
      %p, %alpha, %m2 = <softmax of %s, %m>
      %scaled = arith.mulf %acc, %alpha : ...
      %acc2 = kiln.dot %p, %v, %scaled : ...
      scf.yield %acc2, %m2
    } {kiln_gpu.overlap_dots}
    ```
    After:
    ```mlir
    scf.if %runs {
      %s0 = kiln.dot %q, %k0, %zero0 : ...
      %p0, %alpha0, %m1 = <softmax of %s0, %m0>
      %r:4 = scf.for %i = %lb1 to %ub step %c iter_args(%acc = %zero, %m = %m1, %p = %p0, %alpha = %alpha0) {
        %s = kiln.dot %q, %k, %zero0 {kiln_gpu.wgmma_buffer = 0 : i32} : ...
        %scaled = arith.mulf %acc, %alpha : ...
        %acc2 = kiln.dot %p, %v_previous, %scaled {kiln_gpu.wgmma_buffer = 0 : i32} : ...
        %s1 = kiln_gpu.async_dot_wait %s {pending = 1 : i32} : ...
        %p1, %alpha1, %m2 = <softmax of %s1, %m>
        %acc3 = kiln_gpu.async_dot_wait %acc2 : ...
        scf.yield %acc3, %m2, %p1, %alpha1
      }
      %last = kiln.dot %r#2, %v_last, <%r#0 * %r#3> : ...
      scf.yield %last, %r#1
    } else {
      scf.yield %zero, %m0
    }
    ```
  }];
}

def KilnGPUAsyncDots : Pass<"kiln-gpu-async-dots", "mlir::ModuleOp"> {
  let summary = "Overlap a loop's wgmma dots with the next iteration's operand stores";
  let description = [{
    A loop whose one dot uses wgmma and only accumulates (its accumulator is
    a loop-carried value that nothing else reads) is unrolled by two, and
    its dots are marked with `kiln_gpu.wgmma_buffer` 0 and 1: each stores
    its operands in its own half of the scratch, issues its wgmma group and
    waits only for the previous dot's group (`wgmma.wait_group 1`), so the
    tensor cores work on one iteration while the threads store the next.
    The loop's accumulator result is read through `kiln_gpu.async_dot_wait`
    (`wgmma.wait_group 0`). Runs when `num-stages` is 3 or more.

    Before:
    ```mlir
    %r = scf.for %i = %lb to %ub step %c1 iter_args(%acc = %zero) {
      %d = kiln.dot %a, %b, %acc : ... -> tensor<128x128xf32, #wgmma>
      scf.yield %d
    }
    kiln.store %p, %r
    ```
    After:
    ```mlir
    %r = scf.for %i = %lb to %ub2 step %c2 iter_args(%acc = %zero) {
      %d0 = kiln.dot %a0, %b0, %acc {kiln_gpu.wgmma_buffer = 0 : i32} : ...
      %d1 = kiln.dot %a1, %b1, %d0 {kiln_gpu.wgmma_buffer = 1 : i32} : ...
      scf.yield %d1
    }
    %r2 = scf.for ... (the remaining iteration, buffer 0)
    %done = kiln_gpu.async_dot_wait %r2 : tensor<128x128xf32, #wgmma>
    kiln.store %p, %done
    ```
  }];
  let options = [
    Option<"numStages", "num-stages", "int", /*default=*/"3",
           "software pipeline depth (asynchronous dots need 3 or more)">,
  ];
}

def KilnGPUWarpSpecialize : Pass<"kiln-gpu-warp-specialize", "mlir::ModuleOp"> {
  let summary = "Give a TMA-pipelined loop a producer warpgroup that issues its copies";
  let description = [{
    On sm_90a, for a loop of the kernel's own body (or of the TMA side of a
    loop that kiln-tensor-map-pointer-loads versioned there) that
    kiln-gpu-pipeline-loads left with TMA copies only, read by dots that are
    all synchronous or all asynchronous, and that either asks for it
    (`kiln.warp_specialize = true`: `kl.range(..., warp_specialize=True)`)
    or, with no `kiln.warp_specialize` (`warp_specialize=False` sets it
    false), is attention's loop of two chained dots on 8 warps: the kernel gets a warpgroup of producer warps
    (`kiln_gpu.producer`, first in the kernel) that issues every copy of
    the loop, those before it and a loop of its own over the same
    iterations, computing their coordinates, slots and predicates from the
    same scalar code. Before copying into a slot again (a copy that runs:
    not the masked-off ones past the loop's end) the producer waits for
    the slot's release: each slot gets a second mbarrier, "empty"
    (initialized with one arrival per consumer warp, after the "full"
    ones), on which every kernel warp arrives after the last dot that reads
    the slot (`kiln_gpu.release_slot`). The kernel's warps wait for a
    slot's copies without a CTA barrier (`perThread`): none is left in the
    loop. With two consumer warpgroups (8 warps), the producer gives
    registers back (40 a thread) and the consumers take them (232). A loop
    that does not qualify (cp.async copies, an asynchronous dot, a dot run
    an iteration late, blocks in the copies' computation) is left as it is:
    the attribute is a request. With two or more consumer warpgroups and
    three slots or more, attention's loop is marked `kiln_gpu.overlap_dots`
    for kiln-gpu-overlap-dots, which runs after this pass too. One producer
    per kernel, for all of its
    TMA loops or none: several loops in a row (a causal attention's two)
    share one ring of slots and of "empty" mbarriers, each loop after the
    first getting "full" mbarriers of its own, initialized with the others;
    the producer runs a copy loop per loop, and a later loop's copies, the
    first ones included, wait for the release of the slot's previous fill,
    an earlier loop's (every loop but the last must read its slots with
    synchronous dots). The TMA copies of blocks loaded once before the
    first loop (attention's Q, on an mbarrier of their own) are issued by
    the producer too, first, where their coordinates are scalar code; their
    mbarrier is initialized with the others, and the kernel's warps still
    wait for it before their first loop. On the TMA side of a version (one
    loop, and unasked only where attention's output is 128 columns wide or
    more), the producer computes the version's condition and copies only
    where it holds; the mbarriers are invalidated after the version, and
    the other side, through pointers, which the producer warps leave idle,
    invalidates them first and initializes them again last, its own copies
    using the same bytes.

    Before (`num-stages` = 3):
    ```mlir
    kiln_gpu.init_tma_barriers {arrivals = 1 : i32, count = 3 : i32, offset = 49152 : i64}
    kiln_gpu.async_tma_copy %map[%r0, %c0], %c0, %t0 {barriers = 49152 : i64, buffer = #buf, tile = tensor<64x128xf16>}
    kiln_gpu.async_tma_copy %map[%r1, %c0], %c1, %t1 {barriers = 49152 : i64, buffer = #buf, tile = tensor<64x128xf16>}
    scf.for %i = %lb to %ub step %c64 iter_args(%acc = %zero, %row = %r2, %slot = %c0, %phase = %c0) {
      kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 49152 : i64}
      %b = kiln_gpu.shared_operand %slot {buffer = #buf} : ...
      %d = kiln.dot %a, %b, %acc : ...
      kiln_gpu.async_tma_copy %map[%row, %c0], %ahead, %runs {barriers = 49152 : i64, buffer = #buf, tile = tensor<64x128xf16>}
      scf.yield %d, %next_row, %next_slot, %next_phase
    } {kiln.warp_specialize = true}
    kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 49152 : i64}
    ```
    After:
    ```mlir
    kiln_gpu.init_tma_barriers {allWarps, arrivals = 1 : i32, count = 3 : i32, offset = 49152 : i64}
    kiln_gpu.init_tma_barriers {allWarps, arrivals = 8 : i32, count = 3 : i32, offset = 49176 : i64}
    kiln_gpu.producer attributes {consumerRegisters = 232 : i32, producerRegisters = 40 : i32, warps = 4 : i32} {
      kiln_gpu.async_tma_copy %map[%r0, %c0], %c0, %t0 {..., warp = 8 : i32}
      kiln_gpu.async_tma_copy %map[%r1, %c0], %c1, %t1 {..., warp = 8 : i32}
      scf.for %i = %lb to %ub step %c64 iter_args(%row = %r2, %slot = %c0, %empty = %c1) {
        scf.if %runs {
          kiln_gpu.wait_tma_barrier %ahead, %empty {barriers = 49176 : i64, perThread}
        }
        kiln_gpu.async_tma_copy %map[%row, %c0], %ahead, %runs {..., warp = 8 : i32}
        scf.yield %next_row, %next_slot, %next_empty
      }
    }
    scf.for %i = %lb to %ub step %c64 iter_args(%acc = %zero, %row = %r2, %slot = %c0, %phase = %c0) {
      kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 49152 : i64, perThread}
      %b = kiln_gpu.shared_operand %slot {buffer = #buf} : ...
      %d = kiln.dot %a, %b, %acc : ...
      kiln_gpu.release_slot %slot {barriers = 49176 : i64}
      scf.yield %d, %next_row, %next_slot, %next_phase
    }
    kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 49152 : i64}
    kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 49176 : i64}
    ```
  }];
}

def KilnGPUPingPong : Pass<"kiln-gpu-ping-pong", "mlir::ModuleOp"> {
  let summary = "Make a warp-specialized kernel's consumer warpgroups take turns at the first dot";
  let description = [{
    On sm_90a, in a warp-specialized kernel (one with a `kiln_gpu.producer`)
    of two or more consumer warpgroups (`kiln_gpu.num_warps` a multiple of
    4, at least 8), for each loop of the kernel's body that releases the
    producer's slots and has attention's chained dots, both synchronous:
    the warpgroups issue the first dot in turn, round the ring of
    warpgroups (FlashAttention-3's ping-pong). Before the dot a warpgroup
    waits for its turn (`kiln_gpu.await_turn`); the dot becomes
    asynchronous (`kiln_gpu.wgmma_buffer`), the warpgroup passes the turn on
    as soon as it has issued it (`kiln_gpu.pass_turn`) and only then waits
    for it (`kiln_gpu.async_dot_wait`). So warpgroup 1's first dot queues
    behind warpgroup 0's, and warpgroup 0's softmax and second dot run
    while warpgroup 1's first dot does: the tensor cores see one warpgroup's
    dots while the other computes. In a loop that kiln-gpu-overlap-dots
    rotated (both dots asynchronous, the first one's wait with one group
    pending right after the second), the turn covers both dots: the
    warpgroup issues this block's first dot and the previous block's
    second, passes the turn, then waits (FlashAttention-3's schedule).
    Only dots that store no operand into the scratch take turns: the
    scratch's CTA barriers inside a turn would never be met by the
    warpgroup waiting for it. Warpgroup 0 gets the first turn
    (`kiln_gpu.begin_turns`, once, where the consumers' code starts, after
    the producer region); every loop goes on with the same ring.

    Before (8 consumer warps):
    ```mlir
    kiln_gpu.producer attributes {warps = 4 : i32} { ... }
    scf.for %i = %lb to %ub step %c128 iter_args(%acc = %zero, ...) {
      kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 229376 : i64, perThread}
      %s = kiln.dot %q, %k, %zeros : ...
      ... softmax of %s, %p ...
      %o = kiln.dot %p, %v, %scaled : ...
      kiln_gpu.release_slot %slot {barriers = 229400 : i64}
      scf.yield %o, ...
    }
    ```
    After:
    ```mlir
    kiln_gpu.producer attributes {warps = 4 : i32} { ... }
    kiln_gpu.begin_turns
    scf.for %i = %lb to %ub step %c128 iter_args(%acc = %zero, ...) {
      kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 229376 : i64, perThread}
      kiln_gpu.await_turn
      %s = kiln.dot %q, %k, %zeros {kiln_gpu.wgmma_buffer = 0 : i32} : ...
      kiln_gpu.pass_turn
      %scores = kiln_gpu.async_dot_wait %s : ...
      ... softmax of %scores, %p ...
      %o = kiln.dot %p, %v, %scaled : ...
      kiln_gpu.release_slot %slot {barriers = 229400 : i64}
      scf.yield %o, ...
    }
    ```
  }];
}

def KilnGPUReleaseTmaSlots : Pass<"kiln-gpu-release-tma-slots", "mlir::ModuleOp"> {
  let summary = "Release a pipelined loop's slots on mbarriers instead of a CTA barrier per iteration";
  let description = [{
    For a loop that kiln-gpu-pipeline-loads left with TMA copies (or with
    `cp.async` copies that arrive on mbarriers) and no
    producer warpgroup took over (kiln-gpu-warp-specialize declined or was
    not asked), read by synchronous dots only (not asynchronous ones, nor a
    dot run an iteration late): the wait for a slot's copies no longer
    synchronizes the CTA (`perThread`). That barrier was what kept the
    first warp, whose lanes issue the copies, from refilling a slot that
    another warp still read. Instead each slot gets an "empty" mbarrier
    (initialized with one arrival per warp, after the slots' own), every
    warp arrives on it after the last dot that reads the slot
    (`kiln_gpu.release_slot`), and before the copies into a slot (those
    that run) the first warp alone waits for the release of the slot's
    previous fill (`wait_tma_barrier ... {perThread, warp = 0}`; a slot's
    first fill waits for parity 1, which a fresh mbarrier has passed). No
    warp waits for the others in the loop any more: two warpgroups drift
    apart and reach the tensor cores in turn rather than together. A loop
    whose threads copy their slots with `cp.async`, arriving on the slots'
    mbarriers (`wait_tma_barrier ... {threadCopies}`), is released the same
    way, block reads (`kiln_gpu.load_block`) counting as readers; there
    every thread copies, also past the loop's end (masked off, the copies
    still write zeros), so every thread waits for the release, always
    (`wait_tma_barrier %ahead, %parity {..., perThread}`).

    Before (`num-stages` = 3):
    ```mlir
    kiln_gpu.init_tma_barriers {arrivals = 1 : i32, count = 3 : i32, offset = 49152 : i64}
    kiln_gpu.async_tma_copy %map[%r0, %c0], %c0, %t0 {barriers = 49152 : i64, ...}
    kiln_gpu.async_tma_copy %map[%r1, %c0], %c1, %t1 {barriers = 49152 : i64, ...}
    scf.for %i = %lb to %ub step %c64 iter_args(%acc = %zero, %row = %r2, %slot = %c0, %phase = %c0) {
      kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 49152 : i64}
      %b = kiln_gpu.shared_operand %slot {buffer = #buf} : ...
      %d = kiln.dot %a, %b, %acc : ...
      kiln_gpu.async_tma_copy %map[%row, %c0], %ahead, %runs {barriers = 49152 : i64, ...}
      scf.yield %d, %next_row, %next_slot, %next_phase
    }
    kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 49152 : i64}
    ```
    After:
    ```mlir
    kiln_gpu.init_tma_barriers {arrivals = 1 : i32, count = 3 : i32, offset = 49152 : i64}
    kiln_gpu.init_tma_barriers {arrivals = 4 : i32, count = 3 : i32, offset = 49176 : i64}
    kiln_gpu.async_tma_copy %map[%r0, %c0], %c0, %t0 {barriers = 49152 : i64, ...}
    kiln_gpu.async_tma_copy %map[%r1, %c0], %c1, %t1 {barriers = 49152 : i64, ...}
    scf.for %i = %lb to %ub step %c64 iter_args(%acc = %zero, %row = %r2, %slot = %c0, %phase = %c0) {
      kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 49152 : i64, perThread}
      %b = kiln_gpu.shared_operand %slot {buffer = #buf} : ...
      %d = kiln.dot %a, %b, %acc : ...
      kiln_gpu.release_slot %slot {barriers = 49176 : i64}
      %same_round = arith.cmpi ugt, %ahead, %slot : i32
      %parity = arith.xori %phase, (extui %same_round) : i32
      scf.if %runs {
        kiln_gpu.wait_tma_barrier %ahead, %parity {barriers = 49176 : i64, perThread, warp = 0 : i32}
      }
      kiln_gpu.async_tma_copy %map[%row, %c0], %ahead, %runs {barriers = 49152 : i64, ...}
      scf.yield %d, %next_row, %next_slot, %next_phase
    }
    kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 49152 : i64}
    kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 49176 : i64}
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect"];
}

def KilnGPUSinkLoadCasts : Pass<"kiln-gpu-sink-load-casts", "mlir::ModuleOp"> {
  let summary = "Move the casts of loaded blocks down to their first use, so that a block's loads issue back to back";
  let description = [{
    A kernel converts what it loads where it loads it
    (`kl.load(x_ptr + offs).to(kl.float32)`), so a block that loads several
    arrays before using them alternates loads and conversions. The NVPTX
    backend keeps that order, and ptxas, scheduling under register pressure,
    often leaves the later loads behind the earlier conversions: fewer
    loads in flight per thread. Each element-type cast (an op of
    `CastOpInterface`: `arith.extf`, `arith.truncf`, integer extensions and
    truncations, int/float conversions, bitcasts) of a loaded block, or of
    such a cast, moves to just before its first user in the same block.
    A cast used in another block, or whose first user already follows it,
    stays. Moving a cast changes no value; it keeps the narrow loaded
    value live instead of the wider converted one until the use, so it
    uses no more registers.

    Before (layer norm's last pass over a row):
    ```mlir
    %x = kiln.load %xp, %mask, %zero : ...
    %xf = arith.extf %x : tensor<1024xf16, #l> to tensor<1024xf32, #l>
    %w = kiln.load %wp, %mask : ...
    %wf = arith.extf %w : tensor<1024xf16, #l> to tensor<1024xf32, #l>
    %d = arith.subf %xf, %mean : tensor<1024xf32, #l>
    %y = arith.mulf %d, %wf : tensor<1024xf32, #l>
    ```
    After:
    ```mlir
    %x = kiln.load %xp, %mask, %zero : ...
    %w = kiln.load %wp, %mask : ...
    %xf = arith.extf %x : tensor<1024xf16, #l> to tensor<1024xf32, #l>
    %d = arith.subf %xf, %mean : tensor<1024xf32, #l>
    %wf = arith.extf %w : tensor<1024xf16, #l> to tensor<1024xf32, #l>
    %y = arith.mulf %d, %wf : tensor<1024xf32, #l>
    ```
  }];
}

def KilnGPUDropUnreadTensorMaps : Pass<"kiln-gpu-drop-unread-tensor-maps", "mlir::ModuleOp"> {
  let summary = "Drop the tensor-map parameters of descriptors made in the kernel that no TMA copy reads";
  let description = [{
    kiln-hoist-tensor-maps makes the tensor map of each descriptor made in
    the kernel from its arguments a parameter, before it is known whether
    any of the descriptor's loads will be a TMA copy; the launcher of a
    kernel with such a parameter computes and encodes the map at every
    launch, in Python. A map that no copy reads (no `kiln.tensor_map_box`:
    a copy kernel, a load outside a pipelined loop), named only by loads
    that read through their pointers, is dropped: the loads forget it, the
    parameter goes, and so does its recipe in `kiln.derived_tensor_maps`
    (later parameters renumbered), so the kernel launches as one without
    descriptors does. Host descriptors' maps are the launch's own
    arguments, and stay.

    First, each `scf.if` marked `kiln.tensor_map_version`
    (kiln-tensor-map-pointer-loads: a loop whose loads name maps, and the
    loop as it was) is replaced by its else region where its then region
    came to have no TMA copy (the two versions would be the same code
    twice), or where its loops load more blocks themselves than the else
    region's: a block that kiln-gpu-pipeline-loads could not copy by TMA
    with the others (a B read both as loaded and transposed) is loaded in
    every trip there, and the loop as it was copies it ahead. The maps only
    that version named are then unread, box or not, and go as above. (The
    pass runs right after kiln-gpu-pipeline-loads, before a producer
    warpgroup takes a version's copies.)

    Before:
    ```mlir
    func.func @copy(%x: !kiln.ptr<f16>, %n: i32, %map: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64})
        attributes {kiln.kernel} {
      %a = kiln.load %ptrs, %inside, %zero tensor_map %map[%i, %j] : ...
    // The module's kiln.derived_tensor_maps holds one recipe with arg = 2.
    ```
    After:
    ```mlir
    func.func @copy(%x: !kiln.ptr<f16>, %n: i32) attributes {kiln.kernel} {
      %a = kiln.load %ptrs, %inside, %zero : ...
    // The module has no kiln.derived_tensor_maps.
    ```
  }];
}

#endif // KILN_GPU_TRANSFORMS_PASSES
