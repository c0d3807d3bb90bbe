// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{expected sizePerThread, threadsPerWarp, warpsPerCTA and order of the same rank, got 1, 1, 1 and 2}}
func.func @rank(%a: tensor<64xf32, #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0, 1]}>>) {
  return
}

// -----

// expected-error @+1 {{expected order to be a permutation of [0, 2)}}
func.func @order(%a: tensor<8x64xf32, #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 1]}>>) {
  return
}

// -----

// expected-error @+1 {{expected powers of two, got 3}}
func.func @power_of_two(%a: tensor<64xf32, #kiln_gpu.blocked<{sizePerThread = [3], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>>) {
  return
}

// -----

// expected-error @+1 {{expected operand 0 (A) or 1 (B), got 2}}
func.func @buffer_operand() attributes {buffer = #kiln_gpu.operand_buffer<operand = 2, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 3>} {
  return
}

// -----

// The tensor cores are an enum: mma or wgmma.
// expected-error @+3 {{expected ::mlir::kiln::gpu::TensorCores to be one of: mma, wgmma}}
// expected-error @+2 {{failed to parse KilnGPU_TensorCoresAttr parameter 'value'}}
// expected-error @+1 {{failed to parse KilnGPU_OperandBufferAttr parameter 'tensorCores'}}
func.func @buffer_kind() attributes {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<fma>, offset = 0, slotBytes = 4096, slots = 3>} {
  return
}

// -----

// expected-error @+1 {{expected offset and slotBytes to be multiples of 1024, got 512 and 4096}}
func.func @buffer_alignment() attributes {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 512, slotBytes = 4096, slots = 3>} {
  return
}

// -----

