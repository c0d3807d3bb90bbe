// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm | FileCheck %s

// On sm_90a each pair of a thread's elements is one conversion (PTX's
// cvt.rn.satfinite.e5m2x2.f32): the pair's first element lands in the low
// byte, its second in the high byte.
#b = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-LABEL: llvm.func @pairs
// CHECK: %[[P:.*]] = nvvm.convert.f32x2.to.f8x2 %{{.*}}, %{{.*}} {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16(f8E5M2)
// CHECK: %[[LO:.*]] = llvm.trunc %[[P]] : i16 to i8
// CHECK: %[[HI:.*]] = llvm.lshr %[[P]]
// CHECK: %[[HIGH:.*]] = llvm.trunc %[[HI]] : i16 to i8
// CHECK: nvvm.convert.f32x2.to.f8x2 {{.*}} : i16(f8E5M2)
// CHECK-NOT: nvvm.convert.f32x2.to.f8x2
// CHECK: %[[V0:.*]] = llvm.insertelement %[[LO]], %{{.*}} : vector<4xi8>
// CHECK: llvm.insertelement %[[HIGH]], %[[V0]]
// CHECK-NOT: nvvm.convert.f32x2.to.f8x2
// CHECK-NOT: kiln.f32_to_float8
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
  func.func public @pairs(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %out: !kiln.ptr<i8> {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32, #b>
    %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<512x!kiln.ptr<f32>, #b>
    %p = kiln.addptr %xs, %r : tensor<512x!kiln.ptr<f32>, #b>, tensor<512xi32, #b>
    %v = kiln.load %p : tensor<512x!kiln.ptr<f32>, #b> -> tensor<512xf32, #b>
    %bytes = kiln.f32_to_float8 %v {format = #kiln.float8<e5m2>} : tensor<512xf32, #b> -> tensor<512xi8, #b>
    %os = kiln.splat %out : !kiln.ptr<i8> -> tensor<512x!kiln.ptr<i8>, #b>
    %q = kiln.addptr %os, %r : tensor<512x!kiln.ptr<i8>, #b>, tensor<512xi32, #b>
    kiln.store %q, %bytes : tensor<512x!kiln.ptr<i8>, #b>, tensor<512xi8, #b>
    return
  }
}

// -----

// A scalar, and a thread's odd element count (here one): the element is
// converted as both halves of a pair, and the low byte kept.
#b = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-LABEL: llvm.func @odd
// CHECK: %[[S:.*]] = nvvm.convert.f32x2.to.f8x2 %[[A:.*]], %[[A]] {{.*}} : i16(f8E4M3FN)
// CHECK: llvm.trunc %[[S]] : i16 to i8
// CHECK: %[[E:.*]] = llvm.extractelement %{{.*}} : vector<1xf32>
// CHECK: %[[V:.*]] = nvvm.convert.f32x2.to.f8x2 %[[E]], %[[E]] {{.*}} : i16(f8E4M3FN)
// CHECK: llvm.trunc %[[V]] : i16 to i8
// CHECK-NOT: llvm.lshr
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
  func.func public @odd(%a: f32, %v: tensor<128xf32, #b>, %out: !kiln.ptr<i8>) -> tensor<128xi8, #b> attributes {kiln.kernel} {
    %s = kiln.f32_to_float8 %a {format = #kiln.float8<e4m3>} : f32 -> i8
    kiln.store %out, %s : !kiln.ptr<i8>, i8
    %bytes = kiln.f32_to_float8 %v {format = #kiln.float8<e4m3>} : tensor<128xf32, #b> -> tensor<128xi8, #b>
    return %bytes : tensor<128xi8, #b>
  }
}
