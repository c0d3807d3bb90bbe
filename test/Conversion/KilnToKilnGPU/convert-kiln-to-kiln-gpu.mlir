// RUN: kiln-opt %s -split-input-file -convert-kiln-to-kiln-gpu='num-warps=4 target=sm_80' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -convert-kiln-to-kiln-gpu='num-warps=8' | FileCheck %s --check-prefix=W8

// The module records the launch shape; 1-D blocks get one element per
// thread, threads then warps along the block.
// CHECK: #[[B:.*]] = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK: module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>, kiln_gpu.threads_per_warp = 32 : i32}
// W8: #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [8], order = [0]}>
// CHECK-LABEL: func.func @range
func.func @range(%p: !kiln.ptr<f32>) -> tensor<256xi32> {
  // CHECK: kiln.make_range {{.*}} : tensor<256xi32, #[[B]]>
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  // CHECK: arith.constant dense<1> : tensor<256xi32, #[[B]]>
  %one = arith.constant dense<1> : tensor<256xi32>
  %s = arith.addi %r, %one : tensor<256xi32>
  // CHECK: return %{{.*}} : tensor<256xi32, #[[B]]>
  return %s : tensor<256xi32>
}

// -----

// 2-D blocks: the last dimension is fastest; threads fill it first.
// CHECK: #[[B2:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @two_d
func.func @two_d(%a: tensor<32x16xf32>) -> tensor<32x16xf32> {
  // CHECK: arith.addf %{{.*}} : tensor<32x16xf32, #[[B2]]>
  %b = arith.addf %a, %a : tensor<32x16xf32>
  return %b : tensor<32x16xf32>
}

// -----

// Loop-carried blocks change type with their loop.
// CHECK-LABEL: func.func @loop
func.func @loop(%n: index) -> tensor<128xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = arith.constant dense<0.0> : tensor<128xf32>
  // CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<128xf32, #
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<128xf32>) {
    %next = arith.addf %acc, %acc : tensor<128xf32>
    scf.yield %next : tensor<128xf32>
  }
  return %r : tensor<128xf32>
}
