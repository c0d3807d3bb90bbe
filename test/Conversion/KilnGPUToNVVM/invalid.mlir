// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm -verify-diagnostics

// One case per diagnostic of the NVIDIA lowering that IR passing the
// verifiers can reach. Not here:
// - "expected a tile the TMA unit can copy into its slot" (async_tma_copy):
//   the op's verifier rejects the same tiles first (getTmaBox).
// - "found no partial result for a result element" (reduce): the check before
//   it puts the result in the slice of the operand's layout, where every
//   result element has a partial result.
// - "cannot find a thread's source element" (broadcast): within one blocked
//   layout, which the check before it ensures, every thread holds the source
//   of each of its result elements.
// - a cache modifier the access does not take: the kiln load and store
//   verifiers reject it on every target (test/Dialect/Kiln/invalid.mlir).
// - notifyMatchFailure reasons ("expected thread layouts", "result type does
//   not convert", ...) never reach the user, who sees "failed to legalize".

// 8-bit float bytes reach the lowering only on wgmma: elsewhere
// kiln-gpu-accelerate-matmul decodes them to f16 first.
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @fp8_on_mma(%a: tensor<64x32xi8, #bA>, %b: tensor<32x64xi8, #bA>, %c: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  // expected-error @+2 {{expected 8-bit float operands only on wgmma (kiln-gpu-accelerate-matmul decodes the others)}}
  // expected-error @+1 {{failed to legalize operation 'kiln.dot'}}
  %d = kiln.dot %a, %b, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e4m3>, inputPrecision = #kiln.precision<ieee>, maxNumImpreciseAcc = 32 : i32} : tensor<64x32xi8, #bA> * tensor<32x64xi8, #bA> -> tensor<64x64xf32, #mma>
  return %d : tensor<64x64xf32, #mma>
}
}

// -----

// A dot whose result layout no tensor-core instruction computes falls back to
// FMAs in registers, which cannot read operands from pipeline slots: only
// tensor cores read shared memory directly.
#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @slot_without_tensor_cores(%s: i32, %b: tensor<32x64xf16, #b>, %c: tensor<64x64xf32, #acc>) -> tensor<64x64xf32, #acc> {
  %a = kiln_gpu.shared_operand %s {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>} : tensor<64x32xf16, #b>
  // expected-error @+2 {{expected tensor cores to read operands from pipeline slots}}
  // expected-error @+1 {{failed to legalize operation 'kiln.dot'}}
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #b> * tensor<32x64xf16, #b> -> tensor<64x64xf32, #acc>
  return %d : tensor<64x64xf32, #acc>
}
}

// -----

// The FMA lowering computes the result in a blocked layout.
#b = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#p = #kiln_gpu.blocked<{sizePerThread = [1, 1, 1], threadsPerWarp = [1, 4, 8], warpsPerCTA = [1, 4, 1], order = [2, 1, 0]}>
#s = #kiln_gpu.slice<{dim = 0, parent = #p}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @fma_slice_result(%a: tensor<16x16xf64, #b>, %bb: tensor<16x16xf64, #b>, %c: tensor<16x16xf64, #s>) -> tensor<16x16xf64, #s> {
  // expected-error @+2 {{expected a blocked result layout}}
  // expected-error @+1 {{failed to legalize operation 'kiln.dot'}}
  %d = kiln.dot %a, %bb, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x16xf64, #b> * tensor<16x16xf64, #b> -> tensor<16x16xf64, #s>
  return %d : tensor<16x16xf64, #s>
}
}

// -----

// Only accumulators (f32 or i32) wait for asynchronous dots.
#b = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @dot_wait_f16(%acc: tensor<64x64xf16, #b>) -> tensor<64x64xf16, #b> {
  // expected-error @+2 {{expected f32 or i32 accumulators}}
  // expected-error @+1 {{failed to legalize operation 'kiln_gpu.async_dot_wait'}}
  %d = kiln_gpu.async_dot_wait %acc : tensor<64x64xf16, #b>
  return %d : tensor<64x64xf16, #b>
}
}

// -----

// Inline assembly runs per thread on the elements it holds: every operand in
// the result's layout.
#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @asm_layouts(%x: tensor<512xi32, #b1>, %y: tensor<512xi32, #b4>) -> tensor<512xi32, #b1> {
  // expected-error @+2 {{expected operands and results of one layout}}
  // expected-error @+1 {{failed to legalize operation 'kiln.elementwise_inline_asm'}}
  %r = kiln.elementwise_inline_asm "add.s32 $0, $1, $2;" "=r,r,r"(%x, %y) {packed_element = 1 : i32, pure = true} : (tensor<512xi32, #b1>, tensor<512xi32, #b4>) -> tensor<512xi32, #b1>
  return %r : tensor<512xi32, #b1>
}
}

// -----

