// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu | FileCheck %s

// Reductions halve the reduced axis with shuffles, combining the lower half
// with the upper one, until one element is left.

// CHECK-LABEL: llvm.func @sum_small
// CHECK-NOT: llvm.alloca
// CHECK: llvm.shufflevector %{{.*}} [0, 1, 2, 3] : vector<8xf32>
// CHECK: llvm.shufflevector %{{.*}} [4, 5, 6, 7] : vector<8xf32>
// CHECK: llvm.fadd %{{.*}} : vector<4xf32>
// CHECK: llvm.fadd %{{.*}} : vector<2xf32>
// CHECK: llvm.fadd %{{.*}} : vector<1xf32>
// CHECK: llvm.extractelement
func.func @sum_small(%x: tensor<8xf32>) -> f32 attributes {kiln.kernel} {
  %r = kiln.reduce(%x) {axis = 0 : i32} : (tensor<8xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    kiln.reduce.return %s : f32
  }
  return %r : f32
}

// -----

// A block of more than 1024 elements is first stored to the stack with the
// reduced axis outermost (here a shuffle moves axis 1 of 4x2048 first) and
// read back in slices of 1024 elements (256 rows of 4) by volatile loads,
// which the code generator does not look through; the slices are combined
// in order, then the tree finishes on one slice.

// CHECK-LABEL: llvm.func @sum_wide_rows
// CHECK: %[[STACK:.*]] = llvm.intr.stacksave
// CHECK: %[[MOVED:.*]] = llvm.shufflevector %{{.*}} [0, 2048, 4096, 6144, 1, 2049
// CHECK: %[[SLOT:.*]] = llvm.alloca %{{.*}} x i32 {alignment = 16 : i64}
// CHECK: llvm.store %[[MOVED]], %[[SLOT]] {alignment = 16 : i64} : vector<8192xi32>
// CHECK: %[[S0:.*]] = llvm.load volatile %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<1024xi32>
// CHECK: llvm.getelementptr %[[SLOT]][1024]
// CHECK: %[[S1:.*]] = llvm.load volatile
// CHECK: llvm.add %[[S0]], %[[S1]] : vector<1024xi32>
// CHECK-COUNT-6: llvm.load volatile
// CHECK: llvm.intr.stackrestore %[[STACK]]
// CHECK: llvm.add %{{.*}} : vector<512xi32>
// CHECK: llvm.add %{{.*}} : vector<4xi32>
// CHECK-NOT: llvm.add
// CHECK: llvm.return
func.func @sum_wide_rows(%x: tensor<4x2048xi32>) -> tensor<4xi32> attributes {kiln.kernel} {
  %r = kiln.reduce(%x) {axis = 1 : i32} : (tensor<4x2048xi32>) -> tensor<4xi32> {
  ^bb0(%a: i32, %b: i32):
    %s = arith.addi %a, %b : i32
    kiln.reduce.return %s : i32
  }
  return %r : tensor<4xi32>
}

// -----

// Booleans go through the stack as bytes.

// CHECK-LABEL: llvm.func @any_wide
// CHECK: llvm.zext %{{.*}} : vector<2048xi1> to vector<2048xi8>
// CHECK: llvm.load volatile %{{.*}} -> vector<1024xi8>
// CHECK: llvm.trunc %{{.*}} : vector<1024xi8> to vector<1024xi1>
// CHECK: llvm.or %{{.*}} : vector<1024xi1>
func.func @any_wide(%x: tensor<2048xi1>) -> i1 attributes {kiln.kernel} {
  %r = kiln.reduce(%x) {axis = 0 : i32} : (tensor<2048xi1>) -> i1 {
  ^bb0(%a: i1, %b: i1):
    %s = arith.ori %a, %b : i1
    kiln.reduce.return %s : i1
  }
  return %r : i1
}
