// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s -canonicalize | FileCheck %s --check-prefix=FOLD

// Round trip of the shape ops.

// CHECK-LABEL: func.func @shape_ops
func.func @shape_ops(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %i: tensor<2x8xi32>)
    -> (tensor<32xf32>, tensor<8x4xf32>, tensor<4x8x2xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<2x8xf32>) {
  // CHECK: kiln.reshape %{{.*}} : tensor<4x8xf32> -> tensor<32xf32>
  %r = kiln.reshape %a : tensor<4x8xf32> -> tensor<32xf32>
  // CHECK: kiln.trans %{{.*}} {order = array<i32: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %t = kiln.trans %a {order = array<i32: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  // CHECK: kiln.join %{{.*}}, %{{.*}} : tensor<4x8xf32> -> tensor<4x8x2xf32>
  %j = kiln.join %a, %b : tensor<4x8xf32> -> tensor<4x8x2xf32>
  // CHECK: kiln.split %{{.*}} : tensor<4x8x2xf32> -> tensor<4x8xf32>
  %l, %h = kiln.split %j : tensor<4x8x2xf32> -> tensor<4x8xf32>
  // CHECK: kiln.cat %{{.*}}, %{{.*}} : tensor<4x8xf32> -> tensor<8x8xf32>
  %c = kiln.cat %a, %b : tensor<4x8xf32> -> tensor<8x8xf32>
  // CHECK: kiln.flip %{{.*}} {axis = 1 : i32} : tensor<4x8xf32>
  %f = kiln.flip %l {axis = 1 : i32} : tensor<4x8xf32>
  // CHECK: kiln.gather %{{.*}}[%{{.*}}] {axis = 0 : i32} : (tensor<4x8xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
  %g = kiln.gather %h[%i] {axis = 0 : i32} : (tensor<4x8xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
  return %r, %t, %j, %l, %c, %f, %g : tensor<32xf32>, tensor<8x4xf32>, tensor<4x8x2xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<2x8xf32>
}

// Histograms, with and without a mask.

// CHECK-LABEL: func.func @histograms
func.func @histograms(%x: tensor<64xi32>, %m: tensor<64xi1>) -> (tensor<16xi32>, tensor<16xi32>) {
  // CHECK: kiln.histogram %{{.*}} : tensor<64xi32> -> tensor<16xi32>
  %h = kiln.histogram %x : tensor<64xi32> -> tensor<16xi32>
  // CHECK: kiln.histogram %{{.*}}, %{{.*}} : tensor<64xi32>, tensor<64xi1> -> tensor<16xi32>
  %hm = kiln.histogram %x, %m : tensor<64xi32>, tensor<64xi1> -> tensor<16xi32>
  return %h, %hm : tensor<16xi32>, tensor<16xi32>
}

// A reshape to its own type and an identity permutation fold away.

// FOLD-LABEL: func.func @identities
// FOLD-NOT: kiln.
// FOLD: return %arg0
func.func @identities(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = kiln.reshape %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %t = kiln.trans %r {order = array<i32: 0, 1>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %t : tensor<4x8xf32>
}
