// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm -kiln-nvvm-erase-needless-barriers | FileCheck %s

#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#b2t = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>

// A transpose goes through the shared-memory scratch, sized for the source:
// each thread stores its element at its row-major index, a barrier, then
// each thread loads the element its result coordinates name. The barrier
// that would keep the stores from overtaking an earlier use of the scratch
// is dropped: nothing in the function accessed shared memory before.

// CHECK: module attributes {{{.*}}kiln_gpu.shared = 512 : i32
// CHECK: llvm.mlir.global external @kiln_scratch() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK-LABEL: llvm.func @trans
// CHECK-NOT: nvvm.barrier0
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @trans(%a: tensor<16x8xf32, #b2>) -> tensor<8x16xf32, #b2t> {
    %t = kiln.trans %a {order = array<i32: 1, 0>} : tensor<16x8xf32, #b2> -> tensor<8x16xf32, #b2t>
    return %t : tensor<8x16xf32, #b2t>
  }
}

// -----

// Two transposes: the second's stores wait at a barrier until every
// thread has loaded the first's result from the same bytes.
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#b2t = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: llvm.func @trans_twice
// CHECK-NOT: nvvm.barrier0
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: nvvm.barrier0
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @trans_twice(%a: tensor<16x8xf32, #b2>) -> tensor<16x8xf32, #b2> {
    %t = kiln.trans %a {order = array<i32: 1, 0>} : tensor<16x8xf32, #b2> -> tensor<8x16xf32, #b2t>
    %u = kiln.trans %t {order = array<i32: 1, 0>} : tensor<8x16xf32, #b2t> -> tensor<16x8xf32, #b2>
    return %u : tensor<16x8xf32, #b2>
  }
}

// -----

// A layout change of a pointer block moves the pointers through the
// scratch as LLVM pointers (8 bytes each): runs of two as one 16-byte store,
// then one load per element in the column-major result layout.
#src = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#dst = #kiln_gpu.blocked<{sizePerThread = [2, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [0, 1]}>
// CHECK-LABEL: llvm.func @convert_pointers
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<2x!llvm.ptr<1>>, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<1>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @convert_pointers(%p: tensor<32x8x!kiln.ptr<i8>, #src>) -> tensor<32x8x!kiln.ptr<i8>, #dst> {
    %q = kiln_gpu.convert_layout %p : tensor<32x8x!kiln.ptr<i8>, #src> -> tensor<32x8x!kiln.ptr<i8>, #dst>
    return %q : tensor<32x8x!kiln.ptr<i8>, #dst>
  }
}
