// RUN: kiln-opt %s -split-input-file -kiln-expand-float8-rounding -canonicalize | FileCheck %s

// e5m2 (bias 15, 2 mantissa bits): the sign moved to bit 7; the magnitude
// rounded to nearest even by dropping 21 bits and rebiased by
// (127 - 15) << 2 = 448; below the smallest normal ((128 - 15) << 23) the
// significand shifted by a clamped amount; saturation at 0x7b (57344); a
// NaN (magnitude above 0x7f800000) becomes 0x7f whatever its sign; the byte
// is the low 8 bits.
// CHECK-LABEL: func.func @e5m2
// CHECK-DAG: %[[SIGN_MASK:.*]] = arith.constant dense<128> : tensor<64xi32>
// CHECK-DAG: %[[REBIAS:.*]] = arith.constant dense<448> : tensor<64xi32>
// CHECK-DAG: %[[SMALLEST_NORMAL:.*]] = arith.constant dense<947912704> : tensor<64xi32>
// CHECK-DAG: %[[MAX_FINITE:.*]] = arith.constant dense<123> : tensor<64xi32>
// CHECK-DAG: %[[INF:.*]] = arith.constant dense<2139095040> : tensor<64xi32>
// CHECK-DAG: %[[NAN:.*]] = arith.constant dense<127> : tensor<64xi32>
// CHECK: %[[BITS:.*]] = arith.bitcast %{{.*}} : tensor<64xf32> to tensor<64xi32>
// CHECK: %[[SIGN:.*]] = arith.andi %{{.*}}, %[[SIGN_MASK]]
// CHECK: %[[NORMAL:.*]] = arith.subi %{{.*}}, %[[REBIAS]]
// CHECK: %[[TINY:.*]] = arith.cmpi ult, %[[MAGNITUDE:.*]], %[[SMALLEST_NORMAL]]
// CHECK: %[[CODE:.*]] = arith.select %[[TINY]], %{{.*}}, %[[NORMAL]]
// CHECK: %[[SATURATED:.*]] = arith.minui %[[CODE]], %[[MAX_FINITE]]
// CHECK: %[[SIGNED:.*]] = arith.ori %[[SATURATED]], %[[SIGN]]
// CHECK: %[[IS_NAN:.*]] = arith.cmpi ugt, %[[MAGNITUDE]], %[[INF]]
// CHECK: %[[FINAL:.*]] = arith.select %[[IS_NAN]], %[[NAN]], %[[SIGNED]]
// CHECK: %[[BYTE:.*]] = arith.trunci %[[FINAL]] : tensor<64xi32> to tensor<64xi8>
// CHECK: return %[[BYTE]]
// CHECK-NOT: kiln.f32_to_float8
func.func @e5m2(%x: tensor<64xf32>) -> tensor<64xi8> {
  %b = kiln.f32_to_float8 %x {format = #kiln.float8<e5m2>} : tensor<64xf32> -> tensor<64xi8>
  return %b : tensor<64xi8>
}

// -----

// e4m3 (bias 7, 3 mantissa bits, no infinities): rebias (127 - 7) << 3 =
// 960, saturation at 0x7e (448), on a scalar.
// CHECK-LABEL: func.func @e4m3
// CHECK-DAG: arith.constant 960 : i32
// CHECK-DAG: %[[MAX_FINITE:.*]] = arith.constant 126 : i32
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.minui %{{.*}}, %[[MAX_FINITE]] : i32
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK-NOT: kiln.f32_to_float8
func.func @e4m3(%x: f32) -> i8 {
  %b = kiln.f32_to_float8 %x {format = #kiln.float8<e4m3>} : f32 -> i8
  return %b : i8
}