// expected-error @+1 {{expected at least one slot}}
func.func @buffer_slots() attributes {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 0>} {
  return
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
func.func @copy_mask(%p: tensor<64x32x!kiln.ptr<f16>, #b>, %m: tensor<32x32xi1, #b>, %s: i32) {
  // expected-error @+1 {{expected the mask to have the pointers' shape}}
  kiln_gpu.async_copy %p, %s, %m {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32x!kiln.ptr<f16>, #b>, tensor<32x32xi1, #b>
  return
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
func.func @copy_type(%p: tensor<64x32x!kiln.ptr<f64>, #b>, %s: i32) {
  // expected-error @+1 {{expected f16, bf16 or i8 elements, got 'f64'}}
  kiln_gpu.async_copy %p, %s {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 16384, slots = 2>} : tensor<64x32x!kiln.ptr<f64>, #b>
  return
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
func.func @copy_n_major_i8_b(%p: tensor<32x64x!kiln.ptr<i8>, #b>, %s: i32) {
  // expected-error @+1 {{expected f16 or bf16 elements for an N-major operand B, got 'i8'}}
  kiln_gpu.async_copy %p, %s {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 2048, slots = 2>} : tensor<32x64x!kiln.ptr<i8>, #b>
  return
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
func.func @copy_k_major_a(%p: tensor<32x64x!kiln.ptr<i8>, #b>, %s: i32) {
  // expected-error @+1 {{expected a K-major slot for operand B only}}
  kiln_gpu.async_copy %p, %s {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 2048, slots = 2, kMajor = true>} : tensor<32x64x!kiln.ptr<i8>, #b>
  return
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
func.func @copy_rank(%p: tensor<2x64x32x!kiln.ptr<f16>, #kiln_gpu.blocked<{sizePerThread = [1, 1, 8], threadsPerWarp = [1, 8, 4], warpsPerCTA = [1, 4, 1], order = [2, 1, 0]}>>, %s: i32) {
  // expected-error @+1 {{expected a 2-D block, got rank 3}}
  kiln_gpu.async_copy %p, %s {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 8192, slots = 2>} : tensor<2x64x32x!kiln.ptr<f16>, #kiln_gpu.blocked<{sizePerThread = [1, 1, 8], threadsPerWarp = [1, 8, 4], warpsPerCTA = [1, 4, 1], order = [2, 1, 0]}>>
  return
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
func.func @copy_fits(%p: tensor<64x32x!kiln.ptr<f16>, #b>, %s: i32) {
  // expected-error @+1 {{expected the 4096-byte tile to fit in a slot of 2048 bytes}}
  kiln_gpu.async_copy %p, %s {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 2048, slots = 2>} : tensor<64x32x!kiln.ptr<f16>, #b>
  return
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
func.func @shared_user(%s: i32) -> tensor<64x32xf16, #b> {
  // expected-error @+1 {{expected every user to be a kiln.dot reading the block as operand A}}
  %a = kiln_gpu.shared_operand %s {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32xf16, #b>
  return %a : tensor<64x32xf16, #b>
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
func.func @shared_type(%s: i32) {
  // expected-error @+1 {{expected f16, bf16 or i8 elements, got 'f32'}}
  %a = kiln_gpu.shared_operand %s {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 8192, slots = 2>} : tensor<64x32xf32, #b>
  return
}

// -----

func.func @tma_barriers_offset() {
  // expected-error @+1 {{expected an 8-byte aligned offset, got 12}}
  kiln_gpu.init_tma_barriers {offset = 12 : i64, count = 2 : i32, arrivals = 1 : i32}
  return
}

// -----

func.func @tma_copy_coordinates(%map: !kiln.ptr<i8, 0>, %i: i32, %s: i32, %p: i1) {
  // expected-error @+1 {{expected a 2-D tile and two coordinates}}
  kiln_gpu.async_tma_copy %map[%i], %s, %p {barriers = 8192 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>}
  return
}

// -----

func.func @tma_copy_barriers(%map: !kiln.ptr<i8, 0>, %i: i32, %s: i32, %p: i1) {
  // expected-error @+1 {{expected 8-byte aligned barriers, got offset 8196}}
  kiln_gpu.async_tma_copy %map[%i, %i], %s, %p {barriers = 8196 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>}
  return
}

// -----

func.func @tma_copy_mma_slot(%map: !kiln.ptr<i8, 0>, %i: i32, %s: i32, %p: i1) {
  // expected-error @+1 {{expected a wgmma slot whose rows the TMA unit can write (rows of 32, 64 or 128 bytes per block, at most 256 rows a box), got 'tensor<64x32xf16>'}}
  kiln_gpu.async_tma_copy %map[%i, %i], %s, %p {barriers = 8192 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>}
  return
}

// -----

func.func @tma_copy_slot_size(%map: !kiln.ptr<i8, 0>, %i: i32, %s: i32, %p: i1) {
  // expected-error @+1 {{expected the 4096-byte tile to fit in a slot of 2048 bytes}}
  kiln_gpu.async_tma_copy %map[%i, %i], %s, %p {barriers = 8192 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 2048, slots = 2>, tile = tensor<64x32xf16>}
  return
}

// -----

// The target is a typed attribute naming an NVIDIA chip.
// expected-error @+1 {{expected an NVIDIA chip such as sm_80 or sm_90a, got 'gfx90a'}}
module attributes {kiln_gpu.target = #kiln_gpu.target<gfx90a>} {
}

// -----

// expected-error @+1 {{expected kiln_gpu.target to be a #kiln_gpu.target<...>, got "sm_90a"}}
module attributes {kiln_gpu.target = "sm_90a"} {
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
func.func @copy_transposed_a(%p: tensor<64x32x!kiln.ptr<f16>, #b>, %s: i32) {
  // expected-error @+1 {{expected a K-major slot of operand B for transposed pointers}}
  kiln_gpu.async_copy %p, %s {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 2>, transposed} : tensor<64x32x!kiln.ptr<f16>, #b>
  return
}

// -----

func.func @wait_tma_unaligned(%s: i32, %phase: i32) {
  // expected-error @+1 {{expected 8-byte aligned barriers, got offset 8196}}
  kiln_gpu.wait_tma_barrier %s, %phase {barriers = 8196 : i64}
  return
}

// -----

func.func @wait_tma_warp_not_per_thread(%s: i32, %phase: i32) {
  // expected-error @+1 {{expected 'perThread' with 'warp': only a per-thread wait can leave the other warps out}}
  kiln_gpu.wait_tma_barrier %s, %phase {barriers = 8192 : i64, warp = 0 : i32}
  return
}

// -----

func.func @release_unaligned(%s: i32) {
  // expected-error @+1 {{expected 8-byte aligned barriers, got offset 8196}}
  kiln_gpu.release_slot %s {barriers = 8196 : i64}
  return
}

// -----

func.func @wait_thread_copies_one_warp(%s: i32, %phase: i32) {
  // expected-error @+1 {{expected no 'warp' with 'threadCopies': every thread waits for the copies of every thread}}
  kiln_gpu.wait_tma_barrier %s, %phase {barriers = 8192 : i64, perThread, threadCopies, warp = 0 : i32}
  return
}

// -----

func.func @copy_arrive_unaligned(%s: i32, %runs: i1) {
  // expected-error @+1 {{expected 8-byte aligned barriers, got offset 8196}}
  kiln_gpu.async_copy_arrive %s, %runs {barriers = 8196 : i64}
  return
}

// -----

func.func @producer_nested(%c: i1) {
  scf.if %c {
    // expected-error @+1 {{expected to be directly in a kernel function}}
    kiln_gpu.producer attributes {warps = 4 : i32} {
    }
  }
  return
}

// -----

func.func @producer_registers_of_one_warp() {
  // expected-error @+1 {{expected whole warpgroups of producer warps to set their registers, got 1 warps}}
  kiln_gpu.producer attributes {warps = 1 : i32, producerRegisters = 40 : i32} {
  }
  return
}

// -----

func.func @producer_registers() {
  // expected-error @+1 {{expected a register count that is a multiple of 8 from 24 to 256, got 20}}
  kiln_gpu.producer attributes {warps = 4 : i32, producerRegisters = 20 : i32, consumerRegisters = 232 : i32} {
  }
  return
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
func.func @producer_block(%x: f32) {
  // expected-error @+1 {{expected only scalar code in the producer region, no blocks}}
  kiln_gpu.producer attributes {warps = 4 : i32} {
    %b = kiln.splat %x : f32 -> tensor<128xf32, #b>
  }
  return
}

// -----

// The turn ops share one verifier.
module attributes {kiln_gpu.num_warps = 4 : i32} {
  func.func @turns_of_one_warpgroup() {
    // expected-error @+1 {{expected a kernel of two or more whole warpgroups (kiln_gpu.num_warps a multiple of 4, at least 8), got 4 warps}}
    kiln_gpu.await_turn
    return
  }
}

// -----

// expected-error @+1 {{expected offset and slotBytes to be multiples of 16, got 8 and 256}}
func.func @block_buffer_alignment() attributes {buffer = #kiln_gpu.block_buffer<offset = 8, slotBytes = 256, slots = 3>} {
  return
}

// -----

// expected-error @+1 {{expected at least one slot}}
func.func @block_buffer_slots() attributes {buffer = #kiln_gpu.block_buffer<offset = 0, slotBytes = 256, slots = 0>} {
  return
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
func.func @block_copy_mask(%p: tensor<64x!kiln.ptr<f32>, #b>, %m: tensor<32xi1, #b>, %s: i32) {
  // expected-error @+1 {{expected the mask to have the pointers' shape}}
  kiln_gpu.async_copy_block %p, %s, %m {buffer = #kiln_gpu.block_buffer<offset = 0, slotBytes = 256, slots = 3>} : tensor<64x!kiln.ptr<f32>, #b>, tensor<32xi1, #b>
  return
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
func.func @block_copy_type(%p: tensor<64x!kiln.ptr<f16>, #b>, %s: i32) {
  // expected-error @+1 {{expected 32- or 64-bit elements, got 'f16'}}
  kiln_gpu.async_copy_block %p, %s {buffer = #kiln_gpu.block_buffer<offset = 0, slotBytes = 256, slots = 3>} : tensor<64x!kiln.ptr<f16>, #b>
  return
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
func.func @block_load_size(%s: i32) -> tensor<128xf32, #b> {
  // expected-error @+1 {{expected the block (512 bytes) to fit a slot of 256 bytes}}
  %r = kiln_gpu.load_block %s {buffer = #kiln_gpu.block_buffer<offset = 0, slotBytes = 256, slots = 3>} : tensor<128xf32, #b>
  return %r : tensor<128xf32, #b>
}
