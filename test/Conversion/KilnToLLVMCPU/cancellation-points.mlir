// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu | FileCheck %s

// Every iteration of a loop that may run long loads the launcher's
// cancellation flag (volatile, so that it stays in the loop) and returns
// when it is set: an interrupted launch stops even a program spinning on a
// value it never changes.

// CHECK: llvm.mlir.global external @__kiln_cpu_cancel() {{.*}} : i32
// CHECK-LABEL: llvm.func @spin(
// CHECK: ^[[BEFORE:bb[0-9]+]](%{{.*}}: i32):
// CHECK: llvm.cond_br %{{.*}}, ^[[AFTER:bb[0-9]+]]({{.*}}), ^[[DONE:bb[0-9]+]]
// CHECK: ^[[AFTER]](%{{.*}}: i32):
// CHECK: %[[FLAG_ADDR:.*]] = llvm.mlir.addressof @__kiln_cpu_cancel
// CHECK: %[[FLAG:.*]] = llvm.load volatile %[[FLAG_ADDR]] {alignment = 4 : i64} : !llvm.ptr -> i32
// CHECK: %[[SET:.*]] = llvm.icmp "ne" %[[FLAG]], %{{.*}} : i32
// CHECK: llvm.cond_br %[[SET]], ^[[CANCELLED:bb[0-9]+]], ^[[REST:bb[0-9]+]]
// CHECK: ^[[REST]]:
// CHECK: llvm.br ^[[BEFORE]](
// CHECK: ^[[CANCELLED]]:
// CHECK-NEXT: llvm.return
func.func @spin(%x: i32) attributes {kiln.kernel} {
  %c1 = arith.constant 1 : i32
  %r = scf.while (%v = %x) : (i32) -> i32 {
    %more = arith.cmpi slt, %v, %c1 : i32
    scf.condition(%more) %v : i32
  } do {
  ^bb0(%v: i32):
    scf.yield %v : i32
  }
  return
}

// -----

// A loop with run-time bounds is checked; a value-returning function
// returns zeros when cancelled.
// CHECK-LABEL: llvm.func @sum(
// CHECK: llvm.load volatile
// CHECK: llvm.cond_br %{{.*}}, ^[[CANCELLED:bb[0-9]+]], ^
// CHECK: ^[[CANCELLED]]:
// CHECK-NEXT: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: llvm.return %[[ZERO]] : i32
func.func @sum(%n: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> i32 {
    %next = arith.addi %acc, %one : i32
    scf.yield %next : i32
  }
  return %s : i32
}

// -----

// A short loop of constant trip count (the chunk loops of strip-mined
// kernels) is bounded and left unchecked.
// CHECK-NOT: __kiln_cpu_cancel
// CHECK-LABEL: llvm.func @chunks(
// CHECK-NOT: llvm.load volatile
func.func @chunks(%x: i32) -> i32 {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c1 = arith.constant 1 : index
  %s = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %x) -> i32 {
    %next = arith.addi %acc, %x : i32
    scf.yield %next : i32
  }
  return %s : i32
}
