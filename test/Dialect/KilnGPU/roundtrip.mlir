// Every kiln_gpu op printed and parsed back: the second parse must read what
// the first print wrote, and the checks hold on the reprinted text.
// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s

#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#b4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// CHECK-LABEL: func.func @convert_layout
// CHECK: kiln_gpu.convert_layout %arg0 : tensor<1024xf32, #{{.*}}> -> tensor<1024xf32, #{{.*}}>
func.func @convert_layout(%a: tensor<1024xf32, #b1>) -> tensor<1024xf32, #b4> {
  %b = kiln_gpu.convert_layout %a : tensor<1024xf32, #b1> -> tensor<1024xf32, #b4>
  return %b : tensor<1024xf32, #b4>
}

// CHECK-LABEL: func.func @async_dot_wait
// CHECK: %[[W:.*]] = kiln_gpu.async_dot_wait %arg0 : tensor<64x64xf32, #{{.*}}>
// CHECK: return %[[W]]
func.func @async_dot_wait(%acc: tensor<64x64xf32, #b>) -> tensor<64x64xf32, #b> {
  %d = kiln_gpu.async_dot_wait %acc : tensor<64x64xf32, #b>
  return %d : tensor<64x64xf32, #b>
}

// CHECK-LABEL: func.func @async_copies
// CHECK: kiln_gpu.async_copy %arg0, %arg1, %arg2 {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32x!kiln.ptr<f16>, #{{.*}}>, tensor<64x32xi1, #{{.*}}>
// CHECK: kiln_gpu.async_copy %arg0, %arg1 {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 8192, slotBytes = 4096, slots = 2>} : tensor<64x32x!kiln.ptr<f16>, #{{.*}}>
// CHECK-NEXT: kiln_gpu.async_commit_group
// CHECK-NEXT: kiln_gpu.async_wait {pending = 1 : i32}
// CHECK-NEXT: %[[A:.*]] = kiln_gpu.shared_operand %arg1 {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32xf16, #{{.*}}>
// CHECK-NEXT: kiln.dot %[[A]], %arg3, %arg4
func.func @async_copies(%p: tensor<64x32x!kiln.ptr<f16>, #b>, %s: i32, %m: tensor<64x32xi1, #b>, %bv: tensor<32x64xf16, #b>, %c: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  kiln_gpu.async_copy %p, %s, %m {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32x!kiln.ptr<f16>, #b>, tensor<64x32xi1, #b>
  kiln_gpu.async_copy %p, %s {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 8192, slotBytes = 4096, slots = 2>} : tensor<64x32x!kiln.ptr<f16>, #b>
  kiln_gpu.async_commit_group
  kiln_gpu.async_wait {pending = 1 : i32}
  %a = kiln_gpu.shared_operand %s {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32xf16, #b>
  %d = kiln.dot %a, %bv, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #b> * tensor<32x64xf16, #b> -> tensor<64x64xf32, #mma>
  return %d : tensor<64x64xf32, #mma>
}

// -----

// A block slot: copied into, then read back.
// CHECK-LABEL: func.func @block_slot
// CHECK: kiln_gpu.async_copy_block %arg0, %arg1, %arg2 {buffer = #kiln_gpu.block_buffer<offset = 16384, slotBytes = 256, slots = 3>} : tensor<64x!kiln.ptr<f32>, #{{.*}}>, tensor<64xi1, #{{.*}}>
// CHECK-NEXT: kiln_gpu.async_copy_block %arg0, %arg1 {buffer = #kiln_gpu.block_buffer<offset = 17152, slotBytes = 256, slots = 3>} : tensor<64x!kiln.ptr<f32>, #{{.*}}>
// CHECK-NEXT: kiln_gpu.async_commit_group
// CHECK-NEXT: kiln_gpu.async_wait {pending = 0 : i32}
// CHECK-NEXT: kiln_gpu.load_block %arg1 {buffer = #kiln_gpu.block_buffer<offset = 16384, slotBytes = 256, slots = 3>} : tensor<64xf32, #{{.*}}>
#row = #kiln_gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
func.func @block_slot(%p: tensor<64x!kiln.ptr<f32>, #row>, %s: i32, %m: tensor<64xi1, #row>) -> tensor<64xf32, #row> {
  kiln_gpu.async_copy_block %p, %s, %m {buffer = #kiln_gpu.block_buffer<offset = 16384, slotBytes = 256, slots = 3>} : tensor<64x!kiln.ptr<f32>, #row>, tensor<64xi1, #row>
  kiln_gpu.async_copy_block %p, %s {buffer = #kiln_gpu.block_buffer<offset = 17152, slotBytes = 256, slots = 3>} : tensor<64x!kiln.ptr<f32>, #row>
  kiln_gpu.async_commit_group
  kiln_gpu.async_wait {pending = 0 : i32}
  %r = kiln_gpu.load_block %s {buffer = #kiln_gpu.block_buffer<offset = 16384, slotBytes = 256, slots = 3>} : tensor<64xf32, #row>
  return %r : tensor<64xf32, #row>
}

// -----

// The TMA family: initialize the slots' barriers, copy, wait, invalidate.
// CHECK-LABEL: func.func @tma
// CHECK: kiln_gpu.init_tma_barriers {arrivals = 1 : i32, count = 2 : i32, offset = 8192 : i64}
// CHECK-NEXT: kiln_gpu.async_tma_copy %arg0[%arg1, %arg2], %arg3, %arg4 {barriers = 8192 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>}
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %arg3, %arg5 {barriers = 8192 : i64}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 2 : i32, offset = 8192 : i64}
func.func @tma(%map: !kiln.ptr<i8, 0>, %i: i32, %j: i32, %s: i32, %p: i1, %phase: i32) {
  kiln_gpu.init_tma_barriers {offset = 8192 : i64, count = 2 : i32, arrivals = 1 : i32}
  kiln_gpu.async_tma_copy %map[%i, %j], %s, %p {barriers = 8192 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>}
  kiln_gpu.wait_tma_barrier %s, %phase {barriers = 8192 : i64}
  kiln_gpu.inval_tma_barriers {offset = 8192 : i64, count = 2 : i32}
  return
}

// -----

// The consumer warpgroups' turns (two warpgroups: 8 warps).
// CHECK-LABEL: func.func @turns
// CHECK-NEXT: kiln_gpu.begin_turns
// CHECK-NEXT: kiln_gpu.await_turn
// CHECK-NEXT: kiln_gpu.pass_turn
module attributes {kiln_gpu.num_warps = 8 : i32} {
  func.func @turns() {
    kiln_gpu.begin_turns
    kiln_gpu.await_turn
    kiln_gpu.pass_turn
    return
  }
}

// -----

// A warp-specialized kernel: the barriers initialized for every warp, the
// producer region and its copies by warp 8, the per-thread waits, and the
// slot's release.
// CHECK-LABEL: func.func @warp_specialized
// CHECK: kiln_gpu.init_tma_barriers {allWarps, arrivals = 8 : i32, count = 2 : i32, offset = 8192 : i64}
// CHECK-NEXT: kiln_gpu.producer attributes {consumerRegisters = 232 : i32, producerRegisters = 40 : i32, warps = 4 : i32} {
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %arg3, %arg5 {barriers = 8192 : i64, perThread}
// CHECK-NEXT: kiln_gpu.async_tma_copy %arg0[%arg1, %arg2], %arg3, %arg4 {barriers = 8192 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>, warp = 8 : i32}
// CHECK-NEXT: }
// CHECK-NEXT: kiln_gpu.release_slot %arg3 {barriers = 8192 : i64}
func.func @warp_specialized(%map: !kiln.ptr<i8, 0>, %i: i32, %j: i32, %s: i32, %p: i1, %phase: i32) {
  kiln_gpu.init_tma_barriers {offset = 8192 : i64, count = 2 : i32, arrivals = 8 : i32, allWarps}
  kiln_gpu.producer attributes {warps = 4 : i32, producerRegisters = 40 : i32, consumerRegisters = 232 : i32} {
    kiln_gpu.wait_tma_barrier %s, %phase {barriers = 8192 : i64, perThread}
    kiln_gpu.async_tma_copy %map[%i, %j], %s, %p {barriers = 8192 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>, warp = 8 : i32}
  }
  kiln_gpu.release_slot %s {barriers = 8192 : i64}
  return
}

// The wait of the warp that issues a slot's copies, for the slot's release.
// CHECK-LABEL: func.func @wait_one_warp
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %arg0, %arg1 {barriers = 8208 : i64, perThread, warp = 0 : i32}
func.func @wait_one_warp(%s: i32, %parity: i32) {
  kiln_gpu.wait_tma_barrier %s, %parity {barriers = 8208 : i64, perThread, warp = 0 : i32}
  return
}

// The threads' own copies into a slot, arriving on its mbarrier, and the
// wait for them.
// CHECK-LABEL: func.func @thread_copies
// CHECK-NEXT: kiln_gpu.async_copy_arrive %arg0, %arg2 {barriers = 8192 : i64}
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %arg0, %arg1 {barriers = 8192 : i64, perThread, threadCopies}
func.func @thread_copies(%s: i32, %phase: i32, %runs: i1) {
  kiln_gpu.async_copy_arrive %s, %runs {barriers = 8192 : i64}
  kiln_gpu.wait_tma_barrier %s, %phase {barriers = 8192 : i64, perThread, threadCopies}
  return
}
