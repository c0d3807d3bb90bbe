// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu | FileCheck %s

// An f32 dot keeps its operands as they are: they go to stack slots, and a
// loop over the 32 result rows runs a loop over K = 16 that multiplies one
// element of `a`, splat, into a row of `b` and adds it to the result row,
// carried in a register. The IR does not grow with M, N or K.

// CHECK-LABEL: llvm.func @dot_f32
// CHECK: %[[STACK:.*]] = llvm.intr.stacksave : !llvm.ptr
// CHECK: %[[A:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 64 : i64}
// CHECK: llvm.store %{{.*}}, %[[A]] {alignment = 64 : i64} : vector<512xf32>, !llvm.ptr
// CHECK: %[[B:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 64 : i64}
// CHECK: llvm.store %{{.*}}, %[[B]] {alignment = 64 : i64} : vector<1024xf32>, !llvm.ptr
// CHECK: %[[C:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 64 : i64}
// CHECK: llvm.store %{{.*}}, %[[C]] {alignment = 64 : i64} : vector<2048xf32>, !llvm.ptr
// CHECK: ^[[ROWS:.*]](%[[ROW:.*]]: i64):
// CHECK: llvm.icmp "slt" %[[ROW]], %{{.*}} : i64
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<64xf32>
// CHECK: ^[[INNER:.*]](%[[J:.*]]: i64, %[[SUM:.*]]: vector<64xf32>):
// CHECK: %[[AE:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK: %[[BR:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<64xf32>
// CHECK: %[[SPLAT:.*]] = llvm.shufflevector
// CHECK: %[[NEXT:.*]] = llvm.intr.fmuladd(%[[SPLAT]], %[[BR]], %[[SUM]]) : (vector<64xf32>, vector<64xf32>, vector<64xf32>) -> vector<64xf32>
// CHECK: llvm.br ^[[INNER]](%{{.*}}, %[[NEXT]] : i64, vector<64xf32>)
// CHECK: llvm.store %[[SUM]], %{{.*}} {alignment = 4 : i64} : vector<64xf32>, !llvm.ptr
// CHECK: llvm.br ^[[ROWS]]
// CHECK: %[[D:.*]] = llvm.load %[[C]] {alignment = 64 : i64} : !llvm.ptr -> vector<2048xf32>
// CHECK: llvm.intr.stackrestore %[[STACK]] : !llvm.ptr
// CHECK: llvm.return %[[D]]
func.func @dot_f32(%a: tensor<32x16xf32>, %b: tensor<16x64xf32>, %c: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
  return %d : tensor<32x64xf32>
}

// -----

// f16 operands are widened to f32 one row at a time into slots of their
// own; an f16 accumulator row is widened before the inner loop and rounded
// back to f16 after it.

// CHECK-LABEL: llvm.func @dot_f16_acc
// CHECK: llvm.store %{{.*}} : vector<256xf16>, !llvm.ptr
// CHECK: llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> vector<16xf16>
// CHECK: llvm.fpext %{{.*}} : vector<16xf16> to vector<16xf32>
// CHECK: llvm.store %{{.*}} {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
// CHECK: llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> vector<16xf16>
// CHECK: llvm.fpext %{{.*}} : vector<16xf16> to vector<16xf32>
// CHECK: llvm.intr.fmuladd
// CHECK: %[[ROUNDED:.*]] = llvm.fptrunc %{{.*}} : vector<16xf32> to vector<16xf16>
// CHECK: llvm.store %[[ROUNDED]], %{{.*}} {alignment = 2 : i64} : vector<16xf16>, !llvm.ptr
// CHECK: llvm.load %{{.*}} {alignment = 64 : i64} : !llvm.ptr -> vector<256xf16>
func.func @dot_f16_acc(%a: tensor<16x16xf16>, %c: tensor<16x16xf16>) -> tensor<16x16xf16> {
  %d = kiln.dot %a, %a, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf16>
  return %d : tensor<16x16xf16>
}

// -----

// tf32 rounds the f32 operands to 10 mantissa bits, to nearest with ties
// away from zero: add half of the dropped 13 bits (0x1000), clear them
// (0xFFFFE000 = -8192), and keep NaNs as they are.

// CHECK-LABEL: llvm.func @dot_tf32
// CHECK: %[[BITS:.*]] = llvm.bitcast %[[X:.*]] : vector<16xf32> to vector<16xi32>
// CHECK: %[[HALF:.*]] = llvm.mlir.constant(dense<4096> : vector<16xi32>)
// CHECK: %[[UP:.*]] = llvm.add %[[BITS]], %[[HALF]]
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(dense<-8192> : vector<16xi32>)
// CHECK: %[[KEPT:.*]] = llvm.and %[[UP]], %[[MASK]]
// CHECK: %[[R:.*]] = llvm.bitcast %[[KEPT]] : vector<16xi32> to vector<16xf32>
// CHECK: %[[NAN:.*]] = llvm.fcmp "uno" %[[X]], %[[X]]
// CHECK: llvm.select %[[NAN]], %[[X]], %[[R]]
// CHECK: llvm.intr.fmuladd
func.func @dot_tf32(%a: tensor<16x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %d = kiln.dot %a, %a, %c {inputPrecision = #kiln.precision<tf32>} : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}

// -----

// i8 operands are sign-extended to i32 and multiply-add in i32 (wrapping).

// CHECK-LABEL: llvm.func @dot_i8
// CHECK: llvm.sext %{{.*}} : vector<32xi8> to vector<32xi32>
// CHECK: llvm.sext %{{.*}} : vector<16xi8> to vector<16xi32>
// CHECK: %[[P:.*]] = llvm.mul %{{.*}}, %{{.*}} : vector<16xi32>
// CHECK: llvm.add %[[P]], %{{.*}} : vector<16xi32>
// CHECK-NOT: llvm.intr.fmuladd
func.func @dot_i8(%a: tensor<16x32xi8>, %b: tensor<32x16xi8>, %c: tensor<16x16xi32>) -> tensor<16x16xi32> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x32xi8> * tensor<32x16xi8> -> tensor<16x16xi32>
  return %d : tensor<16x16xi32>
}

// -----

// A batched dot runs one loop over all 2 x 16 result rows; the rows of `b`
// of a result row's batch start at (row / 16) * 32.

// CHECK-LABEL: llvm.func @dot_batched
// CHECK: %[[M:.*]] = llvm.mlir.constant(16 : i64)
// CHECK-NEXT: %[[BATCH:.*]] = llvm.udiv %{{.*}}, %[[M]] : i64
// CHECK-NEXT: %[[K:.*]] = llvm.mlir.constant(32 : i64)
// CHECK-NEXT: llvm.mul %[[BATCH]], %[[K]] : i64
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<2048xf32>
func.func @dot_batched(%a: tensor<2x16x32xbf16>, %b: tensor<2x32x64xbf16>, %c: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<2x16x32xbf16> * tensor<2x32x64xbf16> -> tensor<2x16x64xf32>
  return %d : tensor<2x16x64xf32>
}
