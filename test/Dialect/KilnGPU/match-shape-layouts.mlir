// RUN: kiln-opt %s -split-input-file -kiln-gpu-match-shape-layouts -canonicalize | FileCheck %s

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#b2r = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]}>

// The range feeding expand_dims is recomputed in the slice of the
// broadcast's layout, and the [1, 32] block in the [16, 32] block's layout.
// CHECK-DAG: #[[B2:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[S0:.*]] = #kiln_gpu.slice<{dim = 0, parent = #[[B2]]}>
// CHECK-LABEL: func.func @row_broadcast
// CHECK: %[[R:.*]] = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #[[S0]]>
// CHECK: %[[E:.*]] = kiln.expand_dims %[[R]] {axis = 0 : i32} : tensor<32xi32, #[[S0]]> -> tensor<1x32xi32, #[[B2]]>
// CHECK: kiln.broadcast %[[E]] : tensor<1x32xi32, #[[B2]]> -> tensor<16x32xi32, #[[B2]]>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @row_broadcast() -> tensor<16x32xi32, #b2> {
  %r = kiln.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32, #b1>
  %e = kiln.expand_dims %r {axis = 0 : i32} : tensor<32xi32, #b1> -> tensor<1x32xi32, #b2r>
  %b = kiln.broadcast %e : tensor<1x32xi32, #b2r> -> tensor<16x32xi32, #b2>
  return %b : tensor<16x32xi32, #b2>
}
}
