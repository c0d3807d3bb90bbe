// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// CHECK-LABEL: func.func @vector_add
func.func @vector_add(%x: !kiln.ptr<f32>, %out: !kiln.ptr<f32, 1>, %n: i32) attributes {kiln.kernel} {
  // CHECK: kiln.program_id {axis = 0 : i32} : i32
  %pid = kiln.program_id {axis = 0 : i32} : i32
  // CHECK: kiln.num_programs {axis = 1 : i32} : i32
  %np = kiln.num_programs {axis = 1 : i32} : i32
  // CHECK: %[[R:.*]] = kiln.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
  %r = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  // CHECK: %[[N:.*]] = kiln.splat %{{.*}} : i32 -> tensor<128xi32>
  %ns = kiln.splat %n : i32 -> tensor<128xi32>
  // CHECK: %[[M:.*]] = arith.cmpi slt, %[[R]], %[[N]]
  %m = arith.cmpi slt, %r, %ns : tensor<128xi32>
  // CHECK: %[[XS:.*]] = kiln.splat %{{.*}} : !kiln.ptr<f32> -> tensor<128x!kiln.ptr<f32>>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<128x!kiln.ptr<f32>>
  // CHECK: %[[P:.*]] = kiln.addptr %[[XS]], %[[R]] : tensor<128x!kiln.ptr<f32>>, tensor<128xi32>
  %p = kiln.addptr %xs, %r : tensor<128x!kiln.ptr<f32>>, tensor<128xi32>
  %zero = arith.constant dense<0.0> : tensor<128xf32>
  // CHECK: %[[V:.*]] = kiln.load %[[P]], %[[M]], %{{.*}} {cache = #kiln.cache<cg>, evict = #kiln.evict<evict_first>, isVolatile} : tensor<128x!kiln.ptr<f32>> -> tensor<128xf32>
  %v = kiln.load %p, %m, %zero {cache = #kiln.cache<cg>, evict = #kiln.evict<evict_first>, isVolatile} : tensor<128x!kiln.ptr<f32>> -> tensor<128xf32>
  // CHECK: kiln.load %[[P]] : tensor<128x!kiln.ptr<f32>> -> tensor<128xf32>
  %w = kiln.load %p : tensor<128x!kiln.ptr<f32>> -> tensor<128xf32>
  // CHECK: kiln.store %{{.*}}, %[[V]], %[[M]] : tensor<128x!kiln.ptr<f32>>, tensor<128xf32>
  kiln.store %p, %v, %m : tensor<128x!kiln.ptr<f32>>, tensor<128xf32>
  // CHECK: kiln.store %{{.*}}, %{{.*}} : !kiln.ptr<f32>, f32
  %s = kiln.load %x : !kiln.ptr<f32> -> f32
  kiln.store %out, %s : !kiln.ptr<f32>, f32
  // CHECK: kiln.expand_dims %[[R]] {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  %e = kiln.expand_dims %r {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  // CHECK: kiln.broadcast %{{.*}} : tensor<1x128xi32> -> tensor<4x128xi32>
  %b = kiln.broadcast %e : tensor<1x128xi32> -> tensor<4x128xi32>
  return
}

// CHECK-LABEL: func.func @atomics
func.func @atomics(%p: !kiln.ptr<i32>, %f: !kiln.ptr<f32>, %h: !kiln.ptr<f16>) {
  %r = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %ps = kiln.splat %p : !kiln.ptr<i32> -> tensor<128x!kiln.ptr<i32>>
  %pp = kiln.addptr %ps, %r : tensor<128x!kiln.ptr<i32>>, tensor<128xi32>
  %m = arith.cmpi slt, %r, %r : tensor<128xi32>
  // CHECK: kiln.atomic_rmw add, %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x!kiln.ptr<i32>>, tensor<128xi32>
  %a = kiln.atomic_rmw add, %pp, %r, %m : tensor<128x!kiln.ptr<i32>>, tensor<128xi32>
  // CHECK: kiln.atomic_rmw umax, %{{.*}}, %{{.*}} {scope = #kiln.scope<cta>, sem = #kiln.sem<relaxed>} : tensor<128x!kiln.ptr<i32>>, tensor<128xi32>
  %b = kiln.atomic_rmw umax, %pp, %r {sem = #kiln.sem<relaxed>, scope = #kiln.scope<cta>} : tensor<128x!kiln.ptr<i32>>, tensor<128xi32>
  %c1 = arith.constant 1.0 : f32
  // CHECK: kiln.atomic_rmw fmax, %{{.*}}, %{{.*}} {scope = #kiln.scope<sys>} : !kiln.ptr<f32>, f32
  %c = kiln.atomic_rmw fmax, %f, %c1 {scope = #kiln.scope<sys>} : !kiln.ptr<f32>, f32
  // CHECK: kiln.atomic_rmw xor, %{{.*}}, %{{.*}} : !kiln.ptr<i32>, i32
  %i0 = arith.constant 0 : i32
  %d = kiln.atomic_rmw xor, %p, %i0 : !kiln.ptr<i32>, i32
  // CHECK: kiln.atomic_cas %{{.*}}, %{{.*}}, %{{.*}} {sem = #kiln.sem<acquire>} : !kiln.ptr<i32>, i32
  %e = kiln.atomic_cas %p, %i0, %d {sem = #kiln.sem<acquire>} : !kiln.ptr<i32>, i32
  %h0 = arith.constant 0.0 : f16
  // CHECK: kiln.atomic_cas %{{.*}}, %{{.*}}, %{{.*}} : !kiln.ptr<f16>, f16
  %g = kiln.atomic_cas %h, %h0, %h0 : !kiln.ptr<f16>, f16
  return
}

// CHECK-LABEL: func.func @hints_and_barrier
func.func @hints_and_barrier(%n: i32) {
  // CHECK: kiln.axis_hint %{{.*}} {divisibility = array<i64: 16>} : i32
  %a = kiln.axis_hint %n {divisibility = array<i64: 16>} : i32
  %r = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  // CHECK: kiln.axis_hint %{{.*}} {constancy = array<i64: 1>, contiguity = array<i64: 128>} : tensor<128xi32>
  %b = kiln.axis_hint %r {contiguity = array<i64: 128>, constancy = array<i64: 1>} : tensor<128xi32>
  // CHECK: kiln.debug_barrier
  kiln.debug_barrier
  return
}

// CHECK-LABEL: func.func @debugging
func.func @debugging(%n: i32, %f: f32) {
  %r = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  // CHECK: kiln.print %{{.*}}, %{{.*}} {hex = true, isSigned = array<i32: 1, 0>, prefix = "v: "} : i32, tensor<128xi32>
  kiln.print %n, %r {prefix = "v: ", hex = true, isSigned = array<i32: 1, 0>} : i32, tensor<128xi32>
  %ok = arith.cmpi sge, %r, %r : tensor<128xi32>
  // CHECK: kiln.assert %{{.*}} {file = "k.py", function = "k", line = 3 : i32, message = "r >= r"} : tensor<128xi1>
  kiln.assert %ok {message = "r >= r", file = "k.py", line = 3 : i32, function = "k"} : tensor<128xi1>
  return
}

// CHECK-LABEL: func @extern_elementwise
// CHECK: kiln.extern_elementwise "__nv_powf"(%{{.*}}, %{{.*}}) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
// CHECK: kiln.extern_elementwise "__nv_isnand"(%{{.*}}) : (f64) -> i32
func.func @extern_elementwise(%x: tensor<128xf32>, %s: f64) -> (tensor<128xf32>, i32) {
  %p = kiln.extern_elementwise "__nv_powf"(%x, %x) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  %n = kiln.extern_elementwise "__nv_isnand"(%s) : (f64) -> i32
  return %p, %n : tensor<128xf32>, i32
}

// CHECK-LABEL: func @elementwise_inline_asm
// CHECK: kiln.elementwise_inline_asm "shf.l.wrap.b32 $0, $1, $2, $3;" "=r,r,r,r"(%{{.*}}, %{{.*}}, %{{.*}}) {packed_element = 1 : i32, pure = true} : (tensor<128xi32>, tensor<128xi32>, tensor<128xi32>) -> tensor<128xi32>
// CHECK: kiln.elementwise_inline_asm "{{.*}}" "=r,=r,l"(%{{.*}}) {packed_element = 4 : i32, pure = false} : (tensor<128x!kiln.ptr<i8>>) -> (tensor<128xi8>, tensor<128xf32>)
// CHECK: kiln.elementwise_inline_asm "mov.u64 $0, %globaltimer;" "=l"() {packed_element = 1 : i32, pure = false} : () -> i64
func.func @elementwise_inline_asm(%x: tensor<128xi32>, %p: tensor<128x!kiln.ptr<i8>>) -> (tensor<128xi32>, tensor<128xi8>, tensor<128xf32>, i64) {
  %z = kiln.elementwise_inline_asm "shf.l.wrap.b32 $0, $1, $2, $3;" "=r,r,r,r"(%x, %x, %x) {packed_element = 1 : i32, pure = true} : (tensor<128xi32>, tensor<128xi32>, tensor<128xi32>) -> tensor<128xi32>
  %a, %b = kiln.elementwise_inline_asm "ld.global.b32 $0, [$2];" "=r,=r,l"(%p) {packed_element = 4 : i32, pure = false} : (tensor<128x!kiln.ptr<i8>>) -> (tensor<128xi8>, tensor<128xf32>)
  %t = kiln.elementwise_inline_asm "mov.u64 $0, %globaltimer;" "=l"() {packed_element = 1 : i32, pure = false} : () -> i64
  return %z, %a, %b, %t : tensor<128xi32>, tensor<128xi8>, tensor<128xf32>, i64
}

// CHECK-LABEL: func.func @reduce_and_scan
// CHECK: kiln.reduce(%{{.*}}, %{{.*}}) {axis = 1 : i32} : (tensor<16x64xf32>, tensor<16x64xi32>) -> (tensor<16xf32>, tensor<16xi32>)
// CHECK: kiln.reduce.return %{{.*}}, %{{.*}} : f32, i32
// CHECK: kiln.scan(%{{.*}}) {axis = 0 : i32, reverse = true} : (tensor<16x64xf32>) -> tensor<16x64xf32>
// CHECK: kiln.scan.return %{{.*}} : f32
func.func @reduce_and_scan(%x: tensor<16x64xf32>, %i: tensor<16x64xi32>) -> (tensor<16xf32>, tensor<16x64xf32>) {
  %s:2 = kiln.reduce(%x, %i) {axis = 1 : i32} : (tensor<16x64xf32>, tensor<16x64xi32>) -> (tensor<16xf32>, tensor<16xi32>) {
  ^bb0(%a: f32, %ai: i32, %b: f32, %bi: i32):
    %gt = arith.cmpf ogt, %a, %b : f32
    %v = arith.select %gt, %a, %b : f32
    %j = arith.select %gt, %ai, %bi : i32
    kiln.reduce.return %v, %j : f32, i32
  }
  %c = kiln.scan(%x) {axis = 0 : i32, reverse = true} : (tensor<16x64xf32>) -> tensor<16x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %sum = arith.addf %a, %b : f32
    kiln.scan.return %sum : f32
  }
  return %s#0, %c : tensor<16xf32>, tensor<16x64xf32>
}

// CHECK-LABEL: func.func @dot
func.func @dot(%a: tensor<32x16xf16>, %b: tensor<16x64xf16>, %c: tensor<32x64xf32>, %h: tensor<32x64xf16>,
               %x: tensor<2x16x32xf32>, %y: tensor<2x32x16xf32>, %z: tensor<2x16x16xf32>,
               %i: tensor<16x32xi8>, %j: tensor<32x16xi8>, %k: tensor<16x16xi32>) {
  // CHECK: kiln.dot %{{.*}}, %{{.*}}, %{{.*}} {inputPrecision = #kiln.precision<ieee>} : tensor<32x16xf16> * tensor<16x64xf16> -> tensor<32x64xf32>
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<32x16xf16> * tensor<16x64xf16> -> tensor<32x64xf32>
  // CHECK: kiln.dot %{{.*}}, %{{.*}}, %{{.*}} {inputPrecision = #kiln.precision<ieee>} : tensor<32x16xf16> * tensor<16x64xf16> -> tensor<32x64xf16>
  %e = kiln.dot %a, %b, %h {inputPrecision = #kiln.precision<ieee>} : tensor<32x16xf16> * tensor<16x64xf16> -> tensor<32x64xf16>
  // CHECK: kiln.dot %{{.*}}, %{{.*}}, %{{.*}} {inputPrecision = #kiln.precision<tf32>} : tensor<2x16x32xf32> * tensor<2x32x16xf32> -> tensor<2x16x16xf32>
  %f = kiln.dot %x, %y, %z {inputPrecision = #kiln.precision<tf32>} : tensor<2x16x32xf32> * tensor<2x32x16xf32> -> tensor<2x16x16xf32>
  // CHECK: kiln.dot %{{.*}}, %{{.*}}, %{{.*}} {inputPrecision = #kiln.precision<tf32x3>, maxNumImpreciseAcc = 32 : i32} : tensor<2x16x32xf32> * tensor<2x32x16xf32> -> tensor<2x16x16xf32>
  %g = kiln.dot %x, %y, %z {inputPrecision = #kiln.precision<tf32x3>, maxNumImpreciseAcc = 32 : i32} : tensor<2x16x32xf32> * tensor<2x32x16xf32> -> tensor<2x16x16xf32>
  // CHECK: kiln.dot %{{.*}}, %{{.*}}, %{{.*}} {inputPrecision = #kiln.precision<ieee>} : tensor<16x32xi8> * tensor<32x16xi8> -> tensor<16x16xi32>
  %l = kiln.dot %i, %j, %k {inputPrecision = #kiln.precision<ieee>} : tensor<16x32xi8> * tensor<32x16xi8> -> tensor<16x16xi32>
  return
}

// A user's guarantee survives printing and parsing, as a scalar or a block of
// conditions.
// CHECK-LABEL: func.func @assume
// CHECK: %[[R:.*]] = arith.remsi %arg0, %{{.*}} : i32
// CHECK: %[[C:.*]] = arith.cmpi eq, %[[R]], %{{.*}} : i32
// CHECK: kiln.assume %[[C]] : i1
// CHECK: kiln.assume %arg1 : tensor<16xi1>
func.func @assume(%n: i32, %conds: tensor<16xi1>) {
  %c16 = arith.constant 16 : i32
  %c0 = arith.constant 0 : i32
  %r = arith.remsi %n, %c16 : i32
  %ok = arith.cmpi eq, %r, %c0 : i32
  kiln.assume %ok : i1
  kiln.assume %conds : tensor<16xi1>
  return
}

// Pointer casts, on scalars and blocks.
// CHECK-LABEL: func.func @pointer_casts
// CHECK: %[[A:.*]] = kiln.ptr_to_int %arg0 : !kiln.ptr<f32> -> i64
// CHECK: kiln.int_to_ptr %[[A]] : i64 -> !kiln.ptr<i32>
// CHECK: kiln.ptr_bitcast %arg1 : tensor<64x!kiln.ptr<f32>> -> tensor<64x!kiln.ptr<i8>>
// CHECK: %[[B:.*]] = kiln.ptr_to_int %arg1 : tensor<64x!kiln.ptr<f32>> -> tensor<64xi64>
// CHECK: kiln.int_to_ptr %[[B]] : tensor<64xi64> -> tensor<64x!kiln.ptr<f64>>
func.func @pointer_casts(%p: !kiln.ptr<f32>, %ps: tensor<64x!kiln.ptr<f32>>) {
  %a = kiln.ptr_to_int %p : !kiln.ptr<f32> -> i64
  %q = kiln.int_to_ptr %a : i64 -> !kiln.ptr<i32>
  %bytes = kiln.ptr_bitcast %ps : tensor<64x!kiln.ptr<f32>> -> tensor<64x!kiln.ptr<i8>>
  %as = kiln.ptr_to_int %ps : tensor<64x!kiln.ptr<f32>> -> tensor<64xi64>
  %qs = kiln.int_to_ptr %as : tensor<64xi64> -> tensor<64x!kiln.ptr<f64>>
  return
}

// Rounding to 8-bit floats, on scalars and blocks.
// CHECK-LABEL: func.func @f32_to_float8
// CHECK: kiln.f32_to_float8 %arg0 {format = #kiln.float8<e4m3>} : f32 -> i8
// CHECK: kiln.f32_to_float8 %arg1 {format = #kiln.float8<e5m2>} : tensor<64xf32> -> tensor<64xi8>
func.func @f32_to_float8(%x: f32, %xs: tensor<64xf32>) -> (i8, tensor<64xi8>) {
  %b = kiln.f32_to_float8 %x {format = #kiln.float8<e4m3>} : f32 -> i8
  %bs = kiln.f32_to_float8 %xs {format = #kiln.float8<e5m2>} : tensor<64xf32> -> tensor<64xi8>
  return %b, %bs : i8, tensor<64xi8>
}

// The tensor map of a descriptor made in the kernel.
// CHECK-LABEL: func.func @make_tensor_map
// CHECK: kiln.make_tensor_map %arg0[%arg1, %arg2] strides [%arg2] {nanPadding} : !kiln.ptr<f16>
func.func @make_tensor_map(%q: !kiln.ptr<f16>, %rows: i64, %cols: i64) -> !kiln.ptr<i8, 0> {
  %m = kiln.make_tensor_map %q[%rows, %cols] strides [%cols] {nanPadding} : !kiln.ptr<f16>
  return %m : !kiln.ptr<i8, 0>
}
