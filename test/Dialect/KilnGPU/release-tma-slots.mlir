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

// A loop through pointers whose two dots wait for themselves, carrying an
// accumulator 128 columns wide on two warpgroups (as attention at head
// dimension 128 on 8 warps does; see kiln-gpu-pipeline-loads): the threads copy
// its slots with cp.async and arrive on the slots' mbarriers
// (threadCopies). Its slots are released the same way, the row's block
// read counting as the slot's last reader; every thread copies, also past
// the loop's end (masked off), so every thread waits for the release
// before its copies, under no condition.
// CHECK-LABEL: func.func @thread_copies
// CHECK: kiln_gpu.init_tma_barriers {arrivals = 256 : i32, count = 3 : i32, offset = 50688 : i64}
// CHECK-NEXT: kiln_gpu.init_tma_barriers {arrivals = 8 : i32, count = 3 : i32, offset = 50712 : i64}
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[SLOT:.*]] = %{{.*}}, %[[PHASE:.*]] = %{{.*}})
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %[[SLOT]], %[[PHASE]] {barriers = 50688 : i64, perThread, threadCopies}
// CHECK: kiln.dot
// CHECK: %[[SAME_ROUND:.*]] = arith.cmpi ugt, %[[WRITE:.*]], %[[SLOT]] : i32
// CHECK-NEXT: %[[FLIP:.*]] = arith.extui %[[SAME_ROUND]] : i1 to i32
// CHECK-NEXT: %[[PARITY:.*]] = arith.xori %[[PHASE]], %[[FLIP]] : i32
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %[[WRITE]], %[[PARITY]] {barriers = 50712 : i64, perThread}
// CHECK-NEXT: kiln_gpu.async_copy %{{.*}}, %[[WRITE]]
// CHECK: kiln_gpu.async_copy_arrive %[[WRITE]], %{{.*}} {barriers = 50688 : i64}
// CHECK: kiln.dot
// CHECK-NEXT: kiln_gpu.load_block %[[SLOT]]
// CHECK-NEXT: kiln_gpu.release_slot %[[SLOT]] {barriers = 50712 : i64}
// CHECK: scf.yield
// CHECK: kiln_gpu.async_wait {pending = 0 : i32}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 50688 : i64}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 50712 : i64}
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice3 = #kiln_gpu.slice<{dim = 0, parent = #blocked}>
#slice4 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice5 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @thread_copies(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg3: i32 {kiln.divisibility = 16 : i32}, %rows: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %xa: tensor<128x32xf16, #blocked2>) attributes {kiln.kernel} {
    %inf = arith.constant dense<0x7F800000> : tensor<128xf32, #slice2>
    %c64_i32 = arith.constant 128 : i32
    %cst = arith.constant dense<128> : tensor<128x1xi32, #blocked>
    %cst_0 = arith.constant dense<4096> : tensor<32x128xi32, #blocked1>
    %cst_1 = arith.constant dense<32> : tensor<128x32xi32, #blocked2>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x32xf16, #blocked2>
    %cst_3 = arith.constant dense<128> : tensor<32x1xi32, #blocked1>
    %cst_4 = arith.constant dense<32> : tensor<128x1xi32, #blocked2>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<128x128xf32, #blocked>
    %c32_i32 = arith.constant 32 : i32
    %0 = kiln.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #slice>
    %1 = kiln.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #slice1>
    %2 = kiln.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #slice2>
    %3 = kiln.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #slice3>
    %4 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice4>
    %5 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice5>
    %6 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<128xi32, #slice> -> tensor<128x1xi32, #blocked2>
    %7 = kiln.expand_dims %2 {axis = 1 : i32} : tensor<128xi32, #slice2> -> tensor<128x1xi32, #blocked>
    %8 = arith.muli %6, %cst_4 : tensor<128x1xi32, #blocked2>
    %9 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<128x1x!kiln.ptr<f16>, #blocked2>
    %10 = kiln.addptr %9, %8 : tensor<128x1x!kiln.ptr<f16>, #blocked2>, tensor<128x1xi32, #blocked2>
    %11 = kiln.expand_dims %5 {axis = 0 : i32} : tensor<32xi32, #slice5> -> tensor<1x32xi32, #blocked2>
    %12 = kiln.broadcast %10 : tensor<128x1x!kiln.ptr<f16>, #blocked2> -> tensor<128x32x!kiln.ptr<f16>, #blocked2>
    %13 = kiln.broadcast %11 : tensor<1x32xi32, #blocked2> -> tensor<128x32xi32, #blocked2>
    %14 = kiln.addptr %12, %13 : tensor<128x32x!kiln.ptr<f16>, #blocked2>, tensor<128x32xi32, #blocked2>
    %15 = kiln.expand_dims %4 {axis = 1 : i32} : tensor<32xi32, #slice4> -> tensor<32x1xi32, #blocked1>
    %16 = arith.muli %15, %cst_3 : tensor<32x1xi32, #blocked1>
    %17 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<32x1x!kiln.ptr<f16>, #blocked1>
    %18 = kiln.addptr %17, %16 : tensor<32x1x!kiln.ptr<f16>, #blocked1>, tensor<32x1xi32, #blocked1>
    %19 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<128xi32, #slice1> -> tensor<1x128xi32, #blocked1>
    %20 = kiln.expand_dims %3 {axis = 0 : i32} : tensor<128xi32, #slice3> -> tensor<1x128xi32, #blocked>
    %21 = kiln.broadcast %18 : tensor<32x1x!kiln.ptr<f16>, #blocked1> -> tensor<32x128x!kiln.ptr<f16>, #blocked1>
    %22 = kiln.broadcast %19 : tensor<1x128xi32, #blocked1> -> tensor<32x128xi32, #blocked1>
    %23 = kiln.addptr %21, %22 : tensor<32x128x!kiln.ptr<f16>, #blocked1>, tensor<32x128xi32, #blocked1>
    %rp0 = kiln.splat %rows : !kiln.ptr<f32> -> tensor<128x!kiln.ptr<f32>, #slice2>
    %rp1 = kiln.addptr %rp0, %2 : tensor<128x!kiln.ptr<f32>, #slice2>, tensor<128xi32, #slice2>
    %24:4 = scf.for %arg4 = %c0_i32 to %arg3 step %c1_i32 iter_args(%arg5 = %cst_5, %arg6 = %14, %arg7 = %23, %sum = %cst_5) -> (tensor<128x128xf32, #blocked>, tensor<128x32x!kiln.ptr<f16>, #blocked2>, tensor<32x128x!kiln.ptr<f16>, #blocked1>, tensor<128x128xf32, #blocked>)  : i32 {
      %31 = arith.muli %arg4, %c32_i32 : i32
      %32 = arith.subi %arg3, %31 : i32
      %33 = kiln.splat %32 : i32 -> tensor<1x32xi32, #blocked2>
      %34 = arith.cmpi slt, %11, %33 : tensor<1x32xi32, #blocked2>
      %35 = kiln.broadcast %34 : tensor<1x32xi1, #blocked2> -> tensor<128x32xi1, #blocked2>
      %36 = kiln.load %arg6, %35, %cst_2 : tensor<128x32x!kiln.ptr<f16>, #blocked2> -> tensor<128x32xf16, #blocked2>
      %37 = kiln.load %arg7 : tensor<32x128x!kiln.ptr<f16>, #blocked1> -> tensor<32x128xf16, #blocked1>
      %ro = arith.muli %arg4, %c64_i32 : i32
      %ros = kiln.splat %ro : i32 -> tensor<128xi32, #slice2>
      %rp = kiln.addptr %rp1, %ros : tensor<128x!kiln.ptr<f32>, #slice2>, tensor<128xi32, #slice2>
      %ri = arith.addi %2, %ros : tensor<128xi32, #slice2>
      %rn = kiln.splat %arg3 : i32 -> tensor<128xi32, #slice2>
      %rm = arith.cmpi slt, %ri, %rn : tensor<128xi32, #slice2>
      %row = kiln.load %rp, %rm, %inf : tensor<128x!kiln.ptr<f32>, #slice2> -> tensor<128xf32, #slice2>
      %d0 = kiln.dot %36, %37, %arg5 {inputPrecision = #kiln.precision<ieee>} : tensor<128x32xf16, #blocked2> * tensor<32x128xf16, #blocked1> -> tensor<128x128xf32, #blocked>
      %d = kiln.dot %xa, %37, %d0 {inputPrecision = #kiln.precision<ieee>} : tensor<128x32xf16, #blocked2> * tensor<32x128xf16, #blocked1> -> tensor<128x128xf32, #blocked>
      %re = kiln.expand_dims %row {axis = 1 : i32} : tensor<128xf32, #slice2> -> tensor<128x1xf32, #blocked>
      %rb = kiln.broadcast %re : tensor<128x1xf32, #blocked> -> tensor<128x128xf32, #blocked>
      %38 = arith.addf %sum, %rb : tensor<128x128xf32, #blocked>
      %39 = kiln.addptr %arg6, %cst_1 : tensor<128x32x!kiln.ptr<f16>, #blocked2>, tensor<128x32xi32, #blocked2>
      %40 = kiln.addptr %arg7, %cst_0 : tensor<32x128x!kiln.ptr<f16>, #blocked1>, tensor<32x128xi32, #blocked1>
      scf.yield %d, %39, %40, %38 : tensor<128x128xf32, #blocked>, tensor<128x32x!kiln.ptr<f16>, #blocked2>, tensor<32x128x!kiln.ptr<f16>, #blocked1>, tensor<128x128xf32, #blocked>
    }
    %25 = arith.muli %7, %cst : tensor<128x1xi32, #blocked>
    %26 = kiln.splat %arg2 : !kiln.ptr<f32> -> tensor<128x1x!kiln.ptr<f32>, #blocked>
    %27 = kiln.addptr %26, %25 : tensor<128x1x!kiln.ptr<f32>, #blocked>, tensor<128x1xi32, #blocked>
    %28 = kiln.broadcast %27 : tensor<128x1x!kiln.ptr<f32>, #blocked> -> tensor<128x128x!kiln.ptr<f32>, #blocked>
    %29 = kiln.broadcast %20 : tensor<1x128xi32, #blocked> -> tensor<128x128xi32, #blocked>
    %30 = kiln.addptr %28, %29 : tensor<128x128x!kiln.ptr<f32>, #blocked>, tensor<128x128xi32, #blocked>
    %sums = arith.addf %24#0, %24#3 : tensor<128x128xf32, #blocked>
    kiln.store %30, %sums : tensor<128x128x!kiln.ptr<f32>, #blocked>, tensor<128x128xf32, #blocked>
    return
  }
}
