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

// -----

// A block carried by a loop cannot be recomputed: it is converted.
// CHECK: // -----
#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[B2:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[S1:.*]] = #kiln_gpu.slice<{dim = 1, parent = #[[B2]]}>
// CHECK-LABEL: func.func @carried
// CHECK: %[[R:.*]] = scf.for
// CHECK: %[[C:.*]] = kiln_gpu.convert_layout %[[R]] : tensor<32xi32, #{{.*}}> -> tensor<32xi32, #[[S1]]>
// CHECK: kiln.expand_dims %[[C]] {axis = 1 : i32}
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @carried(%init: tensor<32xi32, #b1>, %n: index) -> tensor<32x1xi32, #b2> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<32xi32, #b1>) {
    %twice = arith.addi %acc, %acc : tensor<32xi32, #b1>
    scf.yield %twice : tensor<32xi32, #b1>
  }
  %e = kiln.expand_dims %r {axis = 1 : i32} : tensor<32xi32, #b1> -> tensor<32x1xi32, #b2>
  return %e : tensor<32x1xi32, #b2>
}
}

// -----

// A reduction's result gets the slice of its operand's layout; its store
// recomputes the pointers in that layout instead of converting the result.
// CHECK: // -----
#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[B2:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[S1:.*]] = #kiln_gpu.slice<{dim = 1, parent = #[[B2]]}>
// CHECK-LABEL: func.func @row_sums
// CHECK: %[[S:.*]] = kiln.reduce(%{{.*}}) {axis = 1 : i32} : (tensor<16x32xf32, #[[B2]]>) -> tensor<16xf32, #[[S1]]>
// CHECK: %[[R:.*]] = kiln.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32, #[[S1]]>
// CHECK: %[[P:.*]] = kiln.addptr %{{.*}}, %[[R]] : tensor<16x!kiln.ptr<f32>, #[[S1]]>
// CHECK: kiln.store %[[P]], %[[S]] : tensor<16x!kiln.ptr<f32>, #[[S1]]>, tensor<16xf32, #[[S1]]>
// CHECK-NOT: convert_layout
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @row_sums(%x: tensor<16x32xf32, #b2>, %out: !kiln.ptr<f32>) {
  %s = kiln.reduce(%x) {axis = 1 : i32} : (tensor<16x32xf32, #b2>) -> tensor<16xf32, #b1> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    kiln.reduce.return %c : f32
  }
  %r = kiln.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32, #b1>
  %p0 = kiln.splat %out : !kiln.ptr<f32> -> tensor<16x!kiln.ptr<f32>, #b1>
  %p = kiln.addptr %p0, %r : tensor<16x!kiln.ptr<f32>, #b1>, tensor<16xi32, #b1>
  kiln.store %p, %s : tensor<16x!kiln.ptr<f32>, #b1>, tensor<16xf32, #b1>
  return
}
}

// -----

// A range expanded twice into 3-D: the middle [1, 8] block would need a
// slice of a slice; it is converted instead of recomputed.
// CHECK: // -----
#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#b3 = #kiln_gpu.blocked<{sizePerThread = [1, 1, 1], threadsPerWarp = [1, 4, 8], warpsPerCTA = [1, 1, 4], order = [2, 1, 0]}>
// CHECK-LABEL: func.func @twice_expanded
// CHECK: %[[E:.*]] = kiln.expand_dims %{{.*}} {axis = 0 : i32}
// CHECK: %[[C:.*]] = kiln_gpu.convert_layout %[[E]]
// CHECK: kiln.expand_dims %[[C]] {axis = 0 : i32}
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @twice_expanded() -> tensor<1x1x8xi32, #b3> {
  %r = kiln.make_range {start = 0 : i32, end = 8 : i32} : tensor<8xi32, #b1>
  %e = kiln.expand_dims %r {axis = 0 : i32} : tensor<8xi32, #b1> -> tensor<1x8xi32, #b2>
  %f = kiln.expand_dims %e {axis = 0 : i32} : tensor<1x8xi32, #b2> -> tensor<1x1x8xi32, #b3>
  return %f : tensor<1x1x8xi32, #b3>
}
}
