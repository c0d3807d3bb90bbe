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
