// RUN: kiln-opt %s -split-input-file -kiln-gpu-pipeline-loads="num-stages=3" -kiln-gpu-warp-specialize | FileCheck %s

// A loop of synchronous dots whose operands the TMA unit copies: the copies
// (those before the loop and those in it) go to a producer region first in
// the kernel, with the scalar code they are computed from, issued by warp 4
// (the first after the kernel's 4); a second set of mbarriers ("empty", one
// arrival per consumer warp) follows the first, both initialized before
// the region for every warp. The producer's loop waits for a slot's
// release before each refill that runs (not before the masked-off copies
// past the loop's end, whose mbarriers the consumers may have invalidated
// by then), its parity starting at 1 (a fresh mbarrier's previous phase
// counts as complete) and flipping when the slot it writes wraps round. The kernel's warps wait for a slot's copies alone
// (perThread) and release the slot after the dot that reads it.
// CHECK-LABEL: func.func @tma
// CHECK-NEXT: kiln_gpu.init_tma_barriers {allWarps, arrivals = 2 : i32, count = 3 : i32, offset = 24576 : i64}
// CHECK-NEXT: kiln_gpu.init_tma_barriers {allWarps, arrivals = 4 : i32, count = 3 : i32, offset = 24600 : i64}
// CHECK-NEXT: kiln_gpu.producer attributes {warps = 4 : i32} {
// CHECK-COUNT-4: kiln_gpu.async_tma_copy {{.*}}warp = 4 : i32}
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %[[PARITY:.*]] = %[[ONE]])
// CHECK: %[[RUNS:.*]] = arith.cmpi slt
// CHECK: scf.if %[[RUNS]] {
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %[[WRITE:.*]], %[[PARITY]] {barriers = 24600 : i64, perThread}
// CHECK-NEXT: }
// CHECK-COUNT-2: kiln_gpu.async_tma_copy {{.*}}, %[[WRITE]], %[[RUNS]] {{.*}}warp = 4 : i32}
// CHECK: %[[LAST:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[WRAPS:.*]] = arith.cmpi eq, %[[WRITE]], %[[LAST]]
// CHECK: %[[FLIPPED:.*]] = arith.xori %[[PARITY]], %{{.*}}
// CHECK-NEXT: %[[NEXT:.*]] = arith.select %[[WRAPS]], %[[FLIPPED]], %[[PARITY]]
// CHECK-NEXT: scf.yield %{{.*}}, %[[NEXT]]
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NOT: kiln_gpu.async_tma_copy
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[SLOT:.*]] = %{{.*}}, %[[PHASE:.*]] = %{{.*}})
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %[[SLOT]], %[[PHASE]] {barriers = 24576 : i64, perThread}
// CHECK-NOT: kiln_gpu.async_tma_copy
// CHECK: kiln.dot
// CHECK-NEXT: kiln_gpu.release_slot %[[SLOT]] {barriers = 24600 : i64}
// CHECK-NOT: kiln_gpu.async_tma_copy
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
    } {kiln.warp_specialize = true}
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// An accumulating dot, asynchronous (kiln_gpu.wgmma_buffer): each waits for
// the one before the previous one, so an iteration releases the slot the
// previous iteration read, from the second iteration on.
// CHECK-LABEL: func.func @tma_async
// CHECK: kiln_gpu.producer
// CHECK: scf.for %[[I:.*]] = %[[LB:[^ ]*]] to {{.*}} iter_args({{.*}}, %[[SLOT:.*]] = %{{.*}}, %[[PHASE:.*]] = %{{.*}})
// CHECK: kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 0 : i32
// CHECK-NEXT: %[[LATER:.*]] = arith.cmpi ne, %[[I]], %[[LB]]
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[SLOT]], %{{.*}}
// CHECK: %[[LAST:.*]] = arith.constant 2 : i32
// CHECK: %[[BEFORE:.*]] = arith.subi %[[SLOT]], %{{.*}}
// CHECK-NEXT: %[[PREVIOUS:.*]] = arith.select %[[FIRST]], %[[LAST]], %[[BEFORE]]
// CHECK-NEXT: scf.if %[[LATER]] {
// CHECK-NEXT: kiln_gpu.release_slot %[[PREVIOUS]] {barriers = 24600 : i64}
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @tma_async(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapA: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %row: i32, %col: i32) attributes {kiln.kernel} {
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
      %d = kiln.dot %x, %yt, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      scf.yield %d : tensor<64x64xf32, #blocked>
    } {kiln.warp_specialize = true}
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// No request, and not attention's loop of two chained dots on 8 warps
// (which gets one unasked): no producer.
// CHECK-LABEL: func.func @no_request
// CHECK-NOT: kiln_gpu.producer
// CHECK-NOT: release_slot
// CHECK: kiln_gpu.wait_tma_barrier %{{.*}}, %{{.*}} {barriers = 24576 : i64}
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @no_request(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapA: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %row: i32, %col: i32) attributes {kiln.kernel} {
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

// Declined (`warp_specialize=False`): no producer.
// CHECK-LABEL: func.func @declined
// CHECK-NOT: kiln_gpu.producer
// CHECK-NOT: release_slot
// CHECK: kiln_gpu.wait_tma_barrier %{{.*}}, %{{.*}} {barriers = 24576 : i64}
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @declined(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapA: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %row: i32, %col: i32) attributes {kiln.kernel} {
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
    } {kiln.warp_specialize = false}
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// Operands copied by cp.async (pointers, no tensor map): nothing to hand
// to a producer; the loop stays as kiln-gpu-pipeline-loads made it.
// CHECK-LABEL: func.func @cp_async
// CHECK-NOT: kiln_gpu.producer
// CHECK: kiln_gpu.async_copy
// CHECK-NOT: release_slot
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @cp_async(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapA: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %row: i32, %col: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %pa0 = kiln.splat %a : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %ra = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #kiln_gpu.slice<{dim = 0, parent = #blocked2}>>
    %ea = kiln.expand_dims %ra {axis = 0 : i32} : tensor<32xi32, #kiln_gpu.slice<{dim = 0, parent = #blocked2}>> -> tensor<1x32xi32, #blocked2>
    %ba = kiln.broadcast %ea : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %pa = kiln.addptr %pa0, %ba : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %pb0 = kiln.splat %b : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %pb = kiln.addptr %pb0, %ba : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%sum = %zero) -> (tensor<64x64xf32, #blocked>) : i32 {
      %k = arith.muli %i, %c32 : i32
      %x = kiln.load %pa : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %y = kiln.load %pb : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
      %d = kiln.dot %x, %yt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      %s = arith.addf %sum, %d : tensor<64x64xf32, #blocked>
      scf.yield %s : tensor<64x64xf32, #blocked>
    } {kiln.warp_specialize = true}
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// Two TMA loops in a row (a causal attention's two): one producer runs a
// copy loop for each, in order, both filling one ring of slots and
// waiting on one set of "empty" mbarriers. The second loop gets "full"
// mbarriers of its own (after the "empty" ones), initialized with the
// others before the producer branches off; the producer waits for a
// release before each of its first copies too (the first loop's reads of
// the slot), with the parity that the slot's earlier fills give: the
// first loop filled slot s ceil((trips - s) / 3) times. Each loop
// releases its slots on the shared "empty" mbarriers, and its "full" ones
// are invalidated after it.
// CHECK-LABEL: func.func @two_loops
// CHECK-NEXT: kiln_gpu.init_tma_barriers {allWarps, arrivals = 2 : i32, count = 3 : i32, offset = 24576 : i64}
// CHECK-NEXT: kiln_gpu.init_tma_barriers {allWarps, arrivals = 2 : i32, count = 3 : i32, offset = 24624 : i64}
// CHECK-NEXT: kiln_gpu.init_tma_barriers {allWarps, arrivals = 4 : i32, count = 3 : i32, offset = 24600 : i64}
// CHECK-NEXT: kiln_gpu.producer attributes {warps = 4 : i32} {
// CHECK-COUNT-4: kiln_gpu.async_tma_copy {{.*}}barriers = 24576 : i64{{.*}}warp = 4 : i32}
// CHECK: scf.for
// CHECK: kiln_gpu.wait_tma_barrier {{.*}}{barriers = 24600 : i64, perThread}
// CHECK-COUNT-2: kiln_gpu.async_tma_copy {{.*}}barriers = 24576 : i64{{.*}}warp = 4 : i32}
// CHECK: scf.yield
// CHECK: %[[TRIPS:.*]] = arith.divsi
// CHECK: %[[TWO:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[PLUS:.*]] = arith.addi %[[TRIPS]], %[[TWO]]
// CHECK-NEXT: %[[LESS:.*]] = arith.subi %[[PLUS]], %[[SLOT0:.*]] : i32
// CHECK-NEXT: %[[FILLS:.*]] = arith.divsi %[[LESS]],
// CHECK: %[[BIT:.*]] = arith.andi %{{.*}}, %[[ONE:.*]] : i32
// CHECK-NEXT: %[[PARITY:.*]] = arith.xori %[[BIT]], %[[ONE]] : i32
// CHECK-NEXT: scf.if
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %[[SLOT0]], %[[PARITY]] {barriers = 24600 : i64, perThread}
// CHECK: kiln_gpu.async_tma_copy {{.*}}barriers = 24624 : i64{{.*}}warp = 4 : i32}
// CHECK: scf.for
// CHECK: kiln_gpu.wait_tma_barrier {{.*}}{barriers = 24600 : i64, perThread}
// CHECK-COUNT-2: kiln_gpu.async_tma_copy {{.*}}barriers = 24624 : i64{{.*}}warp = 4 : i32}
// CHECK-NOT: kiln_gpu.async_tma_copy
// CHECK: kiln_gpu.wait_tma_barrier {{.*}}{barriers = 24576 : i64, perThread}
// CHECK: kiln_gpu.release_slot {{.*}}{barriers = 24600 : i64}
// CHECK: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 24576 : i64}
// CHECK: kiln_gpu.wait_tma_barrier {{.*}}{barriers = 24624 : i64, perThread}
// CHECK: kiln_gpu.release_slot {{.*}}{barriers = 24600 : i64}
// CHECK: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 24624 : i64}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 24600 : i64}
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @two_loops(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapA: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %m: i32, %row: i32, %col: i32) attributes {kiln.kernel} {
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
    } {kiln.warp_specialize = true}
    %acc2 = scf.for %i = %n to %m step %c1 iter_args(%sum = %acc) -> (tensor<64x64xf32, #blocked>) : i32 {
      %k = arith.muli %i, %c32 : i32
      %x = kiln.load %pa tensor_map %mapA[%row, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %y = kiln.load %pb tensor_map %mapB[%col, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
      %d = kiln.dot %x, %yt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      %s = arith.mulf %sum, %d : tensor<64x64xf32, #blocked>
      scf.yield %s : tensor<64x64xf32, #blocked>
    } {kiln.warp_specialize = true}
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc2 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// A block the TMA unit copies once before the loop (attention's Q), into a
// slot of its own on an mbarrier of its own: the producer issues that copy
// too, first, ahead of the ring's; its mbarrier is initialized with the
// ring's before the producer branches off, and the kernel's warps wait for
// it before their loop and invalidate it after.
// CHECK-LABEL: func.func @tma_invariant
// CHECK-NEXT: kiln_gpu.init_tma_barriers {allWarps, arrivals = 1 : i32, count = 1 : i32, offset = 16384 : i64}
// CHECK-NEXT: kiln_gpu.init_tma_barriers {allWarps, arrivals = 1 : i32, count = 3 : i32, offset = 16392 : i64}
// CHECK-NEXT: kiln_gpu.init_tma_barriers {allWarps, arrivals = 4 : i32, count = 3 : i32, offset = 16416 : i64}
// CHECK-NEXT: kiln_gpu.producer attributes {warps = 4 : i32} {
// CHECK-NOT: kiln_gpu.async_tma_copy
// CHECK: kiln_gpu.async_tma_copy {{.*}}barriers = 16384 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, {{.*}}tile = tensor<64x32xf16>, warp = 4 : i32}
// CHECK: kiln_gpu.async_tma_copy {{.*}}barriers = 16392 : i64, {{.*}}warp = 4 : i32}
// CHECK-NOT: barriers = 16384 : i64, buffer
// CHECK-NOT: kiln_gpu.init_tma_barriers
// CHECK: kiln_gpu.wait_tma_barrier %{{.*}}, %{{.*}} {barriers = 16384 : i64, perThread}
// CHECK: scf.for
// CHECK: kiln_gpu.release_slot
// CHECK: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 16392 : i64}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 16416 : i64}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 1 : i32, offset = 16384 : i64}
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @tma_invariant(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapA: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %row: i32, %col: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %pa = kiln.splat %a : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %pb = kiln.splat %b : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %x = kiln.load %pa tensor_map %mapA[%row, %c0] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%sum = %zero) -> (tensor<64x64xf32, #blocked>) : i32 {
      %k = arith.muli %i, %c32 : i32
      %y = kiln.load %pb tensor_map %mapB[%col, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
      %d = kiln.dot %x, %yt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      %s = arith.addf %sum, %d : tensor<64x64xf32, #blocked>
      scf.yield %s : tensor<64x64xf32, #blocked>
    } {kiln.warp_specialize = true}
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// The TMA side of a version of kiln-tensor-map-pointer-loads: the mbarriers
// are initialized before the producer branches off, as for a loop of the
// kernel's body; the producer computes the version's condition and issues
// the copies where it holds. The mbarriers are invalidated after the
// version, on either side (one span of slots for the allocation of shared
// memory); the other side, through pointers, which no producer feeds,
// invalidates them first and initializes them again last, since its own
// copies use the same bytes.
// CHECK-LABEL: func.func @versioned
// CHECK-NEXT: kiln_gpu.init_tma_barriers {allWarps, arrivals = 2 : i32, count = 3 : i32, offset = 24576 : i64}
// CHECK-NEXT: kiln_gpu.init_tma_barriers {allWarps, arrivals = 4 : i32, count = 3 : i32, offset = 24600 : i64}
// CHECK-NEXT: kiln_gpu.producer attributes {warps = 4 : i32} {
// CHECK: %[[COPIES:.*]] = arith.cmpi sgt, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: scf.if %[[COPIES]] {
// CHECK-COUNT-4: kiln_gpu.async_tma_copy {{.*}}warp = 4 : i32}
// CHECK: scf.for
// CHECK: kiln_gpu.wait_tma_barrier {{.*}} {barriers = 24600 : i64, perThread}
// CHECK-COUNT-2: kiln_gpu.async_tma_copy {{.*}}warp = 4 : i32}
// CHECK: %[[OK:.*]] = arith.cmpi sgt, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: scf.if %[[OK]]
// CHECK-NOT: kiln_gpu.async_tma_copy
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[SLOT:.*]] = %{{.*}}, %[[PHASE:.*]] = %{{.*}})
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %[[SLOT]], %[[PHASE]] {barriers = 24576 : i64, perThread}
// CHECK: kiln.dot
// CHECK-NEXT: kiln_gpu.release_slot %[[SLOT]] {barriers = 24600 : i64}
// CHECK-NOT: kiln_gpu.inval_tma_barriers
// CHECK: } else {
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 24576 : i64}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 24600 : i64}
// CHECK: scf.for
// CHECK-NEXT: kiln.load
// CHECK-NOT: kiln_gpu.release_slot
// CHECK: kiln_gpu.init_tma_barriers {arrivals = 2 : i32, count = 3 : i32, offset = 24576 : i64}
// CHECK-NEXT: kiln_gpu.init_tma_barriers {arrivals = 4 : i32, count = 3 : i32, offset = 24600 : i64}
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {kiln.tensor_map_version}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 24576 : i64}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 24600 : i64}
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @versioned(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapA: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %row: i32, %col: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %pa = kiln.splat %a : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %pb = kiln.splat %b : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %ok = arith.cmpi sgt, %row, %c0 : i32
    %acc = scf.if %ok -> (tensor<64x64xf32, #blocked>) {
      %mapped = scf.for %i = %c0 to %n step %c1 iter_args(%sum = %zero) -> (tensor<64x64xf32, #blocked>) : i32 {
        %k = arith.muli %i, %c32 : i32
        %x = kiln.load %pa tensor_map %mapA[%row, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
        %y = kiln.load %pb tensor_map %mapB[%col, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
        %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
        %d = kiln.dot %x, %yt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
        %s = arith.addf %sum, %d : tensor<64x64xf32, #blocked>
        scf.yield %s : tensor<64x64xf32, #blocked>
      } {kiln.warp_specialize = true}
      scf.yield %mapped : tensor<64x64xf32, #blocked>
    } else {
      %step = arith.constant dense<32> : tensor<64x32xi32, #blocked2>
      %pointers:3 = scf.for %i = %c0 to %n step %c1 iter_args(%sum = %zero, %qa = %pa, %qb = %pb) -> (tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32x!kiln.ptr<f16>, #blocked2>) : i32 {
        %x = kiln.load %qa : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
        %y = kiln.load %qb : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
        %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
        %d = kiln.dot %x, %yt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
        %s = arith.addf %sum, %d : tensor<64x64xf32, #blocked>
        %na = kiln.addptr %qa, %step : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
        %nb = kiln.addptr %qb, %step : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
        scf.yield %s, %na, %nb : tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32x!kiln.ptr<f16>, #blocked2>
      } {kiln.warp_specialize = true}
      scf.yield %pointers#0 : tensor<64x64xf32, #blocked>
    } {kiln.tensor_map_version}
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}
