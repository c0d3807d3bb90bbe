// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu | FileCheck %s

// ptr_to_int and int_to_ptr are LLVM's ptrtoint and inttoptr on the block's
// vector; ptr_bitcast is no instruction. The access plans follow the axis
// info: through an f32 -> i32 pointer cast the block stays one contiguous
// access of its first address (of the same parameter); consecutive
// integers made into i8 pointers are consecutive bytes, one vector load;
// made into i32 pointers they are one byte apart, a gather.
// CHECK: module attributes {kiln_cpu.sites = [{element_bytes = 4 : i32, loc = {{.*}}, param = 0 : i32, store = false}, {element_bytes = 4 : i32, loc = {{.*}}, param = 2 : i32, store = true}]}
// CHECK-LABEL: llvm.func @pointer_casts(
// CHECK: llvm.intr.masked.load %{{.*}}, %{{.*}}, %{{.*}} {alignment = 16 : i32} : (!llvm.ptr, vector<16xi1>, vector<16xi32>) -> vector<16xi32>
// CHECK: %[[ADDR:.*]] = llvm.add %{{.*}}, %{{.*}} : vector<16xi64>
// CHECK: %[[BYTES:.*]] = llvm.inttoptr %[[ADDR]] : vector<16xi64> to vector<16x!llvm.ptr>
// CHECK: llvm.extractelement %[[BYTES]]
// CHECK: llvm.intr.masked.load %{{.*}}, %{{.*}}, %{{.*}} {alignment = 16 : i32} : (!llvm.ptr, vector<16xi1>, vector<16xi8>) -> vector<16xi8>
// CHECK: %[[WORDS:.*]] = llvm.inttoptr %[[ADDR]] : vector<16xi64> to vector<16x!llvm.ptr>
// CHECK: llvm.intr.masked.gather %[[WORDS]]
// CHECK: llvm.intr.masked.store
func.func @pointer_casts(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %base: i64 {kiln.divisibility = 16 : i32}, %out: !kiln.ptr<i32> {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<16x!kiln.ptr<f32>>
  %p = kiln.addptr %xs, %r : tensor<16x!kiln.ptr<f32>>, tensor<16xi32>
  %f = kiln.ptr_bitcast %p : tensor<16x!kiln.ptr<f32>> -> tensor<16x!kiln.ptr<i32>>
  %v = kiln.load %f : tensor<16x!kiln.ptr<i32>> -> tensor<16xi32>
  %r64 = arith.extsi %r : tensor<16xi32> to tensor<16xi64>
  %bs = kiln.splat %base : i64 -> tensor<16xi64>
  %addr = arith.addi %bs, %r64 : tensor<16xi64>
  %bytes = kiln.int_to_ptr %addr : tensor<16xi64> -> tensor<16x!kiln.ptr<i8>>
  %c = kiln.load %bytes : tensor<16x!kiln.ptr<i8>> -> tensor<16xi8>
  %words = kiln.int_to_ptr %addr : tensor<16xi64> -> tensor<16x!kiln.ptr<i32>>
  %w = kiln.load %words : tensor<16x!kiln.ptr<i32>> -> tensor<16xi32>
  %ce = arith.extsi %c : tensor<16xi8> to tensor<16xi32>
  %s = arith.addi %v, %ce : tensor<16xi32>
  %t = arith.addi %s, %w : tensor<16xi32>
  %os = kiln.splat %out : !kiln.ptr<i32> -> tensor<16x!kiln.ptr<i32>>
  %op = kiln.addptr %os, %r : tensor<16x!kiln.ptr<i32>>, tensor<16xi32>
  kiln.store %op, %t : tensor<16x!kiln.ptr<i32>>, tensor<16xi32>
  return
}

// -----

// Scalars: a pointer's address and back, as another pointer type.
// CHECK-LABEL: llvm.func @scalar_casts(
// CHECK: %[[A:.*]] = llvm.ptrtoint %{{.*}} : !llvm.ptr to i64
// CHECK: %[[Q:.*]] = llvm.inttoptr %[[A]] : i64 to !llvm.ptr
// CHECK: llvm.return %[[Q]] : !llvm.ptr
func.func @scalar_casts(%p: !kiln.ptr<f32>) -> !kiln.ptr<i8> {
  %a = kiln.ptr_to_int %p : !kiln.ptr<f32> -> i64
  %q = kiln.int_to_ptr %a : i64 -> !kiln.ptr<f16>
  %b = kiln.ptr_bitcast %q : !kiln.ptr<f16> -> !kiln.ptr<i8>
  return %b : !kiln.ptr<i8>
}
