// RUN: kiln-opt %s -split-input-file -kiln-gpu-async-dots="num-stages=3" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-gpu-async-dots="num-stages=2" | FileCheck %s --check-prefix=TWO

#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>

// The accumulating wgmma dot: unrolled by two with buffers 0 and 1, the
// odd last iteration in a loop of its own (buffer 0), each loop's
// accumulator read through a wait.
// CHECK-LABEL: func.func @accumulate
// CHECK: scf.for {{.*}} step %{{.*}}
// CHECK: kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 0 : i32
// CHECK: kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 1 : i32
// CHECK: %[[W:.*]] = kiln_gpu.async_dot_wait
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[W]])
// CHECK: kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 0 : i32
// CHECK: %[[LAST:.*]] = kiln_gpu.async_dot_wait
// CHECK: return %[[LAST]]
// TWO-LABEL: func.func @accumulate
// TWO-NOT: wgmma_buffer
// TWO-NOT: async_dot_wait
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @accumulate(%a: tensor<64x32xf16, #bA>, %b: tensor<32x64xf16, #bA>, %n: i32) -> tensor<64x64xf32, #wg> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #wg>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x64xf32, #wg>) : i32 {
    %d = kiln.dot %a, %b, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bA> -> tensor<64x64xf32, #wg>
    scf.yield %d : tensor<64x64xf32, #wg>
  }
  return %r : tensor<64x64xf32, #wg>
}
}

// -----

// An accumulator also read inside the loop stays synchronous.
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @read_inside
// CHECK-NOT: wgmma_buffer
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @read_inside(%a: tensor<64x32xf16, #bA>, %b: tensor<32x64xf16, #bA>, %n: i32) -> tensor<64x64xf32, #wg> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #wg>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x64xf32, #wg>) : i32 {
    %d = kiln.dot %a, %b, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bA> -> tensor<64x64xf32, #wg>
    %h = arith.mulf %d, %d : tensor<64x64xf32, #wg>
    scf.yield %h : tensor<64x64xf32, #wg>
  }
  return %r : tensor<64x64xf32, #wg>
}
}
