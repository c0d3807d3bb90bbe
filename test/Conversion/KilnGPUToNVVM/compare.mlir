// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm -kiln-nvvm-erase-needless-barriers | FileCheck %s

#b = #kiln_gpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// `offs < n` with n a multiple of 16 (a function argument's divisibility)
// is the same for each thread's 8 consecutive elements: one compare per
// run, its result spread over the run.
// CHECK-LABEL: llvm.func @mask_runs
// CHECK: %[[CMP:.*]] = llvm.icmp "slt" %{{.*}}, %{{.*}} : vector<16xi32>
// CHECK: llvm.shufflevector %[[CMP]], %[[CMP]] [0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8] : vector<16xi1>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
  func.func public @mask_runs(%out: !kiln.ptr<i32> {kiln.divisibility = 16 : i32}, %n: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 2048 : i32} : tensor<2048xi32, #b>
    %ns = kiln.splat %n : i32 -> tensor<2048xi32, #b>
    %m = arith.cmpi slt, %r, %ns : tensor<2048xi32, #b>
    %os = kiln.splat %out : !kiln.ptr<i32> -> tensor<2048x!kiln.ptr<i32>, #b>
    %op = kiln.addptr %os, %r : tensor<2048x!kiln.ptr<i32>, #b>, tensor<2048xi32, #b>
    kiln.store %op, %r, %m : tensor<2048x!kiln.ptr<i32>, #b>, tensor<2048xi32, #b>
    return
  }
}

// -----

#b = #kiln_gpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Against an argument of unknown divisibility every element is compared.
// CHECK-LABEL: llvm.func @unknown_bound
// CHECK: %[[CMP:.*]] = llvm.icmp "slt" %{{.*}}, %{{.*}} : vector<16xi32>
// CHECK-NOT: llvm.shufflevector %[[CMP]]
// CHECK: llvm.return
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
  func.func public @unknown_bound(%out: !kiln.ptr<i32> {kiln.divisibility = 16 : i32}, %n: i32) attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 2048 : i32} : tensor<2048xi32, #b>
    %ns = kiln.splat %n : i32 -> tensor<2048xi32, #b>
    %m = arith.cmpi slt, %r, %ns : tensor<2048xi32, #b>
    %os = kiln.splat %out : !kiln.ptr<i32> -> tensor<2048x!kiln.ptr<i32>, #b>
    %op = kiln.addptr %os, %r : tensor<2048x!kiln.ptr<i32>, #b>, tensor<2048xi32, #b>
    kiln.store %op, %r, %m : tensor<2048x!kiln.ptr<i32>, #b>, tensor<2048xi32, #b>
    return
  }
}
