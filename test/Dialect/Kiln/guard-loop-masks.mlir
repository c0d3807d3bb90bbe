// RUN: kiln-opt %s -split-input-file -kiln-guard-loop-masks | FileCheck %s

// Attention's causal mask, rows [r0, r0 + 128) against keys
// [i, i + 64): all true while i <= r0 - 63. The select, with the key
// indices and the compare that only it reads, runs under an scf.if in the
// iterations past that bound; the others take the scores as they are. The
// row indices, defined before the loop, stay there.
// CHECK-LABEL: func.func @causal
// CHECK-SAME: (%[[R0:.*]]: i32, %[[N:.*]]: i32
// CHECK: %[[OFF:.*]] = arith.constant -63 : i32
// CHECK: %[[BOUND:.*]] = arith.addi %[[OFF]], %[[R0]] : i32
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[N]] step
// CHECK: %[[QK:.*]] = kiln.dot
// CHECK-NEXT: %[[NEEDED:.*]] = arith.cmpi sgt, %[[I]], %[[BOUND]] : i32
// CHECK-NEXT: %[[X:.*]] = scf.if %[[NEEDED]] -> (tensor<128x64xf32>) {
// CHECK-NEXT: kiln.splat %[[I]]
// CHECK: %[[KEEP:.*]] = arith.cmpi sge
// CHECK-NEXT: %[[M:.*]] = arith.select %[[KEEP]], %[[QK]], %{{.*}}
// CHECK-NEXT: scf.yield %[[M]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[QK]]
// CHECK-NEXT: }
// CHECK-NEXT: arith.addf %{{.*}}, %[[X]]
// CHECK-NOT: scf.for
func.func @causal(%r0: i32, %n: i32, %a: tensor<128x16xf16>, %b: tensor<16x64xf16>) -> tensor<128x64xf32> {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %minf = arith.constant dense<0xFF800000> : tensor<128x64xf32>
  %rows0 = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %r0s = kiln.splat %r0 : i32 -> tensor<128xi32>
  %rows = arith.addi %r0s, %rows0 : tensor<128xi32>
  %cols = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %out = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero) -> (tensor<128x64xf32>) : i32 {
    %qk = kiln.dot %a, %b, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<128x16xf16> * tensor<16x64xf16> -> tensor<128x64xf32>
    %is = kiln.splat %i : i32 -> tensor<64xi32>
    %keys = arith.addi %is, %cols : tensor<64xi32>
    %r2 = kiln.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %k2 = kiln.expand_dims %keys {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %rb = kiln.broadcast %r2 : tensor<128x1xi32> -> tensor<128x64xi32>
    %kb = kiln.broadcast %k2 : tensor<1x64xi32> -> tensor<128x64xi32>
    %keep = arith.cmpi sge, %rb, %kb : tensor<128x64xi32>
    %masked = arith.select %keep, %qk, %minf : tensor<128x64xi1>, tensor<128x64xf32>
    %next = arith.addf %acc, %masked : tensor<128x64xf32>
    scf.yield %next : tensor<128x64xf32>
  }
  return %out : tensor<128x64xf32>
}

// -----

