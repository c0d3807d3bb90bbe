// RUN: kiln-opt %s -split-input-file -kiln-gpu-pipeline-loads="num-stages=3" -kiln-gpu-release-tma-slots | FileCheck %s

// A loop of synchronous dots whose operands the TMA unit copies, which no
// producer feeds: a second set of mbarriers ("empty", one arrival per warp)
// follows the slots' own, initialized and invalidated with them. The
// warps wait for a slot's copies alone (perThread: no CTA barrier) and
// release the slot after the dot that reads it. Before the copies into
// the slot ahead (those that run), the first warp alone waits for the
// release of that slot's previous fill: the parity of the read slot's
// round, flipped unless the write slot has wrapped round behind it.
// CHECK-LABEL: func.func @tma
// CHECK: kiln_gpu.init_tma_barriers {arrivals = 2 : i32, count = 3 : i32, offset = 24576 : i64}
// CHECK-NEXT: kiln_gpu.init_tma_barriers {arrivals = 4 : i32, count = 3 : i32, offset = 24600 : i64}
// CHECK-COUNT-4: kiln_gpu.async_tma_copy {{.*}}barriers = 24576 : i64
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[SLOT:.*]] = %{{.*}}, %[[PHASE:.*]] = %{{.*}})
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %[[SLOT]], %[[PHASE]] {barriers = 24576 : i64, perThread}
// CHECK: kiln.dot
// CHECK-NEXT: kiln_gpu.release_slot %[[SLOT]] {barriers = 24600 : i64}
// CHECK: %[[SAME_ROUND:.*]] = arith.cmpi ugt, %[[WRITE:.*]], %[[SLOT]] : i32
// CHECK-NEXT: %[[FLIP:.*]] = arith.extui %[[SAME_ROUND]] : i1 to i32
// CHECK-NEXT: %[[PARITY:.*]] = arith.xori %[[PHASE]], %[[FLIP]] : i32
// CHECK-NEXT: scf.if %[[RUNS:.*]] {
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %[[WRITE]], %[[PARITY]] {barriers = 24600 : i64, perThread, warp = 0 : i32}
// CHECK-NEXT: }
// CHECK-COUNT-2: kiln_gpu.async_tma_copy {{.*}}, %[[WRITE]], %[[RUNS]] {barriers = 24576 : i64
// CHECK: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 24576 : i64}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 24600 : i64}
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @tma(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapA: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %row: i32, %col: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %pa = kiln.splat %a : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %pb = kiln.splat %b : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%sum = %zero) -> (tensor<64x64xf32, #blocked>) : i32 {
      %k = arith.muli %i, %c32 : i32
      %x = kiln.load %pa tensor_map %mapA[%row, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %y = kiln.load %pb tensor_map %mapB[%col, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
      %d = kiln.dot %x, %yt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      %s = arith.addf %sum, %d : tensor<64x64xf32, #blocked>
      scf.yield %s : tensor<64x64xf32, #blocked>
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// The same loop through pointers: cp.async copies, left as they are.
// CHECK-LABEL: func.func @cp_async
// CHECK-NOT: kiln_gpu.release_slot
// CHECK-NOT: kiln_gpu.init_tma_barriers
// CHECK-NOT: perThread
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @cp_async(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %out: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %pa = kiln.splat %a : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %pb = kiln.splat %b : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%sum = %zero) -> (tensor<64x64xf32, #blocked>) : i32 {
      %x = kiln.load %pa : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %y = kiln.load %pb : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
      %d = kiln.dot %x, %yt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      %s = arith.addf %sum, %d : tensor<64x64xf32, #blocked>
      scf.yield %s : tensor<64x64xf32, #blocked>
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}
