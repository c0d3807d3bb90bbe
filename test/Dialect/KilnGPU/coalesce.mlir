// RUN: kiln-opt %s -split-input-file -kiln-gpu-coalesce | FileCheck %s

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// 16-byte-aligned, contiguous f32 accesses: four elements (16 bytes) per thread.
// CHECK: #[[B4:.*]] = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-LABEL: func.func @aligned_f32
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @aligned_f32(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}) {
  %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32, #b1>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>, #b1>
  %p = kiln.addptr %xs, %r : tensor<1024x!kiln.ptr<f32>, #b1>, tensor<1024xi32, #b1>
  // CHECK: kiln.load %{{.*}} : tensor<1024x!kiln.ptr<f32>, #[[B4]]> -> tensor<1024xf32, #[[B4]]>
  %v = kiln.load %p : tensor<1024x!kiln.ptr<f32>, #b1> -> tensor<1024xf32, #b1>
  kiln.store %p, %v : tensor<1024x!kiln.ptr<f32>, #b1>, tensor<1024xf32, #b1>
  return
}
}

// -----

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// fp16: eight elements make 16 bytes.
// CHECK: #kiln_gpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @aligned_f16(%x: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}) {
  %r = kiln.make_range {start = 0 : i32, end = 2048 : i32} : tensor<2048xi32, #b1>
  %xs = kiln.splat %x : !kiln.ptr<f16> -> tensor<2048x!kiln.ptr<f16>, #b1>
  %p = kiln.addptr %xs, %r : tensor<2048x!kiln.ptr<f16>, #b1>, tensor<2048xi32, #b1>
  %v = kiln.load %p : tensor<2048x!kiln.ptr<f16>, #b1> -> tensor<2048xf16, #b1>
  return
}
}

// -----

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Without an alignment proof a pointer is only element-aligned: one element.
// CHECK: #[[B1:.*]] = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-LABEL: func.func @unaligned
// CHECK: kiln.load %{{.*}} : tensor<1024x!kiln.ptr<f32>, #[[B1]]>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @unaligned(%x: !kiln.ptr<f32>) {
  %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32, #b1>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>, #b1>
  %p = kiln.addptr %xs, %r : tensor<1024x!kiln.ptr<f32>, #b1>, tensor<1024xi32, #b1>
  %v = kiln.load %p : tensor<1024x!kiln.ptr<f32>, #b1> -> tensor<1024xf32, #b1>
  return
}
}

// -----

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A block with fewer elements than threads cannot give a thread more than one.
// CHECK: #[[S1:.*]] = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-LABEL: func.func @small_block
// CHECK: kiln.load %{{.*}} : tensor<64x!kiln.ptr<f32>, #[[S1]]>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @small_block(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}) {
  %r = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32, #b1>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<64x!kiln.ptr<f32>, #b1>
  %p = kiln.addptr %xs, %r : tensor<64x!kiln.ptr<f32>, #b1>, tensor<64xi32, #b1>
  %v = kiln.load %p : tensor<64x!kiln.ptr<f32>, #b1> -> tensor<64xf32, #b1>
  return
}
}

// -----

// A column-major f16 block (contiguous down its 64 rows, columns 16-byte
// aligned apart): eight elements per thread run down the columns.
// CHECK: #[[COL:.*]] = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
// CHECK-LABEL: func.func @column_major
// CHECK: kiln.load %{{.*}} : tensor<64x32x!kiln.ptr<f16>, #[[COL]]> -> tensor<64x32xf16, #[[COL]]>
#blocked = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @column_major(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #blocked>
    %1 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #blocked>
    %2 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #blocked> -> tensor<64x1xi32, #blocked1>
    %3 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<32xi32, #blocked> -> tensor<1x32xi32, #blocked2>
    %4 = kiln.splat %arg1 : i32 -> tensor<1x32xi32, #blocked2>
    %5 = arith.muli %3, %4 : tensor<1x32xi32, #blocked2>
    %6 = kiln.broadcast %2 : tensor<64x1xi32, #blocked1> -> tensor<64x32xi32, #blocked2>
    %7 = kiln.broadcast %5 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %8 = arith.addi %6, %7 : tensor<64x32xi32, #blocked2>
    %9 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %10 = kiln.addptr %9, %8 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %11 = kiln.load %10 : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
    kiln.store %10, %11 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xf16, #blocked2>
    return
  }
}