// The backward's dK/dV mask, queries [i, i + 32) against keys
// [k0, k0 + 64): all true once i >= k0 + 63, so applied before that.
// CHECK-LABEL: func.func @from_a_bound
// CHECK: %[[BOUND:.*]] = arith.addi %{{.*}}, %arg0 : i32
// CHECK: scf.for %[[I:.*]] = %arg1 to %arg2
// CHECK: %[[NEEDED:.*]] = arith.cmpi slt, %[[I]], %[[BOUND]] : i32
// CHECK-NEXT: scf.if %[[NEEDED]]
// CHECK: arith.select
// CHECK: } else {
// CHECK-NOT: scf.for
func.func @from_a_bound(%k0: i32, %lb: i32, %n: i32, %a: tensor<64x16xf16>, %b: tensor<16x32xf16>) -> tensor<64x32xf32> {
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %keys0 = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %k0s = kiln.splat %k0 : i32 -> tensor<64xi32>
  %keys = arith.addi %k0s, %keys0 : tensor<64xi32>
  %rows0 = kiln.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %out = scf.for %i = %lb to %n step %c32 iter_args(%acc = %zero) -> (tensor<64x32xf32>) : i32 {
    %p = kiln.dot %a, %b, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x16xf16> * tensor<16x32xf16> -> tensor<64x32xf32>
    %is = kiln.splat %i : i32 -> tensor<32xi32>
    %rows = arith.addi %is, %rows0 : tensor<32xi32>
    %q2 = kiln.expand_dims %rows {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %k2 = kiln.expand_dims %keys {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %qb = kiln.broadcast %q2 : tensor<1x32xi32> -> tensor<64x32xi32>
    %kb = kiln.broadcast %k2 : tensor<64x1xi32> -> tensor<64x32xi32>
    %keep = arith.cmpi sge, %qb, %kb : tensor<64x32xi32>
    %masked = arith.select %keep, %p, %zero : tensor<64x32xi1>, tensor<64x32xf32>
    %next = arith.addf %acc, %masked : tensor<64x32xf32>
    scf.yield %next : tensor<64x32xf32>
  }
  return %out : tensor<64x32xf32>
}

// -----

// A loop that starts elsewhere than at a constant, with a mask all true up
// to a bound (the diagonal loop a kernel split by hand), and a loop
// without a dot, are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: scf.if
func.func @left_alone(%r0: i32, %lb: i32, %n: i32, %a: tensor<128x16xf16>, %b: tensor<16x64xf16>) -> (tensor<128x64xf32>, tensor<64xf32>) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %zero1 = arith.constant dense<0.0> : tensor<64xf32>
  %one = arith.constant dense<1.0> : tensor<64xf32>
  %r0s = kiln.splat %r0 : i32 -> tensor<128x64xi32>
  %cols = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %diag = scf.for %i = %lb to %n step %c64 iter_args(%acc = %zero) -> (tensor<128x64xf32>) : i32 {
    %qk = kiln.dot %a, %b, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<128x16xf16> * tensor<16x64xf16> -> tensor<128x64xf32>
    %is = kiln.splat %i : i32 -> tensor<64xi32>
    %keys = arith.addi %is, %cols : tensor<64xi32>
    %k2 = kiln.expand_dims %keys {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %kb = kiln.broadcast %k2 : tensor<1x64xi32> -> tensor<128x64xi32>
    %keep = arith.cmpi sge, %r0s, %kb : tensor<128x64xi32>
    %masked = arith.select %keep, %qk, %zero : tensor<128x64xi1>, tensor<128x64xf32>
    %next = arith.addf %acc, %masked : tensor<128x64xf32>
    scf.yield %next : tensor<128x64xf32>
  }
  %sum = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero1) -> (tensor<64xf32>) : i32 {
    %is = kiln.splat %i : i32 -> tensor<64xi32>
    %keys = arith.addi %is, %cols : tensor<64xi32>
    %ns = kiln.splat %n : i32 -> tensor<64xi32>
    %keep = arith.cmpi slt, %keys, %ns : tensor<64xi32>
    %masked = arith.select %keep, %one, %zero1 : tensor<64xi1>, tensor<64xf32>
    %next = arith.addf %acc, %masked : tensor<64xf32>
    scf.yield %next : tensor<64xf32>
  }
  return %diag, %sum : tensor<128x64xf32>, tensor<64xf32>
}

// -----

// The backward's dQ mask: keys past the end and the causal mask, both
// all true up to a bound (i <= n - 64 and i <= r0 - 63), joined by an
// `and`: applied past either bound, the `and` and both compares under the
// scf.if.
// CHECK-LABEL: func.func @conjunction
// CHECK-SAME: (%[[R0:.*]]: i32, %[[N:.*]]: i32
// CHECK-DAG: %[[KEYS_BOUND:.*]] = arith.addi %{{.*}}, %[[N]] : i32
// CHECK-DAG: %[[CAUSAL_BOUND:.*]] = arith.addi %{{.*}}, %[[R0]] : i32
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[N]] step
// CHECK: kiln.dot
// CHECK-NEXT: %[[PAST_KEYS:.*]] = arith.cmpi sgt, %[[I]], %[[KEYS_BOUND]] : i32
// CHECK-NEXT: %[[PAST_DIAGONAL:.*]] = arith.cmpi sgt, %[[I]], %[[CAUSAL_BOUND]] : i32
// CHECK-NEXT: %[[NEEDED:.*]] = arith.ori %[[PAST_KEYS]], %[[PAST_DIAGONAL]] : i1
// CHECK-NEXT: scf.if %[[NEEDED]]
// CHECK: arith.andi
// CHECK: arith.select
// CHECK: } else {
func.func @conjunction(%r0: i32, %n: i32, %a: tensor<128x16xf16>, %b: tensor<16x64xf16>) -> tensor<128x64xf32> {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %rows0 = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %r0s = kiln.splat %r0 : i32 -> tensor<128xi32>
  %rows = arith.addi %r0s, %rows0 : tensor<128xi32>
  %cols = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %ns = kiln.splat %n : i32 -> tensor<1x64xi32>
  %out = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero) -> (tensor<128x64xf32>) : i32 {
    %p = kiln.dot %a, %b, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<128x16xf16> * tensor<16x64xf16> -> tensor<128x64xf32>
    %is = kiln.splat %i : i32 -> tensor<64xi32>
    %keys = arith.addi %is, %cols : tensor<64xi32>
    %k2 = kiln.expand_dims %keys {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %inside = arith.cmpi slt, %k2, %ns : tensor<1x64xi32>
    %insideb = kiln.broadcast %inside : tensor<1x64xi1> -> tensor<128x64xi1>
    %r2 = kiln.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %rb = kiln.broadcast %r2 : tensor<128x1xi32> -> tensor<128x64xi32>
    %kb = kiln.broadcast %k2 : tensor<1x64xi32> -> tensor<128x64xi32>
    %causal = arith.cmpi sge, %rb, %kb : tensor<128x64xi32>
    %keep = arith.andi %insideb, %causal : tensor<128x64xi1>
    %masked = arith.select %keep, %p, %zero : tensor<128x64xi1>, tensor<128x64xf32>
    %next = arith.addf %acc, %masked : tensor<128x64xf32>
    scf.yield %next : tensor<128x64xf32>
  }
  return %out : tensor<128x64xf32>
}
