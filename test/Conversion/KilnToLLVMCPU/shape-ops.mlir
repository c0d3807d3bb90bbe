// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu | FileCheck %s

// A transpose is one shuffle of the row-major vector: element (i, j) of
// the 4x2 result takes element (j, i) of the 2x4 source.

// CHECK-LABEL: llvm.func @trans
// CHECK: llvm.shufflevector %{{.*}}, %{{.*}} [0, 4, 1, 5, 2, 6, 3, 7] : vector<8xf32>
func.func @trans(%a: tensor<2x4xf32>) -> tensor<4x2xf32> {
  %t = kiln.trans %a {order = array<i32: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
  return %t : tensor<4x2xf32>
}

// -----

// join shuffles its two operands together; split takes every other element;
// flip reverses runs; reshape keeps the order, so it is no instruction.

// CHECK-LABEL: llvm.func @join_split_flip_reshape
// CHECK: llvm.shufflevector %[[A:.*]], %[[B:.*]] [0, 4, 1, 5, 2, 6, 3, 7] : vector<4xf32>
// CHECK: llvm.shufflevector %[[J:.*]], %[[J]] [1, 3, 5, 7] : vector<8xf32>
// CHECK: %[[F:.*]] = llvm.shufflevector %{{.*}}, %{{.*}} [3, 2, 1, 0] : vector<4xf32>
// CHECK-NEXT: llvm.return %[[F]]
func.func @join_split_flip_reshape(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x2xf32> {
  %j = kiln.join %a, %b : tensor<4xf32> -> tensor<4x2xf32>
  %l, %h = kiln.split %j : tensor<4x2xf32> -> tensor<4xf32>
  %f = kiln.flip %h {axis = 0 : i32} : tensor<4xf32>
  %r = kiln.reshape %f : tensor<4xf32> -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// A gather clamps its indices, stores the source in a stack slot and reads
// it back with one masked gather.

// CHECK-LABEL: llvm.func @gather
// CHECK: llvm.intr.smax
// CHECK: llvm.intr.smin
// CHECK: llvm.intr.stacksave
// CHECK: llvm.alloca
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xf32>, !llvm.ptr
// CHECK: llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, vector<8xi32>) -> vector<8x!llvm.ptr>, f32
// CHECK: llvm.intr.masked.gather
// CHECK: llvm.intr.stackrestore
func.func @gather(%a: tensor<4x2xf32>, %i: tensor<4x2xi32>) -> tensor<4x2xf32> {
  %g = kiln.gather %a[%i] {axis = 0 : i32} : (tensor<4x2xf32>, tensor<4x2xi32>) -> tensor<4x2xf32>
  return %g : tensor<4x2xf32>
}

// -----

// Above 256 lanes a permutation reads through a stack slot with one masked
// gather at constant offsets instead of a shuffle.

// CHECK-LABEL: llvm.func @large_trans
// CHECK-NOT: llvm.shufflevector
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<512xf32>, !llvm.ptr
// CHECK: llvm.intr.masked.gather
func.func @large_trans(%a: tensor<32x16xf32>) -> tensor<16x32xf32> {
  %t = kiln.trans %a {order = array<i32: 1, 0>} : tensor<32x16xf32> -> tensor<16x32xf32>
  return %t : tensor<16x32xf32>
}

// -----

// A histogram counts in a stack array of one element more than its bins:
// each value, read as signed, adds one to its bin, or to the last element
// when it is outside [0, n) or masked off. A loop over the values, whatever
// the product of values and bins.

// CHECK-LABEL: llvm.func @histogram
// CHECK: llvm.intr.stacksave
// CHECK: %[[COUNTS:.*]] = llvm.alloca %{{.*}} x i32 {alignment = 16 : i64}
// CHECK: llvm.store %{{.*}}, %[[COUNTS]] {alignment = 16 : i64} : vector<128xi32>, !llvm.ptr
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<1024xi32>, !llvm.ptr
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<1024xi8>, !llvm.ptr
// CHECK: llvm.cond_br
// CHECK: llvm.sext %{{.*}} : i32 to i64
// CHECK: llvm.icmp "ult"
// CHECK: llvm.and
// CHECK: llvm.select
// CHECK: llvm.add %{{.*}} : i32
// CHECK: llvm.load %[[COUNTS]] {alignment = 16 : i64} : !llvm.ptr -> vector<128xi32>
// CHECK: llvm.intr.stackrestore
// CHECK-NOT: vector<131072xi1>
func.func @histogram(%x: tensor<1024xi32>, %m: tensor<1024xi1>) -> tensor<128xi32> {
  %h = kiln.histogram %x, %m : tensor<1024xi32>, tensor<1024xi1> -> tensor<128xi32>
  return %h : tensor<128xi32>
}
