// RUN: kiln-opt %s -split-input-file -kiln-expand-tensor-map-loads | FileCheck %s

// A [64, 32] box at (%row, %col) of a map over %p with rows of %stride
// elements: element (i, j) at %p + (%row + i) * %stride + %col + j, read
// where 0 <= %row + i < %rows and 0 <= %col + j < %cols, zero elsewhere,
// whatever the load's own pointers.
// CHECK-LABEL: func.func @box
// CHECK-SAME: (%[[P:[a-z0-9]+]]: !kiln.ptr<f16>, %[[ROWS:[a-z0-9]+]]: i64, %[[COLS:[a-z0-9]+]]: i64, %[[STRIDE:[a-z0-9]+]]: i64, %[[ROW:[a-z0-9]+]]: i32, %[[COL:[a-z0-9]+]]: i32
// CHECK: %[[I:.*]] = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
// CHECK: %[[I2:.*]] = kiln.expand_dims %[[I]] {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
// CHECK: %[[I64:.*]] = arith.extsi %[[I2]] : tensor<64x1xi32> to tensor<64x1xi64>
// CHECK: %[[ROW64:.*]] = arith.extsi %[[ROW]] : i32 to i64
// CHECK: %[[ROWS1:.*]] = kiln.splat %[[ROW64]] : i64 -> tensor<64x1xi64>
// CHECK: %[[X:.*]] = arith.addi %[[I64]], %[[ROWS1]] : tensor<64x1xi64>
// CHECK: %[[XB:.*]] = kiln.broadcast %[[X]] : tensor<64x1xi64> -> tensor<64x32xi64>
// CHECK: kiln.splat %[[ROWS]] : i64 -> tensor<64x32xi64>
// CHECK: %[[XS:.*]] = arith.muli %[[XB]], %{{.*}} : tensor<64x32xi64>
// CHECK: %[[J:.*]] = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
// CHECK: kiln.expand_dims %[[J]] {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
// CHECK: arith.extsi %[[COL]] : i32 to i64
// CHECK: kiln.splat %[[COLS]] : i64 -> tensor<64x32xi64>
// CHECK-NEXT: arith.cmpi sge
// CHECK-NEXT: arith.cmpi slt
// CHECK-NEXT: arith.andi
// CHECK-NEXT: %[[INSIDE:.*]] = arith.andi %{{.*}}, %{{.*}} : tensor<64x32xi1>
// CHECK-NEXT: %[[OFFSETS:.*]] = arith.addi %[[XS]], %{{.*}} : tensor<64x32xi64>
// CHECK-NEXT: %[[BASE:.*]] = kiln.splat %[[P]] : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>>
// CHECK: %[[PTRS:.*]] = kiln.addptr %[[BASE]], %[[OFFSETS]]
// CHECK: %[[ZERO:.*]] = kiln.splat %{{.*}} : f16 -> tensor<64x32xf16>
// CHECK: kiln.load %[[PTRS]], %[[INSIDE]], %[[ZERO]] : tensor<64x32x!kiln.ptr<f16>> -> tensor<64x32xf16>
// CHECK-NOT: tensor_map %
func.func @box(%p: !kiln.ptr<f16>, %rows: i64, %cols: i64, %stride: i64, %row: i32, %col: i32,
               %ptrs: tensor<64x32x!kiln.ptr<f16>>) -> tensor<64x32xf16> {
  %map = kiln.make_tensor_map %p[%rows, %cols] strides [%stride] : !kiln.ptr<f16>
  %b = kiln.load %ptrs tensor_map %map[%row, %col] : tensor<64x32x!kiln.ptr<f16>> -> tensor<64x32xf16>
  return %b : tensor<64x32xf16>
}

// -----

// With NaN padding, elements outside the tensor read NaN.
// CHECK-LABEL: func.func @nan
// CHECK: %[[NAN:.*]] = arith.constant 0x7E00 : f16
// CHECK: %[[FILL:.*]] = kiln.splat %[[NAN]] : f16 -> tensor<16x16xf16>
// CHECK: kiln.load %{{.*}}, %{{.*}}, %[[FILL]]
func.func @nan(%p: !kiln.ptr<f16>, %n: i64, %row: i32, %ptrs: tensor<16x16x!kiln.ptr<f16>>) -> tensor<16x16xf16> {
  %map = kiln.make_tensor_map %p[%n, %n] strides [%n] {nanPadding} : !kiln.ptr<f16>
  %b = kiln.load %ptrs tensor_map %map[%row, %row] : tensor<16x16x!kiln.ptr<f16>> -> tensor<16x16xf16>
  return %b : tensor<16x16xf16>
}
