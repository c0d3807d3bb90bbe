// The registered CPU pipeline, as the JIT runs it.
// RUN: kiln-opt %s --kiln-cpu-to-llvm | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-cpu-to-llvm{chunk-size=256})' | FileCheck %s --check-prefix=C256
// RUN: kiln-opt %s --kiln-cpu-to-llvm='checked=true' | FileCheck %s --check-prefix=CHECKED

// The memory accesses are recorded as sites, in source order, for the
// runtime's error messages.
// CHECK: module attributes {kiln_cpu.sites = [{element_bytes = 4 : i32, loc = "{{.*}}", param = 0 : i32, store = false}, {element_bytes = 4 : i32, loc = "{{.*}}", param = 0 : i32, store = true}]}
// The called function is inlined and removed: one program function and its
// entry.
// CHECK-NOT: @offsets
// CHECK-LABEL: llvm.func @scale(
// The 1024-element kernel is strip-mined into chunks of 128 lanes, each an
// LLVM vector: a loop from 0 to 1024 by 128.
// CHECK-DAG: %[[STEP:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-DAG: %[[END:.*]] = llvm.mlir.constant(1024 : i32) : i32
// CHECK: llvm.br ^bb1
// CHECK: ^bb1(%[[I:.*]]: i32):
// CHECK: llvm.icmp "slt" %[[I]], %[[END]] : i32
// The contiguous, 16-byte divisible accesses become one masked vector load
// and store per chunk, not gathers and scatters.
// CHECK: llvm.intr.masked.load %{{.*}} {alignment = 16 : i32} : (!llvm.ptr, vector<128xi1>, vector<128xf32>) -> vector<128xf32>
// CHECK: llvm.fmul %{{.*}} : vector<128xf32>
// CHECK: llvm.intr.masked.store %{{.*}} {alignment = 16 : i32} : vector<128xf32>, vector<128xi1> into !llvm.ptr
// CHECK: llvm.add %[[I]], %[[STEP]] : i32
// CHECK-NOT: kiln.
// CHECK-NOT: unrealized_conversion_cast
// The host calls the entry, which unpacks the argument array.
// CHECK-LABEL: llvm.func @scale.kiln_entry(
// CHECK: llvm.call @scale(

// C256: llvm.intr.masked.load %{{.*}} -> vector<256xf32>
// C256: llvm.intr.masked.store %{{.*}} : vector<256xf32>, vector<256xi1> into !llvm.ptr

// Checked mode calls the runtime's bounds check before each access.
// CHECKED-DAG: llvm.func @__kiln_cpu_check(i32, i1, i64)
// CHECKED-DAG: llvm.func @__kiln_cpu_bounds() -> !llvm.ptr
// CHECKED-LABEL: llvm.func @scale(
// CHECKED: llvm.call @__kiln_cpu_check(
// CHECKED: llvm.intr.masked.load
// CHECKED: llvm.call @__kiln_cpu_check(
// CHECKED: llvm.intr.masked.store

func.func private @offsets(%pid: i32) -> tensor<1024xi32> {
  %c1024 = arith.constant 1024 : i32
  %base = arith.muli %pid, %c1024 : i32
  %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %bs = kiln.splat %base : i32 -> tensor<1024xi32>
  %offs = arith.addi %bs, %r : tensor<1024xi32>
  return %offs : tensor<1024xi32>
}

func.func public @scale(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %n: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
  %pid = kiln.program_id {axis = 0 : i32} : i32
  %offs = func.call @offsets(%pid) : (i32) -> tensor<1024xi32>
  %ns = kiln.splat %n : i32 -> tensor<1024xi32>
  %mask = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>>
  %p = kiln.addptr %xs, %offs : tensor<1024x!kiln.ptr<f32>>, tensor<1024xi32>
  %v = kiln.load %p, %mask : tensor<1024x!kiln.ptr<f32>> -> tensor<1024xf32>
  %two = arith.constant dense<2.0> : tensor<1024xf32>
  %w = arith.mulf %v, %two : tensor<1024xf32>
  kiln.store %p, %w, %mask : tensor<1024x!kiln.ptr<f32>>, tensor<1024xf32>
  return
}
