// The registered NVIDIA pipeline places shared memory before the conversion
// and erases needless barriers after it, as the JIT runs it.
// RUN: kiln-opt %s --kiln-nvidia-to-llvm-all='num-warps=4 target=sm_80' | FileCheck %s

// A sum of 4096 elements on 4 warps: one f32 partial per warp in shared
// memory (16 bytes). The barrier before the partials are written goes
// (nothing before it touches shared memory), the one between the writes
// and the reads stays, and no barrier keeps its kiln.shared_only mark.
// CHECK: module attributes {{{.*}}kiln_gpu.shared = 16 : i32
// CHECK: llvm.mlir.global external @kiln_scratch() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK-LABEL: llvm.func @sum
// CHECK-NOT: nvvm.barrier0
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK-NOT: nvvm.barrier0
// CHECK: llvm.return
// CHECK-NOT: kiln.shared_only
func.func public @sum(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %out: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 4096 : i32} : tensor<4096xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<4096x!kiln.ptr<f32>>
  %p = kiln.addptr %xs, %r : tensor<4096x!kiln.ptr<f32>>, tensor<4096xi32>
  %v = kiln.load %p : tensor<4096x!kiln.ptr<f32>> -> tensor<4096xf32>
  %s = kiln.reduce(%v) {axis = 0 : i32} : (tensor<4096xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    kiln.reduce.return %c : f32
  }
  kiln.store %out, %s : !kiln.ptr<f32>, f32
  return
}
