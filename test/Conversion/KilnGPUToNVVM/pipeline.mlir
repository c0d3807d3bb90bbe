// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm -kiln-nvvm-erase-needless-barriers | FileCheck %s

#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>

// sm_90a: the pipeline slots follow the scratch (none here), three 4 KiB
// slots for A then three for B. Copies of runs whose contiguity the
// analysis cannot prove (pointers passed in) are 2 bytes: too narrow for
// cp.async, they are loaded (masked to zero) and stored. The wait is
// cp.async.wait_group, a proxy fence (wgmma reads through the async proxy)
// and a barrier; the dot then reads both tiles from the slot without
// storing or synchronizing.
// CHECK: module attributes {{{.*}}kiln_gpu.shared = 24576 : i32
// CHECK-LABEL: llvm.func @slots
// CHECK: @p ld.global.b16
// CHECK: llvm.store %{{.*}}, %{{.*}} : i16, !llvm.ptr<3>
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier0
// CHECK-NOT: nvvm.barrier0
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-2: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// CHECK: wgmma.wait_group.sync.aligned 0;
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @slots(%pa: tensor<64x32x!kiln.ptr<f16>, #bA>, %pb: tensor<32x64x!kiln.ptr<f16>, #bB>, %mask: tensor<64x32xi1, #bA>, %slot: i32, %c: tensor<64x64xf32, #wg>) -> tensor<64x64xf32, #wg> {
  kiln_gpu.async_copy %pa, %slot, %mask {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 3>} : tensor<64x32x!kiln.ptr<f16>, #bA>, tensor<64x32xi1, #bA>
  kiln_gpu.async_copy %pb, %slot {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 12288, slotBytes = 4096, slots = 3>} : tensor<32x64x!kiln.ptr<f16>, #bB>
  kiln_gpu.async_commit_group
  kiln_gpu.async_wait {pending = 1 : i32}
  %a = kiln_gpu.shared_operand %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 3>} : tensor<64x32xf16, #bA>
  %b = kiln_gpu.shared_operand %slot {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 12288, slotBytes = 4096, slots = 3>} : tensor<32x64xf16, #bB>
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #wg>
  return %d : tensor<64x64xf32, #wg>
}
}

// -----

// sm_80: no proxy fence; an operand in registers (B) still goes through
// the scratch, which the slots then follow (the 4 KiB B tile after a
// 4 KiB A tile, rounded up to 1024: slots from 8192).
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
// CHECK: module attributes {{{.*}}kiln_gpu.shared = 16384 : i32
// CHECK-LABEL: llvm.func @mixed
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NOT: fence.proxy
// CHECK: nvvm.barrier0
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: nvvm.ldmatrix
// CHECK: nvvm.mma.sync {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @mixed(%b: tensor<32x64xf16, #bB>, %slot: i32, %c: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  kiln_gpu.async_wait {pending = 0 : i32}
  %a = kiln_gpu.shared_operand %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32xf16, #bA>
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #mma>
  return %d : tensor<64x64xf32, #mma>
}
}

// -----

// Placement by liveness: a layout conversion before the slots' span (the
// copies to the wait that drains them) reuses their bytes, so the kernel
// needs max(17 KiB of scratch: 64 rows of 64 f32 padded by 16 bytes, 8 KiB
// of slots); every thread finishes reading the scratch before the first
// copy overwrites it. The conversion stores the pairs and loads the runs
// of four that its threads hold as vectors.
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
// CHECK: module attributes {{{.*}}kiln_gpu.shared = 17408 : i32
// CHECK-LABEL: llvm.func @reuse
// CHECK-NOT: nvvm.barrier0
// CHECK: llvm.store %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
// CHECK: nvvm.barrier0
// CHECK-NOT: llvm.load %{{.*}} : !llvm.ptr<3>
// CHECK: nvvm.cp.async.wait.group 0
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @reuse(%pa: tensor<64x32x!kiln.ptr<f16>, #bA>, %slot: i32, %x: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #bA> {
  %y = kiln_gpu.convert_layout %x : tensor<64x64xf32, #mma> -> tensor<64x64xf32, #bA>
  kiln_gpu.async_copy %pa, %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32x!kiln.ptr<f16>, #bA>
  kiln_gpu.async_wait {pending = 0 : i32}
  return %y : tensor<64x64xf32, #bA>
}
}

