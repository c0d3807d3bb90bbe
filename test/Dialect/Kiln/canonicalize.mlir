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
