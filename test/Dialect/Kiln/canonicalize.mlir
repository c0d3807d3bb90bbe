// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s

// CHECK-LABEL: func.func @splat_of_constant
func.func @splat_of_constant() -> tensor<8xi32> {
  // CHECK: %[[C:.*]] = arith.constant dense<7> : tensor<8xi32>
  // CHECK: return %[[C]]
  %c = arith.constant 7 : i32
  %s = kiln.splat %c : i32 -> tensor<8xi32>
  return %s : tensor<8xi32>
}

// -----

// CHECK-LABEL: func.func @addptr_zero
func.func @addptr_zero(%p: tensor<8x!kiln.ptr<f16>>) -> tensor<8x!kiln.ptr<f16>> {
  // CHECK-NOT: kiln.addptr
  // CHECK: return %arg0
  %z = arith.constant dense<0> : tensor<8xi32>
  %q = kiln.addptr %p, %z : tensor<8x!kiln.ptr<f16>>, tensor<8xi32>
  return %q : tensor<8x!kiln.ptr<f16>>
}

// -----

// CHECK-LABEL: func.func @broadcast_identity
func.func @broadcast_identity(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NOT: kiln.broadcast
  // CHECK: return %arg0
  %b = kiln.broadcast %a : tensor<4x8xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_constant
func.func @broadcast_constant() -> tensor<4x8xf32> {
  // CHECK: %[[C:.*]] = arith.constant dense<2.000000e+00> : tensor<4x8xf32>
  // CHECK: return %[[C]]
  %c = arith.constant dense<2.0> : tensor<1x8xf32>
  %b = kiln.broadcast %c : tensor<1x8xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// An address through an integer and back, or through pointers of other
// element types, is the pointer it started from.
// CHECK-LABEL: func.func @pointer_cast_chains
// CHECK-NOT: kiln.int_to_ptr
// CHECK: %[[I:.*]] = kiln.ptr_bitcast %arg0 : tensor<8x!kiln.ptr<f16>> -> tensor<8x!kiln.ptr<i32>>
// CHECK-NOT: kiln.ptr_bitcast
// CHECK: return %arg0, %[[I]], %arg1
func.func @pointer_cast_chains(%p: tensor<8x!kiln.ptr<f16>>, %a: i64)
    -> (tensor<8x!kiln.ptr<f16>>, tensor<8x!kiln.ptr<i32>>, i64) {
  %as = kiln.ptr_to_int %p : tensor<8x!kiln.ptr<f16>> -> tensor<8xi64>
  %back = kiln.int_to_ptr %as : tensor<8xi64> -> tensor<8x!kiln.ptr<f16>>
  %b = kiln.ptr_bitcast %back : tensor<8x!kiln.ptr<f16>> -> tensor<8x!kiln.ptr<i8>>
  %i = kiln.ptr_bitcast %b : tensor<8x!kiln.ptr<i8>> -> tensor<8x!kiln.ptr<i32>>
  %q = kiln.int_to_ptr %a : i64 -> !kiln.ptr<f32>
  %same = kiln.ptr_bitcast %q : !kiln.ptr<f32> -> !kiln.ptr<f32>
  %a2 = kiln.ptr_to_int %same : !kiln.ptr<f32> -> i64
  return %back, %i, %a2 : tensor<8x!kiln.ptr<f16>>, tensor<8x!kiln.ptr<i32>>, i64
}

// -----

// Rounding constants to fp8 folds: to nearest even (1.125 -> 1.0 and
// 1.375 -> 1.5 in e5m2; half the smallest subnormal -> 0, three quarters
// of it -> it), saturating (1e9 and -inf -> +-57344 in e5m2, 1000 -> 448
// in e4m3), any NaN -> 0x7f; splats too.
// CHECK-LABEL: func.func @f32_to_float8_constants
// CHECK-DAG: %[[ONE:.*]] = arith.constant 60 : i8
// CHECK-DAG: %[[ONE_AND_HALF:.*]] = arith.constant 62 : i8
// CHECK-DAG: %[[MAX:.*]] = arith.constant 123 : i8
// CHECK-DAG: %[[MINUS_MAX:.*]] = arith.constant -5 : i8
// CHECK-DAG: %[[NAN:.*]] = arith.constant 127 : i8
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK-DAG: %[[TINY:.*]] = arith.constant 1 : i8
// CHECK-DAG: %[[E4M3_MAX:.*]] = arith.constant 126 : i8
// CHECK-DAG: %[[SPLAT:.*]] = arith.constant dense<56> : tensor<16xi8>
// CHECK-NOT: kiln.f32_to_float8
// CHECK: return %[[ONE]], %[[ONE_AND_HALF]], %[[MAX]], %[[MINUS_MAX]], %[[NAN]], %[[NAN]], %[[ZERO]], %[[TINY]], %[[E4M3_MAX]], %[[SPLAT]]
func.func @f32_to_float8_constants() -> (i8, i8, i8, i8, i8, i8, i8, i8, i8, tensor<16xi8>) {
  %c1 = arith.constant 1.125 : f32
  %c2 = arith.constant 1.375 : f32
  %c3 = arith.constant 1.0e9 : f32
  %c4 = arith.constant 0xFF800000 : f32
  %c5 = arith.constant 0x7FC00000 : f32
  %c6 = arith.constant 0xFFC00000 : f32
  %c7 = arith.constant 7.62939453125e-06 : f32
  %c8 = arith.constant 1.1444091796875e-05 : f32
  %c9 = arith.constant 1000.0 : f32
  %c10 = arith.constant dense<1.0> : tensor<16xf32>
  %b1 = kiln.f32_to_float8 %c1 {format = #kiln.float8<e5m2>} : f32 -> i8
  %b2 = kiln.f32_to_float8 %c2 {format = #kiln.float8<e5m2>} : f32 -> i8
  %b3 = kiln.f32_to_float8 %c3 {format = #kiln.float8<e5m2>} : f32 -> i8
  %b4 = kiln.f32_to_float8 %c4 {format = #kiln.float8<e5m2>} : f32 -> i8
  %b5 = kiln.f32_to_float8 %c5 {format = #kiln.float8<e4m3>} : f32 -> i8
  %b6 = kiln.f32_to_float8 %c6 {format = #kiln.float8<e5m2>} : f32 -> i8
  %b7 = kiln.f32_to_float8 %c7 {format = #kiln.float8<e5m2>} : f32 -> i8
  %b8 = kiln.f32_to_float8 %c8 {format = #kiln.float8<e5m2>} : f32 -> i8
  %b9 = kiln.f32_to_float8 %c9 {format = #kiln.float8<e4m3>} : f32 -> i8
  %b10 = kiln.f32_to_float8 %c10 {format = #kiln.float8<e4m3>} : tensor<16xf32> -> tensor<16xi8>
  return %b1, %b2, %b3, %b4, %b5, %b6, %b7, %b8, %b9, %b10 : i8, i8, i8, i8, i8, i8, i8, i8, i8, tensor<16xi8>
}