// Shape ops need the layouts kiln-gpu-match-shape-layouts gives them.
#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @expand_dims_layout(%x: tensor<32xi32, #b1>) -> tensor<1x32xi32, #b2> {
  // expected-error @+2 {{needs its operand in the slice of the result's layout (kiln-gpu-match-shape-layouts)}}
  // expected-error @+1 {{failed to legalize operation 'kiln.expand_dims'}}
  %y = kiln.expand_dims %x {axis = 0 : i32} : tensor<32xi32, #b1> -> tensor<1x32xi32, #b2>
  return %y : tensor<1x32xi32, #b2>
}
}

// -----

#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#b2t = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @broadcast_layout(%x: tensor<1x32xi32, #b2t>) -> tensor<16x32xi32, #b2> {
  // expected-error @+2 {{needs its operand in the result's layout (kiln-gpu-match-shape-layouts)}}
  // expected-error @+1 {{failed to legalize operation 'kiln.broadcast'}}
  %y = kiln.broadcast %x : tensor<1x32xi32, #b2t> -> tensor<16x32xi32, #b2>
  return %y : tensor<16x32xi32, #b2>
}
}

// -----

#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#b2t = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @gather_layout(%src: tensor<16x32xf32, #b2>, %idx: tensor<16x32xi32, #b2t>) -> tensor<16x32xf32, #b2> {
  // expected-error @+2 {{expected the index in the result's layout}}
  // expected-error @+1 {{failed to legalize operation 'kiln.gather'}}
  %g = kiln.gather %src[%idx] {axis = 0 : i32} : (tensor<16x32xf32, #b2>, tensor<16x32xi32, #b2t>) -> tensor<16x32xf32, #b2>
  return %g : tensor<16x32xf32, #b2>
}
}

// -----

// A reduction's operands share a layout, and its result is their slice.
#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @reduce_layouts(%x: tensor<512xf32, #b1>, %i: tensor<512xi32, #b4>) -> (f32, i32) {
  // expected-error @+2 {{'kiln.reduce' op expected all operands in one layout}}
  // expected-error @+1 {{failed to legalize operation 'kiln.reduce'}}
  %r:2 = kiln.reduce(%x, %i) {axis = 0 : i32} : (tensor<512xf32, #b1>, tensor<512xi32, #b4>) -> (f32, i32) {
  ^bb0(%a: f32, %ai: i32, %b: f32, %bi: i32):
    %gt = arith.cmpf ogt, %a, %b : f32
    %v = arith.select %gt, %a, %b : f32
    %j = arith.select %gt, %ai, %bi : i32
    kiln.reduce.return %v, %j : f32, i32
  }
  return %r#0, %r#1 : f32, i32
}
}

// -----

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @reduce_result_layout(%x: tensor<16x32xf32, #b2>) -> tensor<16xf32, #b1> {
  // expected-error @+2 {{'kiln.reduce' op expected its result in the slice of its operand's layout (kiln-gpu-match-shape-layouts)}}
  // expected-error @+1 {{failed to legalize operation 'kiln.reduce'}}
  %r = kiln.reduce(%x) {axis = 1 : i32} : (tensor<16x32xf32, #b2>) -> tensor<16xf32, #b1> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    kiln.reduce.return %s : f32
  }
  return %r : tensor<16xf32, #b1>
}
}

// -----

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @scan_layouts(%x: tensor<512xf32, #b1>, %y: tensor<512xf32, #b4>) -> (tensor<512xf32, #b1>, tensor<512xf32, #b4>) {
  // expected-error @+2 {{'kiln.scan' op expected all operands in one layout}}
  // expected-error @+1 {{failed to legalize operation 'kiln.scan'}}
  %r:2 = kiln.scan(%x, %y) {axis = 0 : i32, reverse = false} : (tensor<512xf32, #b1>, tensor<512xf32, #b4>) -> (tensor<512xf32, #b1>, tensor<512xf32, #b4>) {
  ^bb0(%a: f32, %a2: f32, %b: f32, %b2: f32):
    %s = arith.addf %a, %b : f32
    %s2 = arith.addf %a2, %b2 : f32
    kiln.scan.return %s, %s2 : f32, f32
  }
  return %r#0, %r#1 : tensor<512xf32, #b1>, tensor<512xf32, #b4>
}
}

// -----

// A constant block whose elements differ has no per-thread lowering.
#b = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @constant_not_splat() -> tensor<128xi32, #b> {
  // expected-error @+1 {{expected a splat constant block; other constant blocks are not supported by this lowering}}
  %c = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127]> : tensor<128xi32, #b>
  return %c : tensor<128xi32, #b>
}
}

// -----

// Before sm_90 rounding to fp8 has no instruction: the pipeline expands it
// into integer ops first (kiln-expand-float8-rounding).
#b = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @float8_rounding_before_sm90(%v: tensor<128xf32, #b>) -> tensor<128xi8, #b> {
  // expected-error @+2 {{'kiln.f32_to_float8' op has no instruction on sm_80; kiln-expand-float8-rounding expands it first}}
  // expected-error @+1 {{failed to legalize operation 'kiln.f32_to_float8'}}
  %bytes = kiln.f32_to_float8 %v {format = #kiln.float8<e5m2>} : tensor<128xf32, #b> -> tensor<128xi8, #b>
  return %bytes : tensor<128xi8, #b>
}
}
