// RUN: kiln-opt %s -split-input-file -kiln-expand-histograms | FileCheck %s

// Every value is compared with every bin; the one-hot block, widened to
// i32, is summed along the values.

// CHECK-LABEL: func.func @histogram
// CHECK: %[[BINS:.*]] = kiln.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
// CHECK: %[[COL:.*]] = kiln.expand_dims %arg0 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
// CHECK: %[[VALUES:.*]] = kiln.broadcast %[[COL]] : tensor<64x1xi32> -> tensor<64x16xi32>
// CHECK: %[[ROW:.*]] = kiln.expand_dims %[[BINS]] {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
// CHECK: %[[ALL:.*]] = kiln.broadcast %[[ROW]] : tensor<1x16xi32> -> tensor<64x16xi32>
// CHECK: %[[HIT:.*]] = arith.cmpi eq, %[[VALUES]], %[[ALL]] : tensor<64x16xi32>
// CHECK: %[[ONE:.*]] = arith.extui %[[HIT]] : tensor<64x16xi1> to tensor<64x16xi32>
// CHECK: %[[SUM:.*]] = kiln.reduce(%[[ONE]]) {axis = 0 : i32} : (tensor<64x16xi32>) -> tensor<16xi32>
// CHECK: arith.addi
// CHECK: return %[[SUM]]
// CHECK-NOT: kiln.histogram
func.func @histogram(%x: tensor<64xi32>) -> tensor<16xi32> {
  %h = kiln.histogram %x : tensor<64xi32> -> tensor<16xi32>
  return %h : tensor<16xi32>
}

// -----

// A mask is and'ed with the hits, row by row; i8 values are widened to i32
// as signed integers, and bins of i64 values are i64.

// CHECK-LABEL: func.func @masked_narrow
// CHECK: arith.extsi %arg0 : tensor<32xi8> to tensor<32xi32>
// CHECK: arith.cmpi eq
// CHECK: %[[MCOL:.*]] = kiln.expand_dims %arg1 {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
// CHECK: %[[MASK:.*]] = kiln.broadcast %[[MCOL]] : tensor<32x1xi1> -> tensor<32x8xi1>
// CHECK: arith.andi %{{.*}}, %[[MASK]] : tensor<32x8xi1>
// CHECK-LABEL: func.func @wide
// CHECK: arith.extsi %{{.*}} : tensor<8xi32> to tensor<8xi64>
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : tensor<32x8xi64>
func.func @masked_narrow(%x: tensor<32xi8>, %m: tensor<32xi1>) -> tensor<8xi32> {
  %h = kiln.histogram %x, %m : tensor<32xi8>, tensor<32xi1> -> tensor<8xi32>
  return %h : tensor<8xi32>
}
func.func @wide(%x: tensor<32xi64>) -> tensor<8xi32> {
  %h = kiln.histogram %x : tensor<32xi64> -> tensor<8xi32>
  return %h : tensor<8xi32>
}
