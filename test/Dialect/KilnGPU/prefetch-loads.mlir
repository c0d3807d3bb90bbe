// RUN: kiln-opt %s -split-input-file -kiln-gpu-prefetch-loads="num-stages=3" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-gpu-prefetch-loads="num-stages=1" | FileCheck %s --check-prefix=ONE

#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>

// The load of the dot operand moves ahead: one before the loop (masked by
// lb < ub), one at the top of the body from the advanced pointers (masked
// by i + step < ub); the loop carries the loaded block.
// CHECK-LABEL: func.func @operand
// CHECK: %[[FIRST:.*]] = kiln.load
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[N:.*]] step %[[S:.*]] iter_args(%[[ACC:.*]] = %{{.*}}, %[[P:.*]] = %{{.*}}, %[[A:.*]] = %[[FIRST]])
// CHECK: %[[Q:.*]] = kiln.addptr %[[P]]
// CHECK: %[[NI:.*]] = arith.addi %[[I]], %[[S]]
// CHECK: %[[MORE:.*]] = arith.cmpi slt, %[[NI]], %[[N]]
// CHECK: %[[M:.*]] = kiln.splat %[[MORE]]
// CHECK: %[[NEXT:.*]] = kiln.load %[[Q]], %[[M]]
// CHECK: kiln.dot %[[A]], %[[A]], %[[ACC]]
// CHECK: scf.yield %{{.*}}, %{{.*}}, %[[NEXT]]
// ONE-LABEL: func.func @operand
// ONE: scf.for
// ONE: kiln.load
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @operand(%p0: tensor<32x32x!kiln.ptr<f16>, #b>, %n: i32) -> tensor<32x32xf32, #b> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32, #b>
  %step = arith.constant dense<32> : tensor<32x32xi32, #b>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero, %p = %p0) -> (tensor<32x32xf32, #b>, tensor<32x32x!kiln.ptr<f16>, #b>) : i32 {
    %a = kiln.load %p : tensor<32x32x!kiln.ptr<f16>, #b> -> tensor<32x32xf16, #b>
    %d = kiln.dot %a, %a, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<32x32xf16, #b> * tensor<32x32xf16, #b> -> tensor<32x32xf32, #b>
    %q = kiln.addptr %p, %step : tensor<32x32x!kiln.ptr<f16>, #b>, tensor<32x32xi32, #b>
    scf.yield %d, %q : tensor<32x32xf32, #b>, tensor<32x32x!kiln.ptr<f16>, #b>
  }
  return %r#0 : tensor<32x32xf32, #b>
}
}

// -----

// A loop that stores is left alone: the store may write what a later
// iteration loads.
// CHECK: // -----
#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @stores
// CHECK: scf.for
// CHECK-NEXT: kiln.load
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @stores(%p: tensor<32x32x!kiln.ptr<f16>, #b>, %out: tensor<32x32x!kiln.ptr<f32>, #b>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32, #b>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<32x32xf32, #b>) : i32 {
    %a = kiln.load %p : tensor<32x32x!kiln.ptr<f16>, #b> -> tensor<32x32xf16, #b>
    %d = kiln.dot %a, %a, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<32x32xf16, #b> * tensor<32x32xf16, #b> -> tensor<32x32xf32, #b>
    kiln.store %out, %d : tensor<32x32x!kiln.ptr<f32>, #b>, tensor<32x32xf32, #b>
    scf.yield %d : tensor<32x32xf32, #b>
  }
  return
}
}

// -----

// A block read by something other than a dot (a row of the attention
// backward's M) stays where it is, also when it is small and the loop's dot
// operand comes from a pipeline slot.
// CHECK: // -----
#b = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#row = #kiln_gpu.slice<{dim = 1, parent = #b}>
// CHECK-LABEL: func.func @small_block
// CHECK: scf.for
// CHECK-NEXT: kiln.load %{{.*}} : tensor<32x!kiln.ptr<f32>
// ONE-LABEL: func.func @small_block
// ONE: scf.for
// ONE: kiln.load
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @small_block(%rows0: tensor<32x!kiln.ptr<f32>, #row>, %big: tensor<32x32x!kiln.ptr<f32>, #b>, %x: tensor<32x32xf16, #b>, %n: i32) -> tensor<32x32xf32, #b> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32, #b>
  %step = arith.constant dense<32> : tensor<32xi32, #row>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero, %rows = %rows0) -> (tensor<32x32xf32, #b>, tensor<32x!kiln.ptr<f32>, #row>) : i32 {
    %m = kiln.load %rows : tensor<32x!kiln.ptr<f32>, #row> -> tensor<32xf32, #row>
    %y = kiln_gpu.shared_operand %c0 {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 2048, slots = 1>} : tensor<32x32xf16, #b>
    %d = kiln.dot %x, %y, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<32x32xf16, #b> * tensor<32x32xf16, #b> -> tensor<32x32xf32, #b>
    %m2 = kiln.expand_dims %m {axis = 1 : i32} : tensor<32xf32, #row> -> tensor<32x1xf32, #b>
    %mb = kiln.broadcast %m2 : tensor<32x1xf32, #b> -> tensor<32x32xf32, #b>
    %z = kiln.load %big : tensor<32x32x!kiln.ptr<f32>, #b> -> tensor<32x32xf32, #b>
    %e = arith.addf %d, %mb : tensor<32x32xf32, #b>
    %f = arith.addf %e, %z : tensor<32x32xf32, #b>
    %next = kiln.addptr %rows, %step : tensor<32x!kiln.ptr<f32>, #row>, tensor<32xi32, #row>
    scf.yield %f, %next : tensor<32x32xf32, #b>, tensor<32x!kiln.ptr<f32>, #row>
  }
  return %r#0 : tensor<32x32xf32, #b>
}
}
