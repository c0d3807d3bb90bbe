// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu | FileCheck %s

// The host's division traps on a zero divisor and on INT_MIN / -1; the CPU
// lowering divides by 1 there instead and selects the defined result:
// x / 0 is all ones, x / -1 is 0 - x (wrapping), x % 0 is x. The operands
// are frozen first, so that a poison operand cannot mislead LLVM into a
// trapping division.

// CHECK-LABEL: llvm.func @divsi
// CHECK-SAME: (%[[XP:.*]]: vector<16xi32>, %[[YP:.*]]: vector<16xi32>)
// CHECK-DAG: %[[X:.*]] = llvm.freeze %[[XP]]
// CHECK-DAG: %[[Y:.*]] = llvm.freeze %[[YP]]
// CHECK-DAG: %[[ZERO:.*]] = llvm.mlir.constant(dense<0> : vector<16xi32>)
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(dense<1> : vector<16xi32>)
// CHECK-DAG: %[[ONES:.*]] = llvm.mlir.constant(dense<-1> : vector<16xi32>)
// CHECK: %[[BY0:.*]] = llvm.icmp "eq" %[[Y]], %[[ZERO]]
// CHECK: %[[BYM1:.*]] = llvm.icmp "eq" %[[Y]], %[[ONES]]
// CHECK: %[[UNSAFE:.*]] = llvm.or %[[BY0]], %[[BYM1]]
// CHECK: %[[D:.*]] = llvm.select %[[UNSAFE]], %[[ONE]], %[[Y]]
// CHECK: %[[Q:.*]] = llvm.sdiv %[[X]], %[[D]]
// CHECK: %[[NEG:.*]] = llvm.sub %[[ZERO]], %[[X]]
// CHECK: %[[R:.*]] = llvm.select %[[BYM1]], %[[NEG]], %[[Q]]
// CHECK: llvm.select %[[BY0]], %[[ONES]], %[[R]]
func.func @divsi(%x: tensor<16xi32>, %y: tensor<16xi32>) -> tensor<16xi32> {
  %q = arith.divsi %x, %y : tensor<16xi32>
  return %q : tensor<16xi32>
}

// -----

// CHECK-LABEL: llvm.func @remsi
// CHECK-SAME: (%[[XP:.*]]: i8, %[[YP:.*]]: i8)
// CHECK-DAG: %[[X:.*]] = llvm.freeze %[[XP]]
// CHECK-DAG: %[[Y:.*]] = llvm.freeze %[[YP]]
// CHECK: %[[BY0:.*]] = llvm.icmp "eq" %[[Y]]
// CHECK: %[[D:.*]] = llvm.select %{{.*}}, %{{.*}}, %[[Y]] : i1, i8
// CHECK: %[[R:.*]] = llvm.srem %[[X]], %[[D]] : i8
// CHECK: llvm.select %[[BY0]], %[[X]], %[[R]] : i1, i8
func.func @remsi(%x: i8, %y: i8) -> i8 {
  %r = arith.remsi %x, %y : i8
  return %r : i8
}

// -----

// Unsigned operands only need the zero divisor replaced.
// CHECK-LABEL: llvm.func @divui
// CHECK-SAME: (%[[XP:.*]]: i64, %[[YP:.*]]: i64)
// CHECK-DAG: %[[X:.*]] = llvm.freeze %[[XP]]
// CHECK-DAG: %[[Y:.*]] = llvm.freeze %[[YP]]
// CHECK: %[[BY0:.*]] = llvm.icmp "eq" %[[Y]]
// CHECK-NOT: llvm.or
// CHECK: %[[D:.*]] = llvm.select %[[BY0]], %{{.*}}, %[[Y]] : i1, i64
// CHECK: %[[Q:.*]] = llvm.udiv %[[X]], %[[D]] : i64
// CHECK: llvm.select %[[BY0]], %{{.*}}, %[[Q]] : i1, i64
func.func @divui(%x: i64, %y: i64) -> i64 {
  %q = arith.divui %x, %y : i64
  return %q : i64
}

// -----

// CHECK-LABEL: llvm.func @remui
// CHECK-SAME: (%[[XP:.*]]: vector<8xi16>, %[[YP:.*]]: vector<8xi16>)
// CHECK-DAG: %[[X:.*]] = llvm.freeze %[[XP]]
// CHECK-DAG: %[[Y:.*]] = llvm.freeze %[[YP]]
// CHECK: %[[BY0:.*]] = llvm.icmp "eq" %[[Y]]
// CHECK: %[[D:.*]] = llvm.select %[[BY0]], %{{.*}}, %[[Y]]
// CHECK: %[[R:.*]] = llvm.urem %[[X]], %[[D]]
// CHECK: llvm.select %[[BY0]], %[[X]], %[[R]]
func.func @remui(%x: tensor<8xi16>, %y: tensor<8xi16>) -> tensor<8xi16> {
  %r = arith.remui %x, %y : tensor<8xi16>
  return %r : tensor<8xi16>
}
