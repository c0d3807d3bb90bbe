// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory | FileCheck %s

// No op needs shared memory: 0 bytes, no slots.
// CHECK: module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.shared = 0 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>, kiln_gpu.threads_per_warp = 32 : i32}
// CHECK-LABEL: func.func @none
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @none(%x: tensor<64x64xf32, #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>>) {
  return
}
}

// -----

// A layout conversion alone: its scratch, 64 rows of 64 f32 padded by 16
// bytes.
// CHECK: // -----
// CHECK: module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.shared = 17408 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>, kiln_gpu.threads_per_warp = 32 : i32}
// CHECK-LABEL: func.func @conversion
// CHECK-NOT: kiln.debug_barrier
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @conversion(%x: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #bA> {
  %y = kiln_gpu.convert_layout %x : tensor<64x64xf32, #mma> -> tensor<64x64xf32, #bA>
  return %y : tensor<64x64xf32, #bA>
}
}

// -----

// Slots and no scratch: the slots start at 0, three 4 KiB slots for A then
// three for B.
// CHECK: // -----
// CHECK: module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.pipeline_offset = 0 : i32, kiln_gpu.shared = 24576 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32}
// CHECK-LABEL: func.func @slots
// CHECK-NOT: kiln.debug_barrier
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @slots(%pa: tensor<64x32x!kiln.ptr<f16>, #bA>, %pb: tensor<32x64x!kiln.ptr<f16>, #bB>, %slot: i32, %c: tensor<64x64xf32, #wg>) -> tensor<64x64xf32, #wg> {
  kiln_gpu.async_copy %pa, %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 3>} : tensor<64x32x!kiln.ptr<f16>, #bA>
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

// A dot that reads a slot uses the scratch while the slots are live (for
// B, in registers): the slots follow it, rounded up to 1024 bytes.
// CHECK: // -----
// CHECK: module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.pipeline_offset = 8192 : i32, kiln_gpu.shared = 16384 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>, kiln_gpu.threads_per_warp = 32 : i32}
// CHECK-LABEL: func.func @after_scratch
// CHECK-NOT: kiln.debug_barrier
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @after_scratch(%b: tensor<32x64xf16, #bB>, %slot: i32, %c: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  kiln_gpu.async_wait {pending = 0 : i32}
  %a = kiln_gpu.shared_operand %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32xf16, #bA>
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #mma>
  return %d : tensor<64x64xf32, #mma>
}
}

// -----

// A layout conversion before the slots' span reuses their bytes: the
// kernel needs the larger of the two, and every thread finishes reading
// the scratch before the span's first copy overwrites it. The conversion
// after the span needs no barrier of its own: the drained wait has one.
// CHECK: // -----
// CHECK: module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.pipeline_offset = 0 : i32, kiln_gpu.shared = 17408 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>, kiln_gpu.threads_per_warp = 32 : i32}
// CHECK-LABEL: func.func @reuse
// CHECK: kiln_gpu.convert_layout
// CHECK-NEXT: kiln.debug_barrier
// CHECK-NEXT: kiln_gpu.async_copy
// CHECK-NEXT: kiln_gpu.async_wait
// CHECK-NEXT: kiln_gpu.convert_layout
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @reuse(%pa: tensor<64x32x!kiln.ptr<f16>, #bA>, %slot: i32, %x: tensor<64x64xf32, #mma>) -> (tensor<64x64xf32, #bA>, tensor<64x64xf32, #mma>) {
  %y = kiln_gpu.convert_layout %x : tensor<64x64xf32, #mma> -> tensor<64x64xf32, #bA>
  kiln_gpu.async_copy %pa, %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32x!kiln.ptr<f16>, #bA>
  kiln_gpu.async_wait {pending = 0 : i32}
  %z = kiln_gpu.convert_layout %y : tensor<64x64xf32, #bA> -> tensor<64x64xf32, #mma>
  return %y, %z : tensor<64x64xf32, #bA>, tensor<64x64xf32, #mma>
}
}

// -----

// The same kernel without the conversion before the span: only scalar code
// precedes the first copy, so no thread can still be reading the scratch
// there, and no barrier goes before it (a warp-specialized kernel's producer
// warps branch off after these ops, and would never meet one).
// CHECK: // -----
// CHECK-LABEL: func.func @opens_kernel
// CHECK-NEXT: arith.addi
// CHECK-NEXT: kiln_gpu.async_copy
// CHECK-NOT: kiln.debug_barrier
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @opens_kernel(%pa: tensor<64x32x!kiln.ptr<f16>, #bA>, %slot: i32, %x: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #bA> {
  %next = arith.addi %slot, %slot : i32
  kiln_gpu.async_copy %pa, %next {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32x!kiln.ptr<f16>, #bA>
  kiln_gpu.async_wait {pending = 0 : i32}
  %z = kiln_gpu.convert_layout %x : tensor<64x64xf32, #mma> -> tensor<64x64xf32, #bA>
  return %z : tensor<64x64xf32, #bA>
}
}

// -----