// -----

// TMA copies (sm_90a): the tensor map parameter is passed by value, 128
// bytes aligned to 64, and read in the parameter space. Thread 0 (under a
// branch) initializes the three mbarriers after the slots (two arrivals each) and
// fences them; a barrier. A copy: thread 0 arrives expecting the 4 KiB tile;
// the 8 boxes of A (8 rows of 64 bytes) are one predicated instruction for
// the lanes of the first warp. The wait spins on the phase parity, then a
// barrier; after the loop, a barrier and thread 0 (under a branch) invalidates the
// mbarriers. Shared memory: the dot's scratch (8 KiB, for B in registers),
// then the slots (24 KiB) and the mbarriers (24 bytes).
// CHECK: module attributes {{{.*}}kiln_gpu.shared = 32792 : i32
// CHECK-LABEL: llvm.func @tma
// CHECK-SAME: %{{[^:]*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK: llvm.cond_br
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.barrier0
// CHECK: @p mbarrier.arrive.expect_tx.shared::cta.b64 state, [$1], $2;
// CHECK: @p cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$1], [$2, {$3, $4}], [$5];
// CHECK-NOT: cp.async.bulk.tensor
// CHECK: mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;
// CHECK: nvvm.barrier0
// CHECK: wgmma.mma_async
// CHECK: nvvm.barrier0
// CHECK: llvm.cond_br
// CHECK-COUNT-3: nvvm.mbarrier.inval %{{.*}} : !llvm.ptr<3>
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @tma(%map: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32, kiln.tensor_map_box = array<i64: 8, 32, 64>}, %row: i32, %col: i32, %slot: i32, %phase: i32, %runs: i1, %b: tensor<32x64xf16, #bB>, %c: tensor<64x64xf32, #wg>) -> tensor<64x64xf32, #wg> attributes {kiln.kernel} {
  kiln_gpu.init_tma_barriers {offset = 24576 : i64, count = 3 : i32, arrivals = 2 : i32}
  kiln_gpu.async_tma_copy %map[%row, %col], %slot, %runs {barriers = 24576 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 3>, tile = tensor<64x32xf16>}
  kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 24576 : i64}
  %a = kiln_gpu.shared_operand %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 3>} : tensor<64x32xf16, #bA>
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #wg>
  kiln_gpu.inval_tma_barriers {offset = 24576 : i64, count = 3 : i32}
  return %d : tensor<64x64xf32, #wg>
}
}

// -----

// A block slot (a row the loop reads into registers): each run of two f32
// that a thread holds is one 8-byte cp.async, issued only by the thread
// that owns it (the row is replicated over the 8 row lanes and 4 warps of
// its parent layout), zero-filled where masked off; three 256-byte slots.
// Reading the slot back, every thread loads each of its 16 elements from
// its place in the row.
// CHECK: // -----
// CHECK: module attributes {{{.*}}kiln_gpu.shared = 768 : i32
// CHECK-LABEL: llvm.func @block_slot
// CHECK-COUNT-8: @p cp.async.ca.shared.global [$0], [$1], 8, $2;
// CHECK-NOT: cp.async.ca
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-COUNT-16: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.load
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#row = #kiln_gpu.slice<{dim = 0, parent = #wg}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @block_slot(%base: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %n: i32 {kiln.divisibility = 16 : i32}, %slot: i32) -> tensor<64xf32, #row> {
  %range = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #row>
  %bound = kiln.splat %n : i32 -> tensor<64xi32, #row>
  %mask = arith.cmpi slt, %range, %bound : tensor<64xi32, #row>
  %splat = kiln.splat %base : !kiln.ptr<f32> -> tensor<64x!kiln.ptr<f32>, #row>
  %ptrs = kiln.addptr %splat, %range : tensor<64x!kiln.ptr<f32>, #row>, tensor<64xi32, #row>
  kiln_gpu.async_copy_block %ptrs, %slot, %mask {buffer = #kiln_gpu.block_buffer<offset = 0, slotBytes = 256, slots = 3>} : tensor<64x!kiln.ptr<f32>, #row>, tensor<64xi1, #row>
  kiln_gpu.async_commit_group
  kiln_gpu.async_wait {pending = 0 : i32}
  %row = kiln_gpu.load_block %slot {buffer = #kiln_gpu.block_buffer<offset = 0, slotBytes = 256, slots = 3>} : tensor<64xf32, #row>
  return %row : tensor<64xf32, #row>
}
}

