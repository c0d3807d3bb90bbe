// The registered NVIDIA pipelines, as the JIT runs them.
// RUN: kiln-opt %s --kiln-nvidia-to-kiln-gpu='num-warps=4 target=sm_90a' | FileCheck %s --check-prefix=GPU
// RUN: kiln-opt %s --kiln-nvidia-to-llvm-all='num-warps=4 target=sm_90a' | FileCheck %s --check-prefix=LLVM
// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-nvidia-to-kiln-gpu{num-warps=2 target=sm_80})' | FileCheck %s --check-prefix=W2

// The helper is inlined and removed; accessed blocks get 16-byte runs.
// GPU: #[[B:.*]] = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// GPU: module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32}
// GPU-NOT: func.func private @offsets
// GPU-LABEL: func.func public @scale
// GPU: kiln.load %{{.*}}, %{{.*}} : tensor<1024x!kiln.ptr<f32>, #[[B]]> -> tensor<1024xf32, #[[B]]>
// GPU: kiln.store

// LLVM-LABEL: llvm.func @scale
// LLVM-SAME: nvvm.kernel
// LLVM: ld.global.v4.b32
// LLVM: st.global.v4.b32

// W2: kiln_gpu.num_warps = 2 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>

func.func private @offsets(%pid: i32) -> tensor<1024xi32> {
  %c1024 = arith.constant 1024 : i32
  %base = arith.muli %pid, %c1024 : i32
  %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %bs = kiln.splat %base : i32 -> tensor<1024xi32>
  %offs = arith.addi %bs, %r : tensor<1024xi32>
  return %offs : tensor<1024xi32>
}

func.func public @scale(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %n: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
  %pid = kiln.program_id {axis = 0 : i32} : i32
  %offs = func.call @offsets(%pid) : (i32) -> tensor<1024xi32>
  %ns = kiln.splat %n : i32 -> tensor<1024xi32>
  %mask = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>>
  %p = kiln.addptr %xs, %offs : tensor<1024x!kiln.ptr<f32>>, tensor<1024xi32>
  %v = kiln.load %p, %mask : tensor<1024x!kiln.ptr<f32>> -> tensor<1024xf32>
  %two = arith.constant dense<2.0> : tensor<1024xf32>
  %w = arith.mulf %v, %two : tensor<1024xf32>
  kiln.store %p, %w, %mask : tensor<1024x!kiln.ptr<f32>>, tensor<1024xf32>
  return
}