// A block copied once by cp.async and waited for (pending 0) before a TMA
// loop: the TMA copies are still in flight until their mbarriers are
// invalidated, so the loop is inside the span that the first copy opened,
// and its own copies open none (no barrier before them every iteration).
// CHECK: // -----
// CHECK-LABEL: func.func @tma_loop_after_block_copied_once
// CHECK: kiln_gpu.convert_layout
// CHECK-NEXT: kiln.debug_barrier
// CHECK-NEXT: kiln_gpu.async_copy
// CHECK-NOT: kiln.debug_barrier
// CHECK: kiln_gpu.inval_tma_barriers
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @tma_loop_after_block_copied_once(%map: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32, kiln.tensor_map_box = array<i64: 8, 32, 64>}, %pa: tensor<64x32x!kiln.ptr<f16>, #bA>, %x: tensor<64x64xf32, #mma>, %row: i32, %n: i32, %runs: i1) -> tensor<64x64xf32, #bA> attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %y = kiln_gpu.convert_layout %x : tensor<64x64xf32, #mma> -> tensor<64x64xf32, #bA>
  kiln_gpu.async_copy %pa, %c0 {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 1>} : tensor<64x32x!kiln.ptr<f16>, #bA>
  kiln_gpu.async_commit_group
  kiln_gpu.init_tma_barriers {offset = 12288 : i64, count = 2 : i32, arrivals = 1 : i32}
  kiln_gpu.async_tma_copy %map[%row, %c0], %c0, %runs {barriers = 12288 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 4096, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>}
  kiln_gpu.async_wait {pending = 0 : i32}
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%slot = %c0, %phase = %c0) -> (i32, i32) : i32 {
    kiln_gpu.wait_tma_barrier %slot, %phase {barriers = 12288 : i64}
    kiln_gpu.async_tma_copy %map[%row, %c0], %slot, %runs {barriers = 12288 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 4096, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>}
    scf.yield %slot, %phase : i32, i32
  }
  kiln_gpu.inval_tma_barriers {offset = 12288 : i64, count = 2 : i32}
  return %y : tensor<64x64xf32, #bA>
}
}

// -----

// A slot filled and drained, then a layout conversion, then the slot read
// by a dot without another copy (a block copied once for two loops): the
// slot stays live through the conversion, whose scratch therefore goes
// below it (17 KiB, a multiple of 1024 bytes).
// CHECK: // -----
// CHECK: module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.pipeline_offset = 17408 : i32, kiln_gpu.shared = 21504 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>, kiln_gpu.threads_per_warp = 32 : i32}
// CHECK-LABEL: func.func @read_after_drain
// CHECK-NOT: kiln.debug_barrier
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @read_after_drain(%pa: tensor<64x32x!kiln.ptr<f16>, #bA>, %b: tensor<32x64xf16, #bB>, %slot: i32, %c: tensor<64x64xf32, #mma>) -> (tensor<64x64xf32, #bA>, tensor<64x64xf32, #mma>) {
  kiln_gpu.async_copy %pa, %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 1>} : tensor<64x32x!kiln.ptr<f16>, #bA>
  kiln_gpu.async_wait {pending = 0 : i32}
  %y = kiln_gpu.convert_layout %c : tensor<64x64xf32, #mma> -> tensor<64x64xf32, #bA>
  %a = kiln_gpu.shared_operand %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 1>} : tensor<64x32xf16, #bA>
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #mma>
  return %y, %d : tensor<64x64xf32, #bA>, tensor<64x64xf32, #mma>
}
}

// -----

// The same with the slot filled again before the dot reads it: the first
// span ends at its drain, and the conversion between reuses the slots'
// bytes (a barrier before the second copy: every thread is done reading
// the scratch).
// CHECK: // -----
// CHECK: module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.pipeline_offset = 8192 : i32, kiln_gpu.shared = 17408 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>, kiln_gpu.threads_per_warp = 32 : i32}
// CHECK-LABEL: func.func @filled_again
// CHECK: kiln_gpu.convert_layout
// CHECK-NEXT: kiln.debug_barrier
// CHECK-NEXT: kiln_gpu.async_copy
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @filled_again(%pa: tensor<64x32x!kiln.ptr<f16>, #bA>, %b: tensor<32x64xf16, #bB>, %slot: i32, %c: tensor<64x64xf32, #mma>) -> (tensor<64x64xf32, #bA>, tensor<64x64xf32, #mma>) {
  kiln_gpu.async_copy %pa, %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 1>} : tensor<64x32x!kiln.ptr<f16>, #bA>
  kiln_gpu.async_wait {pending = 0 : i32}
  %y = kiln_gpu.convert_layout %c : tensor<64x64xf32, #mma> -> tensor<64x64xf32, #bA>
  kiln_gpu.async_copy %pa, %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 1>} : tensor<64x32x!kiln.ptr<f16>, #bA>
  kiln_gpu.async_wait {pending = 0 : i32}
  %a = kiln_gpu.shared_operand %slot {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 1>} : tensor<64x32xf16, #bA>
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #mma>
  return %y, %d : tensor<64x64xf32, #bA>, tensor<64x64xf32, #mma>
}
}
