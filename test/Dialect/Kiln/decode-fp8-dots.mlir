// RUN: kiln-opt %s -split-input-file -kiln-decode-fp8-dots | FileCheck %s

// Each operand is decoded from its own format (e4m3: bias 7, 3 mantissa
// bits, NaN at 0x7f; e5m2: bias 15, 2 mantissa bits, infinities and NaNs
// from 0x7c) to f32 and narrowed exactly to f16; the dot then multiplies
// f16 operands, its other attributes kept.
// CHECK-LABEL: func.func @mixed
// CHECK-SAME: (%[[A:.*]]: tensor<16x32xi8>, %[[B:.*]]: tensor<32x16xi8>
// CHECK: %[[AW:.*]] = arith.extui %[[A]] : tensor<16x32xi8> to tensor<16x32xi32>
// CHECK: arith.shli {{.*}} : tensor<16x32xi32>
// CHECK: arith.uitofp
// CHECK: arith.cmpi eq, {{.*}} : tensor<16x32xi32>
// CHECK: %[[AF:.*]] = arith.bitcast {{.*}} : tensor<16x32xi32> to tensor<16x32xf32>
// CHECK: %[[AH:.*]] = arith.truncf %[[AF]] : tensor<16x32xf32> to tensor<16x32xf16>
// CHECK: arith.extui %[[B]] : tensor<32x16xi8> to tensor<32x16xi32>
// CHECK: arith.cmpi uge
// CHECK: %[[BF:.*]] = arith.bitcast {{.*}} : tensor<32x16xi32> to tensor<32x16xf32>
// CHECK: %[[BH:.*]] = arith.truncf %[[BF]] : tensor<32x16xf32> to tensor<32x16xf16>
// CHECK: kiln.dot %[[AH]], %[[BH]], %{{.*}} {inputPrecision = #kiln.precision<ieee>, maxNumImpreciseAcc = 32 : i32} : tensor<16x32xf16> * tensor<32x16xf16> -> tensor<16x16xf32>
// CHECK-NOT: Float8
func.func @mixed(%a: tensor<16x32xi8>, %b: tensor<32x16xi8>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %d = kiln.dot %a, %b, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e5m2>, inputPrecision = #kiln.precision<ieee>, maxNumImpreciseAcc = 32 : i32} : tensor<16x32xi8> * tensor<32x16xi8> -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}

// -----

// Other dots are left alone, i8 ones included.
// CHECK-LABEL: func.func @int8
// CHECK-NOT: arith.
// CHECK: kiln.dot %arg0, %arg1, %arg2 {inputPrecision = #kiln.precision<ieee>} : tensor<16x32xi8> * tensor<32x16xi8> -> tensor<16x16xi32>
func.func @int8(%a: tensor<16x32xi8>, %b: tensor<32x16xi8>, %c: tensor<16x16xi32>) -> tensor<16x16xi32> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x32xi8> * tensor<32x16xi8> -> tensor<16x16xi32>
  return %d : tensor<16x16xi32>
}
