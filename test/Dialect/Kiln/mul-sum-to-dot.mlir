// RUN: kiln-opt %s -split-input-file -kiln-mul-sum-to-dot | FileCheck %s

// sum(a[:, :, None] * b[None, :, :], axis=1) is dot(a, b), with exact
// products and a zero accumulator; the product block is not built.

// CHECK-LABEL: func.func @mul_sum
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<32x64xf32>
// CHECK: %[[D:.*]] = kiln.dot %arg0, %arg1, %[[ZERO]] {inputPrecision = #kiln.precision<ieee>} : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
// CHECK: return %[[D]]
// CHECK-NOT: kiln.reduce
func.func @mul_sum(%a: tensor<32x16xf32>, %b: tensor<16x64xf32>) -> tensor<32x64xf32> {
  %ae = kiln.expand_dims %a {axis = 2 : i32} : tensor<32x16xf32> -> tensor<32x16x1xf32>
  %ab = kiln.broadcast %ae : tensor<32x16x1xf32> -> tensor<32x16x64xf32>
  %be = kiln.expand_dims %b {axis = 0 : i32} : tensor<16x64xf32> -> tensor<1x16x64xf32>
  %bb = kiln.broadcast %be : tensor<1x16x64xf32> -> tensor<32x16x64xf32>
  %p = arith.mulf %bb, %ab : tensor<32x16x64xf32>
  %s = kiln.reduce(%p) {axis = 1 : i32} : (tensor<32x16x64xf32>) -> tensor<32x64xf32> {
  ^bb0(%x: f32, %y: f32):
    %z = arith.addf %y, %x : f32
    kiln.reduce.return %z : f32
  }
  return %s : tensor<32x64xf32>
}

// -----

// Not a matrix product: a sum over another axis, a maximum, integers.

// CHECK-LABEL: func.func @not_products
// CHECK-NOT: kiln.dot
// CHECK-COUNT-3: kiln.reduce
func.func @not_products(%a: tensor<32x16xf32>, %b: tensor<16x64xf32>, %i: tensor<32x16xi32>, %j: tensor<16x64xi32>)
    -> (tensor<16x64xf32>, tensor<32x64xf32>, tensor<32x64xi32>) {
  %ae = kiln.expand_dims %a {axis = 2 : i32} : tensor<32x16xf32> -> tensor<32x16x1xf32>
  %ab = kiln.broadcast %ae : tensor<32x16x1xf32> -> tensor<32x16x64xf32>
  %be = kiln.expand_dims %b {axis = 0 : i32} : tensor<16x64xf32> -> tensor<1x16x64xf32>
  %bb = kiln.broadcast %be : tensor<1x16x64xf32> -> tensor<32x16x64xf32>
  %p = arith.mulf %ab, %bb : tensor<32x16x64xf32>
  %s0 = kiln.reduce(%p) {axis = 0 : i32} : (tensor<32x16x64xf32>) -> tensor<16x64xf32> {
  ^bb0(%x: f32, %y: f32):
    %z = arith.addf %x, %y : f32
    kiln.reduce.return %z : f32
  }
  %m = kiln.reduce(%p) {axis = 1 : i32} : (tensor<32x16x64xf32>) -> tensor<32x64xf32> {
  ^bb0(%x: f32, %y: f32):
    %z = arith.maximumf %x, %y : f32
    kiln.reduce.return %z : f32
  }
  %ie = kiln.expand_dims %i {axis = 2 : i32} : tensor<32x16xi32> -> tensor<32x16x1xi32>
  %ib = kiln.broadcast %ie : tensor<32x16x1xi32> -> tensor<32x16x64xi32>
  %je = kiln.expand_dims %j {axis = 0 : i32} : tensor<16x64xi32> -> tensor<1x16x64xi32>
  %jb = kiln.broadcast %je : tensor<1x16x64xi32> -> tensor<32x16x64xi32>
  %q = arith.muli %ib, %jb : tensor<32x16x64xi32>
  %n = kiln.reduce(%q) {axis = 1 : i32} : (tensor<32x16x64xi32>) -> tensor<32x64xi32> {
  ^bb0(%x: i32, %y: i32):
    %z = arith.addi %x, %y : i32
    kiln.reduce.return %z : i32
  }
  return %s0, %m, %n : tensor<16x64xf32>, tensor<32x64xf32>, tensor<32x64xi32>
}
