// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu | FileCheck %s
// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu='checked=true' | FileCheck %s --check-prefix=CHECKED

// An atomic on a block is a loop over its lanes: a lane whose mask is set
// performs one atomicrmw, with the requested ordering, and its old value
// goes into the result vector.
// CHECK-LABEL: llvm.func @histogram(
// CHECK: llvm.br ^[[HEADER:.*]](%{{.*}}, %{{.*}} : i32, vector<64xi32>)
// CHECK: ^[[HEADER]](%[[LANE:.*]]: i32, %[[ACC:.*]]: vector<64xi32>):
// CHECK: llvm.icmp "slt" %[[LANE]]
// CHECK: llvm.extractelement %{{.*}}[%[[LANE]] : i32] : vector<64xi1>
// CHECK: llvm.cond_br
// CHECK: %[[OLD:.*]] = llvm.atomicrmw add %{{.*}}, %{{.*}} monotonic {alignment = 4 : i64} : !llvm.ptr, i32
// CHECK: llvm.insertelement %[[OLD]], %[[ACC]][%[[LANE]] : i32] : vector<64xi32>
// In checked mode the atomic is a site of its own, reported as a store,
// and lanes outside the buffer leave the mask before the loop.
// CHECKED: kiln_cpu.sites = [{element_bytes = 4 : i32, loc = {{.*}}, param = 0 : i32, store = true}, {element_bytes = 4 : i32, loc = {{.*}}, param = 1 : i32, store = true}]
// CHECKED-LABEL: llvm.func @histogram(
// CHECKED: llvm.call @__kiln_cpu_check(
// CHECKED: llvm.atomicrmw add
func.func public @histogram(%bins: !kiln.ptr<i32>, %x: !kiln.ptr<i32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %c = arith.constant dense<7> : tensor<64xi32>
  %m = arith.cmpi slt, %r, %c : tensor<64xi32>
  %bs = kiln.splat %bins : !kiln.ptr<i32> -> tensor<64x!kiln.ptr<i32>>
  %bp = kiln.addptr %bs, %r : tensor<64x!kiln.ptr<i32>>, tensor<64xi32>
  %one = arith.constant dense<1> : tensor<64xi32>
  %old = kiln.atomic_rmw add, %bp, %one, %m {sem = #kiln.sem<relaxed>} : tensor<64x!kiln.ptr<i32>>, tensor<64xi32>
  %xs = kiln.splat %x : !kiln.ptr<i32> -> tensor<64x!kiln.ptr<i32>>
  %xp = kiln.addptr %xs, %r : tensor<64x!kiln.ptr<i32>>, tensor<64xi32>
  kiln.store %xp, %old : tensor<64x!kiln.ptr<i32>>, tensor<64xi32>
  return
}

// -----

// A float compare-and-swap compares bits; a failed one only acquires.
// CHECK-LABEL: llvm.func @cas(
// CHECK: llvm.bitcast %{{.*}} : f32 to i32
// CHECK: %[[PAIR:.*]] = llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} acq_rel acquire {alignment = 4 : i64} : !llvm.ptr, i32
// CHECK: llvm.extractvalue %[[PAIR]][0]
// CHECK: llvm.bitcast %{{.*}} : i32 to f32
func.func public @cas(%p: !kiln.ptr<f32>, %out: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %old = kiln.atomic_cas %p, %zero, %one : !kiln.ptr<f32>, f32
  kiln.store %out, %old : !kiln.ptr<f32>, f32
  return
}

// -----

// Hints and debug barriers lower to nothing on the host.
// CHECK-LABEL: llvm.func @hints(
// CHECK-NOT: kiln.
// CHECK: llvm.return
func.func public @hints(%p: !kiln.ptr<i32>, %n: i32) attributes {kiln.kernel} {
  %h = kiln.axis_hint %n {divisibility = array<i64: 16>} : i32
  kiln.debug_barrier
  %q = kiln.addptr %p, %h : !kiln.ptr<i32>, i32
  kiln.store %q, %n : !kiln.ptr<i32>, i32
  return
}

// -----

// Prints and assertions call the CPU runtime once per element; an assertion
// skips the lanes whose condition holds.
// CHECK-LABEL: llvm.func @debugging(
// CHECK: llvm.call @__kiln_cpu_print(%{{.*}}) : (!llvm.ptr, i32, i32, i32, i32, i32, i32, i32, i64, i32, i32) -> ()
// CHECK: %[[OK:.*]] = llvm.extractelement %{{.*}}[%{{.*}} : i32] : vector<8xi1>
// CHECK: llvm.cond_br %[[OK]], ^{{.*}}, ^[[FAIL:.*]]
// CHECK: ^[[FAIL]]:
// CHECK: llvm.call @__kiln_cpu_assert_fail(%{{.*}}) : (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i32, i32, i32, i32) -> ()
func.func public @debugging(%n: i32) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 8 : i32} : tensor<8xi32>
  kiln.print %r {prefix = "r: ", hex = false, isSigned = array<i32: 1>} : tensor<8xi32>
  %ns = kiln.splat %n : i32 -> tensor<8xi32>
  %ok = arith.cmpi slt, %r, %ns : tensor<8xi32>
  kiln.assert %ok {message = "r < n", file = "k.py", line = 4 : i32, function = "k"} : tensor<8xi1>
  return
}