// -----

// The wait of the warp that copies into a slot, for the slot's release
// (kiln-gpu-release-tma-slots): only warp 0's lanes (thread index / 32 is
// 0) spin on the mbarrier's phase, and no barrier follows the wait (the
// next one is the invalidation's).
// CHECK: // -----
// CHECK-LABEL: llvm.func @wait_one_warp
// CHECK: nvvm.mbarrier.init
// CHECK: nvvm.barrier0
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[LANES:.*]] = llvm.mlir.constant(32 : i32) : i32
// CHECK-NEXT: %[[WARP:.*]] = llvm.udiv %[[TID]], %[[LANES]] : i32
// CHECK-NEXT: %[[FIRST:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[WAITS:.*]] = llvm.icmp "eq" %[[WARP]], %[[FIRST]] : i32
// CHECK-NEXT: llvm.cond_br %[[WAITS]], ^[[SPIN:.*]], ^[[AFTER:.*]]
// CHECK: ^[[SPIN]]:
// CHECK-NEXT: mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;
// CHECK-NEXT: llvm.br ^[[AFTER]]
// CHECK: ^[[AFTER]]:
// CHECK-NEXT: nvvm.barrier0
// CHECK: nvvm.mbarrier.inval
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @wait_one_warp(%slot: i32, %parity: i32) attributes {kiln.kernel} {
  kiln_gpu.init_tma_barriers {offset = 0 : i64, count = 3 : i32, arrivals = 8 : i32}
  kiln_gpu.wait_tma_barrier %slot, %parity {barriers = 0 : i64, perThread, warp = 0 : i32}
  kiln_gpu.inval_tma_barriers {offset = 0 : i64, count = 3 : i32}
  return
}
}

// -----

// A slot the threads fill with cp.async: each thread arrives on the slot's
// mbarrier once its copies land (noinc: the mbarrier counts every thread),
// where the predicate holds; the wait for them spins on the phase, then
// fences the copies for wgmma's proxy (perThread: the barrier after it is
// the invalidation's).
// CHECK: // -----
// CHECK-LABEL: llvm.func @thread_copies
// CHECK: nvvm.mbarrier.init
// CHECK: nvvm.barrier0
// CHECK: llvm.cond_br %{{.*}}, ^[[ARRIVE:.*]], ^[[ARRIVED:.*]]
// CHECK: ^[[ARRIVE]]:
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true} : !llvm.ptr<3>
// CHECK-NEXT: llvm.br ^[[ARRIVED]]
// CHECK: ^[[ARRIVED]]:
// CHECK: mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier0
// CHECK: nvvm.mbarrier.inval
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @thread_copies(%slot: i32, %phase: i32, %runs: i1) attributes {kiln.kernel} {
  kiln_gpu.init_tma_barriers {offset = 0 : i64, count = 3 : i32, arrivals = 128 : i32}
  kiln_gpu.async_copy_arrive %slot, %runs {barriers = 0 : i64}
  kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 0 : i64, perThread, threadCopies}
  kiln_gpu.inval_tma_barriers {offset = 0 : i64, count = 3 : i32}
  return
}
}
