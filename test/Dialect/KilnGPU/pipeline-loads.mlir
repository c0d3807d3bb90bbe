// RUN: kiln-opt %s -split-input-file -kiln-gpu-pipeline-loads="num-stages=3" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-gpu-pipeline-loads="num-stages=1" | FileCheck %s --check-prefix=ONE

// The tutorial's loop on one warpgroup (sm_90a): both operands are copied
// into three slots each, two iterations ahead. The pointer blocks, which
// the loop advanced by a splat each iteration, become i64 sums of the
// offsets that the loop carries, the blocks rebuilt from their initial
// values (the lowering then computes only the pointers the copies use).
// Before the loop, the copies of iterations 0 and 1 into slots 0 and 1
// (masked off unless the loop runs that far), one commit group each; the
// sums start two iterations ahead.
// CHECK-LABEL: func.func @pipelined
// CHECK: kiln_gpu.async_copy %{{.*}}, %[[S0:.*]], %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 3>}
// CHECK: kiln_gpu.async_copy %{{.*}}, %[[S0]], %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 12288, slotBytes = 4096, slots = 3>}
// CHECK-NEXT: kiln_gpu.async_commit_group
// CHECK: kiln_gpu.async_copy %{{.*}}, %[[S1:.*]], %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 0
// CHECK: kiln_gpu.async_copy %{{.*}}, %[[S1]], %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 1
// CHECK-NEXT: kiln_gpu.async_commit_group
// The loop waits for its slot's group (one more may stay in flight), the
// dot reads the slot and only waits for the previous wgmma group, then the
// copies of the iteration two ahead go into the slot two ahead.
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[N:.*]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[SA:.*]] = %{{.*}}, %[[SB:.*]] = %{{.*}}, %[[SLOT:.*]] = %{{.*}})
// CHECK-NEXT: kiln_gpu.async_wait {pending = 1 : i32}
// CHECK: %[[A:.*]] = kiln_gpu.shared_operand %[[SLOT]] {buffer = #kiln_gpu.operand_buffer<operand = 0
// CHECK: %[[B:.*]] = kiln_gpu.shared_operand %[[SLOT]] {buffer = #kiln_gpu.operand_buffer<operand = 1
// CHECK: %[[D:.*]] = kiln.dot %[[A]], %[[B]], %[[ACC]] {{.*}}kiln_gpu.wgmma_buffer = 0
// CHECK: %[[AHEAD:.*]] = arith.addi %[[I]], %{{.*}}
// CHECK: %[[WRITE:.*]] = arith.select
// CHECK: %[[OB:.*]] = kiln.splat %[[SB]] : i64
// CHECK: %[[PB:.*]] = kiln.addptr %{{.*}}, %[[OB]]
// CHECK: %[[OA:.*]] = kiln.splat %[[SA]] : i64
// CHECK: %[[PA:.*]] = kiln.addptr %{{.*}}, %[[OA]]
// CHECK: %[[MORE:.*]] = arith.cmpi slt, %[[AHEAD]], %[[N]]
// CHECK: kiln_gpu.async_copy %[[PA]], %[[WRITE]], %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 0
// CHECK: kiln_gpu.async_copy %[[PB]], %[[WRITE]], %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 1
// CHECK-NEXT: kiln_gpu.async_commit_group
// CHECK-NOT: kiln.load
// CHECK: scf.yield %[[D]]
// After the loop nothing is in flight: the dots, then the copies, then a
// barrier (a later loop may write the slots the last dots read).
// CHECK: %[[DONE:.*]] = kiln_gpu.async_dot_wait
// CHECK-NEXT: kiln_gpu.async_wait {pending = 0 : i32}
// CHECK: kiln.store %{{.*}}, %[[DONE]]
// ONE-LABEL: func.func @pipelined
// ONE-NOT: async_copy
// ONE: kiln.load
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice3 = #kiln_gpu.slice<{dim = 0, parent = #blocked}>
#slice4 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice5 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @pipelined(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg3: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %cst = arith.constant dense<64> : tensor<64x1xi32, #blocked>
    %cst_0 = arith.constant dense<2048> : tensor<32x64xi32, #blocked1>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32, #blocked2>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf16, #blocked2>
    %cst_3 = arith.constant dense<64> : tensor<32x1xi32, #blocked1>
    %cst_4 = arith.constant dense<32> : tensor<64x1xi32, #blocked2>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %c32_i32 = arith.constant 32 : i32
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice>
    %1 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %2 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %3 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %4 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice4>
    %5 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice5>
    %6 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #slice> -> tensor<64x1xi32, #blocked2>
    %7 = kiln.expand_dims %2 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked>
    %8 = arith.muli %6, %cst_4 : tensor<64x1xi32, #blocked2>
    %9 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked2>
    %10 = kiln.addptr %9, %8 : tensor<64x1x!kiln.ptr<f16>, #blocked2>, tensor<64x1xi32, #blocked2>
    %11 = kiln.expand_dims %5 {axis = 0 : i32} : tensor<32xi32, #slice5> -> tensor<1x32xi32, #blocked2>
    %12 = kiln.broadcast %10 : tensor<64x1x!kiln.ptr<f16>, #blocked2> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %13 = kiln.broadcast %11 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %14 = kiln.addptr %12, %13 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %15 = kiln.expand_dims %4 {axis = 1 : i32} : tensor<32xi32, #slice4> -> tensor<32x1xi32, #blocked1>
    %16 = arith.muli %15, %cst_3 : tensor<32x1xi32, #blocked1>
    %17 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<32x1x!kiln.ptr<f16>, #blocked1>
    %18 = kiln.addptr %17, %16 : tensor<32x1x!kiln.ptr<f16>, #blocked1>, tensor<32x1xi32, #blocked1>
    %19 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<64xi32, #slice1> -> tensor<1x64xi32, #blocked1>
    %20 = kiln.expand_dims %3 {axis = 0 : i32} : tensor<64xi32, #slice3> -> tensor<1x64xi32, #blocked>
    %21 = kiln.broadcast %18 : tensor<32x1x!kiln.ptr<f16>, #blocked1> -> tensor<32x64x!kiln.ptr<f16>, #blocked1>
    %22 = kiln.broadcast %19 : tensor<1x64xi32, #blocked1> -> tensor<32x64xi32, #blocked1>
    %23 = kiln.addptr %21, %22 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
    %24:3 = scf.for %arg4 = %c0_i32 to %arg3 step %c1_i32 iter_args(%arg5 = %cst_5, %arg6 = %14, %arg7 = %23) -> (tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>)  : i32 {
      %31 = arith.muli %arg4, %c32_i32 : i32
      %32 = arith.subi %arg3, %31 : i32
      %33 = kiln.splat %32 : i32 -> tensor<1x32xi32, #blocked2>
      %34 = arith.cmpi slt, %11, %33 : tensor<1x32xi32, #blocked2>
      %35 = kiln.broadcast %34 : tensor<1x32xi1, #blocked2> -> tensor<64x32xi1, #blocked2>
      %36 = kiln.load %arg6, %35, %cst_2 : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %37 = kiln.load %arg7 : tensor<32x64x!kiln.ptr<f16>, #blocked1> -> tensor<32x64xf16, #blocked1>
      %38 = kiln.dot %36, %37, %arg5 {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      %39 = kiln.addptr %arg6, %cst_1 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %40 = kiln.addptr %arg7, %cst_0 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
      scf.yield %38, %39, %40 : tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>
    }
    %25 = arith.muli %7, %cst : tensor<64x1xi32, #blocked>
    %26 = kiln.splat %arg2 : !kiln.ptr<f32> -> tensor<64x1x!kiln.ptr<f32>, #blocked>
    %27 = kiln.addptr %26, %25 : tensor<64x1x!kiln.ptr<f32>, #blocked>, tensor<64x1xi32, #blocked>
    %28 = kiln.broadcast %27 : tensor<64x1x!kiln.ptr<f32>, #blocked> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    %29 = kiln.broadcast %20 : tensor<1x64xi32, #blocked> -> tensor<64x64xi32, #blocked>
    %30 = kiln.addptr %28, %29 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xi32, #blocked>
    kiln.store %30, %24#0 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}


// -----

// A loop that stores is left alone: the store may write what a later
// iteration loads.
// CHECK: // -----
// CHECK-LABEL: func.func @stores
// CHECK-NOT: async_copy
// CHECK: kiln.load
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice3 = #kiln_gpu.slice<{dim = 0, parent = #blocked}>
#slice4 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice5 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @stores(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg3: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %cst = arith.constant dense<64> : tensor<64x1xi32, #blocked>
    %cst_0 = arith.constant dense<2048> : tensor<32x64xi32, #blocked1>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32, #blocked2>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf16, #blocked2>
    %cst_3 = arith.constant dense<64> : tensor<32x1xi32, #blocked1>
    %cst_4 = arith.constant dense<32> : tensor<64x1xi32, #blocked2>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %c32_i32 = arith.constant 32 : i32
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice>
    %1 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %2 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %3 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %4 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice4>
    %5 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice5>
    %6 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #slice> -> tensor<64x1xi32, #blocked2>
    %7 = kiln.expand_dims %2 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked>
    %8 = arith.muli %6, %cst_4 : tensor<64x1xi32, #blocked2>
    %9 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked2>
    %10 = kiln.addptr %9, %8 : tensor<64x1x!kiln.ptr<f16>, #blocked2>, tensor<64x1xi32, #blocked2>
    %11 = kiln.expand_dims %5 {axis = 0 : i32} : tensor<32xi32, #slice5> -> tensor<1x32xi32, #blocked2>
    %12 = kiln.broadcast %10 : tensor<64x1x!kiln.ptr<f16>, #blocked2> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %13 = kiln.broadcast %11 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %14 = kiln.addptr %12, %13 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %15 = kiln.expand_dims %4 {axis = 1 : i32} : tensor<32xi32, #slice4> -> tensor<32x1xi32, #blocked1>
    %16 = arith.muli %15, %cst_3 : tensor<32x1xi32, #blocked1>
    %17 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<32x1x!kiln.ptr<f16>, #blocked1>
    %18 = kiln.addptr %17, %16 : tensor<32x1x!kiln.ptr<f16>, #blocked1>, tensor<32x1xi32, #blocked1>
    %19 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<64xi32, #slice1> -> tensor<1x64xi32, #blocked1>
    %20 = kiln.expand_dims %3 {axis = 0 : i32} : tensor<64xi32, #slice3> -> tensor<1x64xi32, #blocked>
    %21 = kiln.broadcast %18 : tensor<32x1x!kiln.ptr<f16>, #blocked1> -> tensor<32x64x!kiln.ptr<f16>, #blocked1>
    %22 = kiln.broadcast %19 : tensor<1x64xi32, #blocked1> -> tensor<32x64xi32, #blocked1>
    %23 = kiln.addptr %21, %22 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
    %24:3 = scf.for %arg4 = %c0_i32 to %arg3 step %c1_i32 iter_args(%arg5 = %cst_5, %arg6 = %14, %arg7 = %23) -> (tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>)  : i32 {
      %31 = arith.muli %arg4, %c32_i32 : i32
      %32 = arith.subi %arg3, %31 : i32
      %33 = kiln.splat %32 : i32 -> tensor<1x32xi32, #blocked2>
      %34 = arith.cmpi slt, %11, %33 : tensor<1x32xi32, #blocked2>
      %35 = kiln.broadcast %34 : tensor<1x32xi1, #blocked2> -> tensor<64x32xi1, #blocked2>
      %36 = kiln.load %arg6, %35, %cst_2 : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %37 = kiln.load %arg7 : tensor<32x64x!kiln.ptr<f16>, #blocked1> -> tensor<32x64xf16, #blocked1>
      %38 = kiln.dot %36, %37, %arg5 {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      %39 = kiln.addptr %arg6, %cst_1 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %40 = kiln.addptr %arg7, %cst_0 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
      kiln.store %arg6, %36 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xf16, #blocked2>
      scf.yield %38, %39, %40 : tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>
    }
    %25 = arith.muli %7, %cst : tensor<64x1xi32, #blocked>
    %26 = kiln.splat %arg2 : !kiln.ptr<f32> -> tensor<64x1x!kiln.ptr<f32>, #blocked>
    %27 = kiln.addptr %26, %25 : tensor<64x1x!kiln.ptr<f32>, #blocked>, tensor<64x1xi32, #blocked>
    %28 = kiln.broadcast %27 : tensor<64x1x!kiln.ptr<f32>, #blocked> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    %29 = kiln.broadcast %20 : tensor<1x64xi32, #blocked> -> tensor<64x64xi32, #blocked>
    %30 = kiln.addptr %28, %29 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xi32, #blocked>
    kiln.store %30, %24#0 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}


// -----

// The pointers of A are read after the loop (as the next loop of a split
// one reads them), which ends with them two iterations ahead: they are
// carried as an offset sum advanced by a constant step, so after the loop
// the sum steps back two steps and A's pointers are rebuilt from it.
// CHECK: // -----
// CHECK-LABEL: func.func @pointer_used_after
// CHECK: %[[INIT:.*]] = kiln.addptr %{{.*}}, %{{.*}} : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
// CHECK: %[[STEP:.*]] = arith.extsi %{{.*}} : i32 to i64
// CHECK: kiln_gpu.async_copy
// CHECK: %[[LOOP:.*]]:6 = scf.for
// CHECK-NOT: kiln.load
// CHECK: scf.yield
// CHECK: %[[BACK:.*]] = arith.constant -2 : i64
// CHECK: %[[DELTA:.*]] = arith.muli %[[STEP]], %[[BACK]] : i64
// CHECK: %[[SUM:.*]] = arith.addi %[[LOOP]]#3, %[[DELTA]] : i64
// CHECK: %[[SPLAT:.*]] = kiln.splat %[[SUM]] : i64
// CHECK-NEXT: %[[LAST:.*]] = kiln.addptr %[[INIT]], %[[SPLAT]]
// CHECK: kiln.load %[[LAST]]
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice3 = #kiln_gpu.slice<{dim = 0, parent = #blocked}>
#slice4 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice5 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @pointer_used_after(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg3: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %cst = arith.constant dense<64> : tensor<64x1xi32, #blocked>
    %cst_0 = arith.constant dense<2048> : tensor<32x64xi32, #blocked1>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32, #blocked2>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf16, #blocked2>
    %cst_3 = arith.constant dense<64> : tensor<32x1xi32, #blocked1>
    %cst_4 = arith.constant dense<32> : tensor<64x1xi32, #blocked2>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %c32_i32 = arith.constant 32 : i32
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice>
    %1 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %2 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %3 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %4 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice4>
    %5 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice5>
    %6 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #slice> -> tensor<64x1xi32, #blocked2>
    %7 = kiln.expand_dims %2 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked>
    %8 = arith.muli %6, %cst_4 : tensor<64x1xi32, #blocked2>
    %9 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked2>
    %10 = kiln.addptr %9, %8 : tensor<64x1x!kiln.ptr<f16>, #blocked2>, tensor<64x1xi32, #blocked2>
    %11 = kiln.expand_dims %5 {axis = 0 : i32} : tensor<32xi32, #slice5> -> tensor<1x32xi32, #blocked2>
    %12 = kiln.broadcast %10 : tensor<64x1x!kiln.ptr<f16>, #blocked2> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %13 = kiln.broadcast %11 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %14 = kiln.addptr %12, %13 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %15 = kiln.expand_dims %4 {axis = 1 : i32} : tensor<32xi32, #slice4> -> tensor<32x1xi32, #blocked1>
    %16 = arith.muli %15, %cst_3 : tensor<32x1xi32, #blocked1>
    %17 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<32x1x!kiln.ptr<f16>, #blocked1>
    %18 = kiln.addptr %17, %16 : tensor<32x1x!kiln.ptr<f16>, #blocked1>, tensor<32x1xi32, #blocked1>
    %19 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<64xi32, #slice1> -> tensor<1x64xi32, #blocked1>
    %20 = kiln.expand_dims %3 {axis = 0 : i32} : tensor<64xi32, #slice3> -> tensor<1x64xi32, #blocked>
    %21 = kiln.broadcast %18 : tensor<32x1x!kiln.ptr<f16>, #blocked1> -> tensor<32x64x!kiln.ptr<f16>, #blocked1>
    %22 = kiln.broadcast %19 : tensor<1x64xi32, #blocked1> -> tensor<32x64xi32, #blocked1>
    %23 = kiln.addptr %21, %22 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
    %24:3 = scf.for %arg4 = %c0_i32 to %arg3 step %c1_i32 iter_args(%arg5 = %cst_5, %arg6 = %14, %arg7 = %23) -> (tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>)  : i32 {
      %31 = arith.muli %arg4, %c32_i32 : i32
      %32 = arith.subi %arg3, %31 : i32
      %33 = kiln.splat %32 : i32 -> tensor<1x32xi32, #blocked2>
      %34 = arith.cmpi slt, %11, %33 : tensor<1x32xi32, #blocked2>
      %35 = kiln.broadcast %34 : tensor<1x32xi1, #blocked2> -> tensor<64x32xi1, #blocked2>
      %36 = kiln.load %arg6, %35, %cst_2 : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %37 = kiln.load %arg7 : tensor<32x64x!kiln.ptr<f16>, #blocked1> -> tensor<32x64xf16, #blocked1>
      %38 = kiln.dot %36, %37, %arg5 {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      %39 = kiln.addptr %arg6, %cst_1 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %40 = kiln.addptr %arg7, %cst_0 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
      scf.yield %38, %39, %40 : tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>
    }
    %25 = arith.muli %7, %cst : tensor<64x1xi32, #blocked>
    %26 = kiln.splat %arg2 : !kiln.ptr<f32> -> tensor<64x1x!kiln.ptr<f32>, #blocked>
    %27 = kiln.addptr %26, %25 : tensor<64x1x!kiln.ptr<f32>, #blocked>, tensor<64x1xi32, #blocked>
    %28 = kiln.broadcast %27 : tensor<64x1x!kiln.ptr<f32>, #blocked> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    %29 = kiln.broadcast %20 : tensor<1x64xi32, #blocked> -> tensor<64x64xi32, #blocked>
    %30 = kiln.addptr %28, %29 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xi32, #blocked>
    kiln.store %30, %24#0 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    %last = kiln.load %24#1 : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
    return
  }
}


// -----

// Before sm_80 there is no cp.async.
// CHECK: // -----
// CHECK-LABEL: func.func @before_sm80
// CHECK-NOT: async_copy
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice3 = #kiln_gpu.slice<{dim = 0, parent = #blocked}>
#slice4 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice5 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_75>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @before_sm80(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg3: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %cst = arith.constant dense<64> : tensor<64x1xi32, #blocked>
    %cst_0 = arith.constant dense<2048> : tensor<32x64xi32, #blocked1>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32, #blocked2>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf16, #blocked2>
    %cst_3 = arith.constant dense<64> : tensor<32x1xi32, #blocked1>
    %cst_4 = arith.constant dense<32> : tensor<64x1xi32, #blocked2>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %c32_i32 = arith.constant 32 : i32
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice>
    %1 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %2 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %3 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %4 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice4>
    %5 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice5>
    %6 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #slice> -> tensor<64x1xi32, #blocked2>
    %7 = kiln.expand_dims %2 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked>
    %8 = arith.muli %6, %cst_4 : tensor<64x1xi32, #blocked2>
    %9 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked2>
    %10 = kiln.addptr %9, %8 : tensor<64x1x!kiln.ptr<f16>, #blocked2>, tensor<64x1xi32, #blocked2>
    %11 = kiln.expand_dims %5 {axis = 0 : i32} : tensor<32xi32, #slice5> -> tensor<1x32xi32, #blocked2>
    %12 = kiln.broadcast %10 : tensor<64x1x!kiln.ptr<f16>, #blocked2> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %13 = kiln.broadcast %11 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %14 = kiln.addptr %12, %13 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %15 = kiln.expand_dims %4 {axis = 1 : i32} : tensor<32xi32, #slice4> -> tensor<32x1xi32, #blocked1>
    %16 = arith.muli %15, %cst_3 : tensor<32x1xi32, #blocked1>
    %17 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<32x1x!kiln.ptr<f16>, #blocked1>
    %18 = kiln.addptr %17, %16 : tensor<32x1x!kiln.ptr<f16>, #blocked1>, tensor<32x1xi32, #blocked1>
    %19 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<64xi32, #slice1> -> tensor<1x64xi32, #blocked1>
    %20 = kiln.expand_dims %3 {axis = 0 : i32} : tensor<64xi32, #slice3> -> tensor<1x64xi32, #blocked>
    %21 = kiln.broadcast %18 : tensor<32x1x!kiln.ptr<f16>, #blocked1> -> tensor<32x64x!kiln.ptr<f16>, #blocked1>
    %22 = kiln.broadcast %19 : tensor<1x64xi32, #blocked1> -> tensor<32x64xi32, #blocked1>
    %23 = kiln.addptr %21, %22 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
    %24:3 = scf.for %arg4 = %c0_i32 to %arg3 step %c1_i32 iter_args(%arg5 = %cst_5, %arg6 = %14, %arg7 = %23) -> (tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>)  : i32 {
      %31 = arith.muli %arg4, %c32_i32 : i32
      %32 = arith.subi %arg3, %31 : i32
      %33 = kiln.splat %32 : i32 -> tensor<1x32xi32, #blocked2>
      %34 = arith.cmpi slt, %11, %33 : tensor<1x32xi32, #blocked2>
      %35 = kiln.broadcast %34 : tensor<1x32xi1, #blocked2> -> tensor<64x32xi1, #blocked2>
      %36 = kiln.load %arg6, %35, %cst_2 : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %37 = kiln.load %arg7 : tensor<32x64x!kiln.ptr<f16>, #blocked1> -> tensor<32x64xf16, #blocked1>
      %38 = kiln.dot %36, %37, %arg5 {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      %39 = kiln.addptr %arg6, %cst_1 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %40 = kiln.addptr %arg7, %cst_0 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
      scf.yield %38, %39, %40 : tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>
    }
    %25 = arith.muli %7, %cst : tensor<64x1xi32, #blocked>
    %26 = kiln.splat %arg2 : !kiln.ptr<f32> -> tensor<64x1x!kiln.ptr<f32>, #blocked>
    %27 = kiln.addptr %26, %25 : tensor<64x1x!kiln.ptr<f32>, #blocked>, tensor<64x1xi32, #blocked>
    %28 = kiln.broadcast %27 : tensor<64x1x!kiln.ptr<f32>, #blocked> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    %29 = kiln.broadcast %20 : tensor<1x64xi32, #blocked> -> tensor<64x64xi32, #blocked>
    %30 = kiln.addptr %28, %29 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xi32, #blocked>
    kiln.store %30, %24#0 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// A loop's own num_stages (kl.range(..., num_stages=1)) overrides the
// kernel's.
// CHECK: // -----
// CHECK-LABEL: func.func @loop_stages
// CHECK-NOT: async_copy
// CHECK: kiln.load
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice3 = #kiln_gpu.slice<{dim = 0, parent = #blocked}>
#slice4 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice5 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @loop_stages(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg3: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %cst = arith.constant dense<64> : tensor<64x1xi32, #blocked>
    %cst_0 = arith.constant dense<2048> : tensor<32x64xi32, #blocked1>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32, #blocked2>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf16, #blocked2>
    %cst_3 = arith.constant dense<64> : tensor<32x1xi32, #blocked1>
    %cst_4 = arith.constant dense<32> : tensor<64x1xi32, #blocked2>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %c32_i32 = arith.constant 32 : i32
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice>
    %1 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %2 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %3 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %4 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice4>
    %5 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice5>
    %6 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #slice> -> tensor<64x1xi32, #blocked2>
    %7 = kiln.expand_dims %2 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked>
    %8 = arith.muli %6, %cst_4 : tensor<64x1xi32, #blocked2>
    %9 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked2>
    %10 = kiln.addptr %9, %8 : tensor<64x1x!kiln.ptr<f16>, #blocked2>, tensor<64x1xi32, #blocked2>
    %11 = kiln.expand_dims %5 {axis = 0 : i32} : tensor<32xi32, #slice5> -> tensor<1x32xi32, #blocked2>
    %12 = kiln.broadcast %10 : tensor<64x1x!kiln.ptr<f16>, #blocked2> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %13 = kiln.broadcast %11 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %14 = kiln.addptr %12, %13 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %15 = kiln.expand_dims %4 {axis = 1 : i32} : tensor<32xi32, #slice4> -> tensor<32x1xi32, #blocked1>
    %16 = arith.muli %15, %cst_3 : tensor<32x1xi32, #blocked1>
    %17 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<32x1x!kiln.ptr<f16>, #blocked1>
    %18 = kiln.addptr %17, %16 : tensor<32x1x!kiln.ptr<f16>, #blocked1>, tensor<32x1xi32, #blocked1>
    %19 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<64xi32, #slice1> -> tensor<1x64xi32, #blocked1>
    %20 = kiln.expand_dims %3 {axis = 0 : i32} : tensor<64xi32, #slice3> -> tensor<1x64xi32, #blocked>
    %21 = kiln.broadcast %18 : tensor<32x1x!kiln.ptr<f16>, #blocked1> -> tensor<32x64x!kiln.ptr<f16>, #blocked1>
    %22 = kiln.broadcast %19 : tensor<1x64xi32, #blocked1> -> tensor<32x64xi32, #blocked1>
    %23 = kiln.addptr %21, %22 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
    %24:3 = scf.for %arg4 = %c0_i32 to %arg3 step %c1_i32 iter_args(%arg5 = %cst_5, %arg6 = %14, %arg7 = %23) -> (tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>)  : i32 {
      %31 = arith.muli %arg4, %c32_i32 : i32
      %32 = arith.subi %arg3, %31 : i32
      %33 = kiln.splat %32 : i32 -> tensor<1x32xi32, #blocked2>
      %34 = arith.cmpi slt, %11, %33 : tensor<1x32xi32, #blocked2>
      %35 = kiln.broadcast %34 : tensor<1x32xi1, #blocked2> -> tensor<64x32xi1, #blocked2>
      %36 = kiln.load %arg6, %35, %cst_2 : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %37 = kiln.load %arg7 : tensor<32x64x!kiln.ptr<f16>, #blocked1> -> tensor<32x64xf16, #blocked1>
      %38 = kiln.dot %36, %37, %arg5 {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      %39 = kiln.addptr %arg6, %cst_1 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %40 = kiln.addptr %arg7, %cst_0 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
      scf.yield %38, %39, %40 : tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>
    } {kiln.num_stages = 1 : i32}
    %25 = arith.muli %7, %cst : tensor<64x1xi32, #blocked>
    %26 = kiln.splat %arg2 : !kiln.ptr<f32> -> tensor<64x1x!kiln.ptr<f32>, #blocked>
    %27 = kiln.addptr %26, %25 : tensor<64x1x!kiln.ptr<f32>, #blocked>, tensor<64x1xi32, #blocked>
    %28 = kiln.broadcast %27 : tensor<64x1x!kiln.ptr<f32>, #blocked> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    %29 = kiln.broadcast %20 : tensor<1x64xi32, #blocked> -> tensor<64x64xi32, #blocked>
    %30 = kiln.addptr %28, %29 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xi32, #blocked>
    kiln.store %30, %24#0 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}



// -----

// fp8 operands (bytes) with B contiguous along K (a column-major B): both are
// copied, B into a K-major slot that holds its [N][K] transpose, which
// wgmma reads as it needs an 8-bit B.
// CHECK-LABEL: func.func @k_major_b
// CHECK: kiln_gpu.async_copy {{.*}}operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 2048, slots = 3>
// CHECK: kiln_gpu.async_copy {{.*}}operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 6144, slotBytes = 2048, slots = 3, kMajor = true>} : tensor<32x64x!kiln.ptr<i8>
// CHECK: scf.for
// CHECK: kiln_gpu.shared_operand {{.*}}operand = 0
// CHECK: %[[B:.*]] = kiln_gpu.shared_operand {{.*}}kMajor = true>} : tensor<32x64xi8
// CHECK: kiln.dot %{{.*}}, %[[B]]
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [16, 1], threadsPerWarp = [2, 16], warpsPerCTA = [1, 4], order = [0, 1]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 16], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice3 = #kiln_gpu.slice<{dim = 0, parent = #blocked}>
#slice4 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
#slice5 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @k_major_b(%arg0: !kiln.ptr<i8> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<i8> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg3: i32 {kiln.divisibility = 16 : i32}, %arg4: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %cst = arith.constant dense<64> : tensor<64x1xi32, #blocked>
    %cst_0 = arith.constant dense<32> : tensor<32x64xi32, #blocked1>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32, #blocked2>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %c32_i32 = arith.constant 32 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice>
    %1 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %2 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %3 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %4 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice4>
    %5 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice5>
    %6 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #slice> -> tensor<64x1xi32, #blocked2>
    %7 = kiln.expand_dims %2 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked>
    %8 = kiln.splat %arg3 : i32 -> tensor<64x1xi32, #blocked2>
    %9 = arith.muli %6, %8 : tensor<64x1xi32, #blocked2>
    %10 = kiln.splat %arg0 : !kiln.ptr<i8> -> tensor<64x1x!kiln.ptr<i8>, #blocked2>
    %11 = kiln.addptr %10, %9 : tensor<64x1x!kiln.ptr<i8>, #blocked2>, tensor<64x1xi32, #blocked2>
    %12 = kiln.expand_dims %4 {axis = 0 : i32} : tensor<32xi32, #slice4> -> tensor<1x32xi32, #blocked2>
    %13 = kiln.broadcast %11 : tensor<64x1x!kiln.ptr<i8>, #blocked2> -> tensor<64x32x!kiln.ptr<i8>, #blocked2>
    %14 = kiln.broadcast %12 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %15 = kiln.addptr %13, %14 : tensor<64x32x!kiln.ptr<i8>, #blocked2>, tensor<64x32xi32, #blocked2>
    %16 = kiln.expand_dims %5 {axis = 1 : i32} : tensor<32xi32, #slice5> -> tensor<32x1xi32, #blocked1>
    %17 = kiln.splat %arg1 : !kiln.ptr<i8> -> tensor<32x1x!kiln.ptr<i8>, #blocked1>
    %18 = kiln.addptr %17, %16 : tensor<32x1x!kiln.ptr<i8>, #blocked1>, tensor<32x1xi32, #blocked1>
    %19 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<64xi32, #slice1> -> tensor<1x64xi32, #blocked1>
    %20 = kiln.expand_dims %3 {axis = 0 : i32} : tensor<64xi32, #slice3> -> tensor<1x64xi32, #blocked>
    %21 = kiln.splat %arg4 : i32 -> tensor<1x64xi32, #blocked1>
    %22 = arith.muli %19, %21 : tensor<1x64xi32, #blocked1>
    %23 = kiln.broadcast %18 : tensor<32x1x!kiln.ptr<i8>, #blocked1> -> tensor<32x64x!kiln.ptr<i8>, #blocked1>
    %24 = kiln.broadcast %22 : tensor<1x64xi32, #blocked1> -> tensor<32x64xi32, #blocked1>
    %25 = kiln.addptr %23, %24 : tensor<32x64x!kiln.ptr<i8>, #blocked1>, tensor<32x64xi32, #blocked1>
    %26 = arith.divsi %arg3, %c32_i32 : i32
    %27:3 = scf.for %arg5 = %c0_i32 to %26 step %c1_i32 iter_args(%arg6 = %cst_2, %arg7 = %15, %arg8 = %25) -> (tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<i8>, #blocked2>, tensor<32x64x!kiln.ptr<i8>, #blocked1>)  : i32 {
      %34 = kiln.load %arg7 : tensor<64x32x!kiln.ptr<i8>, #blocked2> -> tensor<64x32xi8, #blocked2>
      %35 = kiln.load %arg8 : tensor<32x64x!kiln.ptr<i8>, #blocked1> -> tensor<32x64xi8, #blocked1>
      %36 = kiln.dot %34, %35, %arg6 {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e5m2>, inputPrecision = #kiln.precision<ieee>, maxNumImpreciseAcc = 32 : i32} : tensor<64x32xi8, #blocked2> * tensor<32x64xi8, #blocked1> -> tensor<64x64xf32, #blocked>
      %37 = kiln.addptr %arg7, %cst_1 : tensor<64x32x!kiln.ptr<i8>, #blocked2>, tensor<64x32xi32, #blocked2>
      %38 = kiln.addptr %arg8, %cst_0 : tensor<32x64x!kiln.ptr<i8>, #blocked1>, tensor<32x64xi32, #blocked1>
      scf.yield %36, %37, %38 : tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<i8>, #blocked2>, tensor<32x64x!kiln.ptr<i8>, #blocked1>
    }
    %28 = arith.muli %7, %cst : tensor<64x1xi32, #blocked>
    %29 = kiln.splat %arg2 : !kiln.ptr<f32> -> tensor<64x1x!kiln.ptr<f32>, #blocked>
    %30 = kiln.addptr %29, %28 : tensor<64x1x!kiln.ptr<f32>, #blocked>, tensor<64x1xi32, #blocked>
    %31 = kiln.broadcast %30 : tensor<64x1x!kiln.ptr<f32>, #blocked> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    %32 = kiln.broadcast %20 : tensor<1x64xi32, #blocked> -> tensor<64x64xi32, #blocked>
    %33 = kiln.addptr %31, %32 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xi32, #blocked>
    kiln.store %33, %27#0 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}


// -----

// Loads through host tensor descriptors (a tensor map, a kernel parameter)
// on sm_90a: the TMA unit copies them, A as loaded, B as the dot's `b.T`
// of a [N][K] block into a K-major slot. The boxes are recorded on the
// parameters. One mbarrier per slot after the slots (two arrivals a phase,
// one per operand); the loop carries the slot and its phase parity, waits
// for the phase at the top, and after the loop the barriers are
// invalidated. The pointers are not read.
// CHECK-LABEL: func.func @tma
// CHECK-SAME: %[[MAPA:[^:]*]]: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32, kiln.tensor_map_box = array<i64: 8, 32, 64>}
// CHECK-SAME: %[[MAPB:[^:]*]]: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32, kiln.tensor_map_box = array<i64: 64, 32, 64>}
// CHECK: kiln_gpu.init_tma_barriers {arrivals = 2 : i32, count = 3 : i32, offset = 24576 : i64}
// CHECK: kiln_gpu.async_tma_copy %[[MAPA]][%{{.*}}, %{{.*}}], %{{.*}}, %{{.*}} {barriers = 24576 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 3>, tile = tensor<64x32xf16>}
// CHECK: kiln_gpu.async_tma_copy %[[MAPB]][%{{.*}}, %{{.*}}], %{{.*}}, %{{.*}} {barriers = 24576 : i64, buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 12288, slotBytes = 4096, slots = 3, kMajor = true>, tile = tensor<64x32xf16>}
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[SLOT:.*]] = %{{.*}}, %[[PHASE:.*]] = %{{.*}})
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %[[SLOT]], %[[PHASE]] {barriers = 24576 : i64}
// CHECK-NOT: kiln.trans
// CHECK: kiln.dot
// CHECK: kiln_gpu.async_tma_copy %[[MAPA]]
// CHECK: kiln_gpu.async_tma_copy %[[MAPB]]
// CHECK-NOT: kiln.load
// CHECK: scf.yield
// CHECK: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 24576 : i64}
// ONE-LABEL: func.func @tma
// ONE-NOT: async_tma_copy
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
      %d = kiln.dot %x, %yt, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      scf.yield %d : tensor<64x64xf32, #blocked>
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// A tensor map that a helper function receives is not a kernel parameter
// the launcher encodes: its loads are not copied by the TMA unit (nor by
// cp.async here: the splat pointers have runs of one element).
// CHECK-LABEL: func.func @helper_map
// CHECK-NOT: kiln_gpu.async_tma_copy
// CHECK-NOT: kiln.tensor_map_box
// CHECK: kiln.load
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @helper_map(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapA: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %row: i32, %col: i32) {
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
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// An attention loop: two dots, Q loaded once before the loop, K (read
// transposed: a K-major slot) and V loaded in it. Q is copied once into a
// slot of its own, as the first group; K and V share the ring's slot index
// and commit group; the copies of the next iteration follow the first dot,
// and the second dot reads V from the slot. The dots are chained (the
// second accumulates the carried block), so the copies run one iteration
// less ahead than the three slots allow, and the loop is marked for
// kiln-gpu-overlap-dots, which keeps V's slot an iteration longer.
// CHECK-LABEL: func.func @attention
// CHECK: kiln_gpu.async_copy %{{.*}}, %[[Q0:[a-z0-9_]*]] {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 49152, slotBytes = 8192, slots = 1>}
// CHECK-NEXT: kiln_gpu.async_commit_group
// CHECK: kiln_gpu.async_copy {{.*}}operand = 1, {{.*}}offset = 0, slotBytes = 8192, slots = 3, kMajor = true>}
// CHECK: kiln_gpu.async_copy {{.*}}operand = 1, {{.*}}offset = 24576, slotBytes = 8192, slots = 3>}
// CHECK-NEXT: kiln_gpu.async_commit_group
// CHECK-NOT: kiln_gpu.async_copy
// CHECK: scf.for
// CHECK-NEXT: kiln_gpu.async_wait {pending = 0 : i32}
// CHECK-DAG: %[[K:.*]] = kiln_gpu.shared_operand %[[SLOT:arg[0-9]+]] {{.*}}kMajor = true>}
// CHECK-DAG: %[[Q:.*]] = kiln_gpu.shared_operand %[[Q0]] {{.*}}slots = 1>}
// CHECK: kiln.dot %[[Q]], %[[K]]
// CHECK: kiln_gpu.async_copy {{.*}}kMajor = true>}
// CHECK: kiln_gpu.async_copy {{.*}}offset = 24576
// CHECK-NEXT: kiln_gpu.async_commit_group
// CHECK: %[[V:.*]] = kiln_gpu.shared_operand %[[SLOT]] {{.*}}offset = 24576
// CHECK: kiln.dot %{{.*}}, %[[V]]
// CHECK-NOT: kiln.load
// CHECK: scf.yield
// CHECK-NEXT: } {kiln_gpu.overlap_dots}
// CHECK: kiln_gpu.async_wait {pending = 0 : i32}
// ONE-LABEL: func.func @attention
// ONE-NOT: async_copy
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice3 = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice4 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @attention(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg3: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg4: f32, %arg5: i32 {kiln.divisibility = 16 : i32}, %arg6: i32 {kiln.divisibility = 16 : i32}, %arg7: i32 {kiln.divisibility = 16 : i32}, %arg8: i32 {kiln.divisibility = 16 : i32}, %arg9: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %cst = arith.constant dense<1.000000e+00> : tensor<64xf32, #slice>
    %cst_0 = arith.constant dense<0xFF800000> : tensor<64xf32, #slice>
    %c0_i32 = arith.constant 0 : i32
    %cst_1 = arith.constant 1.44269502 : f32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %c64_i32 = arith.constant 64 : i32
    %0 = kiln.program_id {axis = 0 : i32} : i32
    %1 = kiln.program_id {axis = 1 : i32} : i32
    %2 = arith.muli %1, %arg9 : i32
    %3 = arith.muli %0, %c64_i32 : i32
    %4 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %5 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %6 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %7 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice4>
    %8 = kiln.splat %3 : i32 -> tensor<64xi32, #slice2>
    %9 = arith.addi %8, %5 : tensor<64xi32, #slice2>
    %10 = kiln.expand_dims %9 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked1>
    %11 = kiln.splat %2 : i32 -> tensor<64x1xi32, #blocked1>
    %12 = arith.addi %11, %10 : tensor<64x1xi32, #blocked1>
    %13 = kiln.splat %arg5 : i32 -> tensor<64x1xi32, #blocked1>
    %14 = arith.muli %12, %13 : tensor<64x1xi32, #blocked1>
    %15 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
    %16 = kiln.addptr %15, %14 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
    %17 = kiln.expand_dims %4 {axis = 0 : i32} : tensor<64xi32, #slice1> -> tensor<1x64xi32, #blocked1>
    %18 = kiln.expand_dims %7 {axis = 0 : i32} : tensor<64xi32, #slice4> -> tensor<1x64xi32, #blocked2>
    %19 = kiln.broadcast %16 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
    %20 = kiln.broadcast %17 : tensor<1x64xi32, #blocked1> -> tensor<64x64xi32, #blocked1>
    %21 = kiln.addptr %19, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
    %22 = kiln.load %21 : tensor<64x64x!kiln.ptr<f16>, #blocked1> -> tensor<64x64xf16, #blocked1>
    %23 = arith.mulf %arg4, %cst_1 : f32
    %24:3 = scf.for %arg10 = %c0_i32 to %arg9 step %c64_i32 iter_args(%arg11 = %cst, %arg12 = %cst_2, %arg13 = %cst_0) -> (tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>)  : i32 {
      %36 = arith.addi %2, %arg10 : i32
      %37 = kiln.splat %36 : i32 -> tensor<1x64xi32, #blocked2>
      %38 = arith.addi %37, %18 : tensor<1x64xi32, #blocked2>
      %39 = kiln.splat %arg6 : i32 -> tensor<1x64xi32, #blocked2>
      %40 = arith.muli %38, %39 : tensor<1x64xi32, #blocked2>
      %41 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<1x64x!kiln.ptr<f16>, #blocked2>
      %42 = kiln.addptr %41, %40 : tensor<1x64x!kiln.ptr<f16>, #blocked2>, tensor<1x64xi32, #blocked2>
      %43 = kiln.expand_dims %5 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked1>
      %44 = kiln.expand_dims %6 {axis = 1 : i32} : tensor<64xi32, #slice3> -> tensor<64x1xi32, #blocked2>
      %45 = kiln.broadcast %42 : tensor<1x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
      %46 = kiln.broadcast %44 : tensor<64x1xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
      %47 = kiln.addptr %45, %46 : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
      %48 = kiln.load %47 : tensor<64x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64xf16, #blocked2>
      %49 = kiln.dot %22, %48, %cst_2 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked1> * tensor<64x64xf16, #blocked2> -> tensor<64x64xf32, #blocked>
      %50 = kiln.reduce(%49) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg14: f32, %arg15: f32):
        %79 = arith.maxnumf %arg14, %arg15 : f32
        kiln.reduce.return %79 : f32
      }
      %51 = kiln.splat %23 : f32 -> tensor<64xf32, #slice>
      %52 = arith.mulf %50, %51 : tensor<64xf32, #slice>
      %53 = arith.maxnumf %arg13, %52 : tensor<64xf32, #slice>
      %54 = kiln.splat %23 : f32 -> tensor<64x64xf32, #blocked>
      %55 = arith.mulf %49, %54 : tensor<64x64xf32, #blocked>
      %56 = kiln.expand_dims %53 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %57 = kiln.broadcast %56 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %58 = arith.subf %55, %57 : tensor<64x64xf32, #blocked>
      %59 = math.exp2 %58 : tensor<64x64xf32, #blocked>
      %60 = kiln.reduce(%59) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg14: f32, %arg15: f32):
        %79 = arith.addf %arg14, %arg15 : f32
        kiln.reduce.return %79 : f32
      }
      %61 = arith.subf %arg13, %53 : tensor<64xf32, #slice>
      %62 = math.exp2 %61 : tensor<64xf32, #slice>
      %63 = arith.mulf %arg11, %62 : tensor<64xf32, #slice>
      %64 = arith.addf %63, %60 : tensor<64xf32, #slice>
      %65 = kiln.expand_dims %62 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %66 = kiln.broadcast %65 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %67 = arith.mulf %arg12, %66 : tensor<64x64xf32, #blocked>
      %68 = kiln.splat %36 : i32 -> tensor<64x1xi32, #blocked1>
      %69 = arith.addi %68, %43 : tensor<64x1xi32, #blocked1>
      %70 = kiln.splat %arg7 : i32 -> tensor<64x1xi32, #blocked1>
      %71 = arith.muli %69, %70 : tensor<64x1xi32, #blocked1>
      %72 = kiln.splat %arg2 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
      %73 = kiln.addptr %72, %71 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
      %74 = kiln.broadcast %73 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
      %75 = kiln.addptr %74, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
      %76 = kiln.load %75 : tensor<64x64x!kiln.ptr<f16>, #blocked1> -> tensor<64x64xf16, #blocked1>
      %77 = arith.truncf %59 : tensor<64x64xf32, #blocked> to tensor<64x64xf16, #blocked>
      %78 = kiln.dot %77, %76, %67 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked> * tensor<64x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      scf.yield %64, %78, %53 : tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>
    }
    %25 = kiln.expand_dims %24#0 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
    %26 = kiln.broadcast %25 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
    %27 = arith.divf %24#1, %26 : tensor<64x64xf32, #blocked>
    %28 = kiln.splat %arg8 : i32 -> tensor<64x1xi32, #blocked1>
    %29 = arith.muli %12, %28 : tensor<64x1xi32, #blocked1>
    %30 = kiln.splat %arg3 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
    %31 = kiln.addptr %30, %29 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
    %32 = kiln.broadcast %31 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
    %33 = kiln.addptr %32, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
    %34 = arith.truncf %27 : tensor<64x64xf32, #blocked> to tensor<64x64xf16, #blocked>
    %35 = kiln_gpu.convert_layout %34 : tensor<64x64xf16, #blocked> -> tensor<64x64xf16, #blocked1>
    kiln.store %33, %35 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xf16, #blocked1>
    return
  }
}


// -----

// The same loop twice in one kernel (attention's causal loops, split at the
// diagonal): both are pipelined, neither is marked for
// kiln-gpu-overlap-dots, and each keeps the full lookahead (its first
// wait leaves one group in flight). Their accumulators are 64 columns
// wide: the copies do not arrive on mbarriers (at head dimension 64 that
// costs more than the barrier it saves; see release-tma-slots.mlir), and
// each loop's second dot stays in flight into its next iteration (see
// @second_dot_in_flight), its slots three: one warpgroup reads them.
// CHECK-LABEL: func.func @attention_two_loops
// CHECK-NOT: kiln_gpu.async_copy_arrive
// CHECK: kiln_gpu.async_copy {{.*}}slots = 3, kMajor = true>}
// CHECK: scf.for
// CHECK-NEXT: kiln_gpu.async_wait {pending = 1 : i32}
// CHECK: kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 0 : i32}
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NOT: overlap_dots
// CHECK-NEXT: kiln_gpu.async_dot_wait
// CHECK: scf.for
// CHECK-NEXT: kiln_gpu.async_wait {pending = 1 : i32}
// CHECK: kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 0 : i32}
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NOT: overlap_dots
// CHECK-NEXT: kiln_gpu.async_dot_wait
// CHECK: kiln_gpu.async_wait {pending = 0 : i32}
// ONE-LABEL: func.func @attention_two_loops
// ONE-NOT: async_copy
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice3 = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice4 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @attention_two_loops(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg3: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg4: f32, %arg5: i32 {kiln.divisibility = 16 : i32}, %arg6: i32 {kiln.divisibility = 16 : i32}, %arg7: i32 {kiln.divisibility = 16 : i32}, %arg8: i32 {kiln.divisibility = 16 : i32}, %arg9: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %cst = arith.constant dense<1.000000e+00> : tensor<64xf32, #slice>
    %cst_0 = arith.constant dense<0xFF800000> : tensor<64xf32, #slice>
    %c0_i32 = arith.constant 0 : i32
    %cst_1 = arith.constant 1.44269502 : f32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %c64_i32 = arith.constant 64 : i32
    %0 = kiln.program_id {axis = 0 : i32} : i32
    %1 = kiln.program_id {axis = 1 : i32} : i32
    %2 = arith.muli %1, %arg9 : i32
    %3 = arith.muli %0, %c64_i32 : i32
    %4 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %5 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %6 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %7 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice4>
    %8 = kiln.splat %3 : i32 -> tensor<64xi32, #slice2>
    %9 = arith.addi %8, %5 : tensor<64xi32, #slice2>
    %10 = kiln.expand_dims %9 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked1>
    %11 = kiln.splat %2 : i32 -> tensor<64x1xi32, #blocked1>
    %12 = arith.addi %11, %10 : tensor<64x1xi32, #blocked1>
    %13 = kiln.splat %arg5 : i32 -> tensor<64x1xi32, #blocked1>
    %14 = arith.muli %12, %13 : tensor<64x1xi32, #blocked1>
    %15 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
    %16 = kiln.addptr %15, %14 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
    %17 = kiln.expand_dims %4 {axis = 0 : i32} : tensor<64xi32, #slice1> -> tensor<1x64xi32, #blocked1>
    %18 = kiln.expand_dims %7 {axis = 0 : i32} : tensor<64xi32, #slice4> -> tensor<1x64xi32, #blocked2>
    %19 = kiln.broadcast %16 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
    %20 = kiln.broadcast %17 : tensor<1x64xi32, #blocked1> -> tensor<64x64xi32, #blocked1>
    %21 = kiln.addptr %19, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
    %22 = kiln.load %21 : tensor<64x64x!kiln.ptr<f16>, #blocked1> -> tensor<64x64xf16, #blocked1>
    %23 = arith.mulf %arg4, %cst_1 : f32
    %24:3 = scf.for %arg10 = %c0_i32 to %arg9 step %c64_i32 iter_args(%arg11 = %cst, %arg12 = %cst_2, %arg13 = %cst_0) -> (tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>)  : i32 {
      %36 = arith.addi %2, %arg10 : i32
      %37 = kiln.splat %36 : i32 -> tensor<1x64xi32, #blocked2>
      %38 = arith.addi %37, %18 : tensor<1x64xi32, #blocked2>
      %39 = kiln.splat %arg6 : i32 -> tensor<1x64xi32, #blocked2>
      %40 = arith.muli %38, %39 : tensor<1x64xi32, #blocked2>
      %41 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<1x64x!kiln.ptr<f16>, #blocked2>
      %42 = kiln.addptr %41, %40 : tensor<1x64x!kiln.ptr<f16>, #blocked2>, tensor<1x64xi32, #blocked2>
      %43 = kiln.expand_dims %5 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked1>
      %44 = kiln.expand_dims %6 {axis = 1 : i32} : tensor<64xi32, #slice3> -> tensor<64x1xi32, #blocked2>
      %45 = kiln.broadcast %42 : tensor<1x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
      %46 = kiln.broadcast %44 : tensor<64x1xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
      %47 = kiln.addptr %45, %46 : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
      %48 = kiln.load %47 : tensor<64x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64xf16, #blocked2>
      %49 = kiln.dot %22, %48, %cst_2 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked1> * tensor<64x64xf16, #blocked2> -> tensor<64x64xf32, #blocked>
      %50 = kiln.reduce(%49) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg14: f32, %arg15: f32):
        %79 = arith.maxnumf %arg14, %arg15 : f32
        kiln.reduce.return %79 : f32
      }
      %51 = kiln.splat %23 : f32 -> tensor<64xf32, #slice>
      %52 = arith.mulf %50, %51 : tensor<64xf32, #slice>
      %53 = arith.maxnumf %arg13, %52 : tensor<64xf32, #slice>
      %54 = kiln.splat %23 : f32 -> tensor<64x64xf32, #blocked>
      %55 = arith.mulf %49, %54 : tensor<64x64xf32, #blocked>
      %56 = kiln.expand_dims %53 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %57 = kiln.broadcast %56 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %58 = arith.subf %55, %57 : tensor<64x64xf32, #blocked>
      %59 = math.exp2 %58 : tensor<64x64xf32, #blocked>
      %60 = kiln.reduce(%59) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg14: f32, %arg15: f32):
        %79 = arith.addf %arg14, %arg15 : f32
        kiln.reduce.return %79 : f32
      }
      %61 = arith.subf %arg13, %53 : tensor<64xf32, #slice>
      %62 = math.exp2 %61 : tensor<64xf32, #slice>
      %63 = arith.mulf %arg11, %62 : tensor<64xf32, #slice>
      %64 = arith.addf %63, %60 : tensor<64xf32, #slice>
      %65 = kiln.expand_dims %62 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %66 = kiln.broadcast %65 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %67 = arith.mulf %arg12, %66 : tensor<64x64xf32, #blocked>
      %68 = kiln.splat %36 : i32 -> tensor<64x1xi32, #blocked1>
      %69 = arith.addi %68, %43 : tensor<64x1xi32, #blocked1>
      %70 = kiln.splat %arg7 : i32 -> tensor<64x1xi32, #blocked1>
      %71 = arith.muli %69, %70 : tensor<64x1xi32, #blocked1>
      %72 = kiln.splat %arg2 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
      %73 = kiln.addptr %72, %71 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
      %74 = kiln.broadcast %73 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
      %75 = kiln.addptr %74, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
      %76 = kiln.load %75 : tensor<64x64x!kiln.ptr<f16>, #blocked1> -> tensor<64x64xf16, #blocked1>
      %77 = arith.truncf %59 : tensor<64x64xf32, #blocked> to tensor<64x64xf16, #blocked>
      %78 = kiln.dot %77, %76, %67 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked> * tensor<64x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      scf.yield %64, %78, %53 : tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>
    }
    %loop2:3 = scf.for %iv2 = %c0_i32 to %arg9 step %c64_i32 iter_args(%l2 = %24#0, %acc2 = %24#1, %m2 = %24#2) -> (tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>)  : i32 {
      %b36 = arith.addi %2, %iv2 : i32
      %b37 = kiln.splat %b36 : i32 -> tensor<1x64xi32, #blocked2>
      %b38 = arith.addi %b37, %18 : tensor<1x64xi32, #blocked2>
      %b39 = kiln.splat %arg6 : i32 -> tensor<1x64xi32, #blocked2>
      %b40 = arith.muli %b38, %b39 : tensor<1x64xi32, #blocked2>
      %b41 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<1x64x!kiln.ptr<f16>, #blocked2>
      %b42 = kiln.addptr %b41, %b40 : tensor<1x64x!kiln.ptr<f16>, #blocked2>, tensor<1x64xi32, #blocked2>
      %b43 = kiln.expand_dims %5 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked1>
      %b44 = kiln.expand_dims %6 {axis = 1 : i32} : tensor<64xi32, #slice3> -> tensor<64x1xi32, #blocked2>
      %b45 = kiln.broadcast %b42 : tensor<1x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
      %b46 = kiln.broadcast %b44 : tensor<64x1xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
      %b47 = kiln.addptr %b45, %b46 : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
      %b48 = kiln.load %b47 : tensor<64x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64xf16, #blocked2>
      %b49 = kiln.dot %22, %b48, %cst_2 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked1> * tensor<64x64xf16, #blocked2> -> tensor<64x64xf32, #blocked>
      %b50 = kiln.reduce(%b49) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg14: f32, %arg15: f32):
        %b79 = arith.maxnumf %arg14, %arg15 : f32
        kiln.reduce.return %b79 : f32
      }
      %b51 = kiln.splat %23 : f32 -> tensor<64xf32, #slice>
      %b52 = arith.mulf %b50, %b51 : tensor<64xf32, #slice>
      %b53 = arith.maxnumf %m2, %b52 : tensor<64xf32, #slice>
      %b54 = kiln.splat %23 : f32 -> tensor<64x64xf32, #blocked>
      %b55 = arith.mulf %b49, %b54 : tensor<64x64xf32, #blocked>
      %b56 = kiln.expand_dims %b53 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %b57 = kiln.broadcast %b56 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %b58 = arith.subf %b55, %b57 : tensor<64x64xf32, #blocked>
      %b59 = math.exp2 %b58 : tensor<64x64xf32, #blocked>
      %b60 = kiln.reduce(%b59) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg14: f32, %arg15: f32):
        %b79 = arith.addf %arg14, %arg15 : f32
        kiln.reduce.return %b79 : f32
      }
      %b61 = arith.subf %m2, %b53 : tensor<64xf32, #slice>
      %b62 = math.exp2 %b61 : tensor<64xf32, #slice>
      %b63 = arith.mulf %l2, %b62 : tensor<64xf32, #slice>
      %b64 = arith.addf %b63, %b60 : tensor<64xf32, #slice>
      %b65 = kiln.expand_dims %b62 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %b66 = kiln.broadcast %b65 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %b67 = arith.mulf %acc2, %b66 : tensor<64x64xf32, #blocked>
      %b68 = kiln.splat %b36 : i32 -> tensor<64x1xi32, #blocked1>
      %b69 = arith.addi %b68, %b43 : tensor<64x1xi32, #blocked1>
      %b70 = kiln.splat %arg7 : i32 -> tensor<64x1xi32, #blocked1>
      %b71 = arith.muli %b69, %b70 : tensor<64x1xi32, #blocked1>
      %b72 = kiln.splat %arg2 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
      %b73 = kiln.addptr %b72, %b71 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
      %b74 = kiln.broadcast %b73 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
      %b75 = kiln.addptr %b74, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
      %b76 = kiln.load %b75 : tensor<64x64x!kiln.ptr<f16>, #blocked1> -> tensor<64x64xf16, #blocked1>
      %b77 = arith.truncf %b59 : tensor<64x64xf32, #blocked> to tensor<64x64xf16, #blocked>
      %b78 = kiln.dot %b77, %b76, %b67 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked> * tensor<64x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      scf.yield %b64, %b78, %b53 : tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>
    }
    %25 = kiln.expand_dims %loop2#0 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
    %26 = kiln.broadcast %25 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
    %27 = arith.divf %loop2#1, %26 : tensor<64x64xf32, #blocked>
    %28 = kiln.splat %arg8 : i32 -> tensor<64x1xi32, #blocked1>
    %29 = arith.muli %12, %28 : tensor<64x1xi32, #blocked1>
    %30 = kiln.splat %arg3 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
    %31 = kiln.addptr %30, %29 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
    %32 = kiln.broadcast %31 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
    %33 = kiln.addptr %32, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
    %34 = arith.truncf %27 : tensor<64x64xf32, #blocked> to tensor<64x64xf16, #blocked>
    %35 = kiln_gpu.convert_layout %34 : tensor<64x64xf16, #blocked> -> tensor<64x64xf16, #blocked1>
    kiln.store %33, %35 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xf16, #blocked1>
    return
  }
}


// -----

// The two versions of one loop that kiln-tensor-map-pointer-loads makes
// (here both through pointers): a program runs one of them, so neither is
// a second loop of dots for the other, and each is marked for
// kiln-gpu-overlap-dots as the loop alone would be (@attention).
// CHECK-LABEL: func.func @attention_versions
// CHECK: scf.if
// CHECK: scf.for
// CHECK: scf.yield
// CHECK-NEXT: } {kiln_gpu.overlap_dots}
// CHECK: } else {
// CHECK: scf.for
// CHECK: scf.yield
// CHECK-NEXT: } {kiln_gpu.overlap_dots}
// CHECK: } {kiln.tensor_map_version}
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice3 = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice4 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @attention_versions(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg3: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg4: f32, %arg5: i32 {kiln.divisibility = 16 : i32}, %arg6: i32 {kiln.divisibility = 16 : i32}, %arg7: i32 {kiln.divisibility = 16 : i32}, %arg8: i32 {kiln.divisibility = 16 : i32}, %arg9: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %cst = arith.constant dense<1.000000e+00> : tensor<64xf32, #slice>
    %cst_0 = arith.constant dense<0xFF800000> : tensor<64xf32, #slice>
    %c0_i32 = arith.constant 0 : i32
    %cst_1 = arith.constant 1.44269502 : f32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %c64_i32 = arith.constant 64 : i32
    %0 = kiln.program_id {axis = 0 : i32} : i32
    %1 = kiln.program_id {axis = 1 : i32} : i32
    %2 = arith.muli %1, %arg9 : i32
    %3 = arith.muli %0, %c64_i32 : i32
    %4 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %5 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %6 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %7 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice4>
    %8 = kiln.splat %3 : i32 -> tensor<64xi32, #slice2>
    %9 = arith.addi %8, %5 : tensor<64xi32, #slice2>
    %10 = kiln.expand_dims %9 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked1>
    %11 = kiln.splat %2 : i32 -> tensor<64x1xi32, #blocked1>
    %12 = arith.addi %11, %10 : tensor<64x1xi32, #blocked1>
    %13 = kiln.splat %arg5 : i32 -> tensor<64x1xi32, #blocked1>
    %14 = arith.muli %12, %13 : tensor<64x1xi32, #blocked1>
    %15 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
    %16 = kiln.addptr %15, %14 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
    %17 = kiln.expand_dims %4 {axis = 0 : i32} : tensor<64xi32, #slice1> -> tensor<1x64xi32, #blocked1>
    %18 = kiln.expand_dims %7 {axis = 0 : i32} : tensor<64xi32, #slice4> -> tensor<1x64xi32, #blocked2>
    %19 = kiln.broadcast %16 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
    %20 = kiln.broadcast %17 : tensor<1x64xi32, #blocked1> -> tensor<64x64xi32, #blocked1>
    %21 = kiln.addptr %19, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
    %22 = kiln.load %21 : tensor<64x64x!kiln.ptr<f16>, #blocked1> -> tensor<64x64xf16, #blocked1>
    %23 = arith.mulf %arg4, %cst_1 : f32
    %fits = arith.cmpi sgt, %arg9, %c0_i32 : i32
    %v:3 = scf.if %fits -> (tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>) {
    %24:3 = scf.for %arg10 = %c0_i32 to %arg9 step %c64_i32 iter_args(%arg11 = %cst, %arg12 = %cst_2, %arg13 = %cst_0) -> (tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>)  : i32 {
      %36 = arith.addi %2, %arg10 : i32
      %37 = kiln.splat %36 : i32 -> tensor<1x64xi32, #blocked2>
      %38 = arith.addi %37, %18 : tensor<1x64xi32, #blocked2>
      %39 = kiln.splat %arg6 : i32 -> tensor<1x64xi32, #blocked2>
      %40 = arith.muli %38, %39 : tensor<1x64xi32, #blocked2>
      %41 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<1x64x!kiln.ptr<f16>, #blocked2>
      %42 = kiln.addptr %41, %40 : tensor<1x64x!kiln.ptr<f16>, #blocked2>, tensor<1x64xi32, #blocked2>
      %43 = kiln.expand_dims %5 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked1>
      %44 = kiln.expand_dims %6 {axis = 1 : i32} : tensor<64xi32, #slice3> -> tensor<64x1xi32, #blocked2>
      %45 = kiln.broadcast %42 : tensor<1x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
      %46 = kiln.broadcast %44 : tensor<64x1xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
      %47 = kiln.addptr %45, %46 : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
      %48 = kiln.load %47 : tensor<64x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64xf16, #blocked2>
      %49 = kiln.dot %22, %48, %cst_2 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked1> * tensor<64x64xf16, #blocked2> -> tensor<64x64xf32, #blocked>
      %50 = kiln.reduce(%49) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg14: f32, %arg15: f32):
        %79 = arith.maxnumf %arg14, %arg15 : f32
        kiln.reduce.return %79 : f32
      }
      %51 = kiln.splat %23 : f32 -> tensor<64xf32, #slice>
      %52 = arith.mulf %50, %51 : tensor<64xf32, #slice>
      %53 = arith.maxnumf %arg13, %52 : tensor<64xf32, #slice>
      %54 = kiln.splat %23 : f32 -> tensor<64x64xf32, #blocked>
      %55 = arith.mulf %49, %54 : tensor<64x64xf32, #blocked>
      %56 = kiln.expand_dims %53 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %57 = kiln.broadcast %56 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %58 = arith.subf %55, %57 : tensor<64x64xf32, #blocked>
      %59 = math.exp2 %58 : tensor<64x64xf32, #blocked>
      %60 = kiln.reduce(%59) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg14: f32, %arg15: f32):
        %79 = arith.addf %arg14, %arg15 : f32
        kiln.reduce.return %79 : f32
      }
      %61 = arith.subf %arg13, %53 : tensor<64xf32, #slice>
      %62 = math.exp2 %61 : tensor<64xf32, #slice>
      %63 = arith.mulf %arg11, %62 : tensor<64xf32, #slice>
      %64 = arith.addf %63, %60 : tensor<64xf32, #slice>
      %65 = kiln.expand_dims %62 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %66 = kiln.broadcast %65 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %67 = arith.mulf %arg12, %66 : tensor<64x64xf32, #blocked>
      %68 = kiln.splat %36 : i32 -> tensor<64x1xi32, #blocked1>
      %69 = arith.addi %68, %43 : tensor<64x1xi32, #blocked1>
      %70 = kiln.splat %arg7 : i32 -> tensor<64x1xi32, #blocked1>
      %71 = arith.muli %69, %70 : tensor<64x1xi32, #blocked1>
      %72 = kiln.splat %arg2 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
      %73 = kiln.addptr %72, %71 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
      %74 = kiln.broadcast %73 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
      %75 = kiln.addptr %74, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
      %76 = kiln.load %75 : tensor<64x64x!kiln.ptr<f16>, #blocked1> -> tensor<64x64xf16, #blocked1>
      %77 = arith.truncf %59 : tensor<64x64xf32, #blocked> to tensor<64x64xf16, #blocked>
      %78 = kiln.dot %77, %76, %67 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked> * tensor<64x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      scf.yield %64, %78, %53 : tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>
    }
    scf.yield %24#0, %24#1, %24#2 : tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>
    } else {
    %loop2:3 = scf.for %iv2 = %c0_i32 to %arg9 step %c64_i32 iter_args(%l2 = %cst, %acc2 = %cst_2, %m2 = %cst_0) -> (tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>)  : i32 {
      %b36 = arith.addi %2, %iv2 : i32
      %b37 = kiln.splat %b36 : i32 -> tensor<1x64xi32, #blocked2>
      %b38 = arith.addi %b37, %18 : tensor<1x64xi32, #blocked2>
      %b39 = kiln.splat %arg6 : i32 -> tensor<1x64xi32, #blocked2>
      %b40 = arith.muli %b38, %b39 : tensor<1x64xi32, #blocked2>
      %b41 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<1x64x!kiln.ptr<f16>, #blocked2>
      %b42 = kiln.addptr %b41, %b40 : tensor<1x64x!kiln.ptr<f16>, #blocked2>, tensor<1x64xi32, #blocked2>
      %b43 = kiln.expand_dims %5 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked1>
      %b44 = kiln.expand_dims %6 {axis = 1 : i32} : tensor<64xi32, #slice3> -> tensor<64x1xi32, #blocked2>
      %b45 = kiln.broadcast %b42 : tensor<1x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
      %b46 = kiln.broadcast %b44 : tensor<64x1xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
      %b47 = kiln.addptr %b45, %b46 : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
      %b48 = kiln.load %b47 : tensor<64x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64xf16, #blocked2>
      %b49 = kiln.dot %22, %b48, %cst_2 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked1> * tensor<64x64xf16, #blocked2> -> tensor<64x64xf32, #blocked>
      %b50 = kiln.reduce(%b49) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg14: f32, %arg15: f32):
        %b79 = arith.maxnumf %arg14, %arg15 : f32
        kiln.reduce.return %b79 : f32
      }
      %b51 = kiln.splat %23 : f32 -> tensor<64xf32, #slice>
      %b52 = arith.mulf %b50, %b51 : tensor<64xf32, #slice>
      %b53 = arith.maxnumf %m2, %b52 : tensor<64xf32, #slice>
      %b54 = kiln.splat %23 : f32 -> tensor<64x64xf32, #blocked>
      %b55 = arith.mulf %b49, %b54 : tensor<64x64xf32, #blocked>
      %b56 = kiln.expand_dims %b53 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %b57 = kiln.broadcast %b56 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %b58 = arith.subf %b55, %b57 : tensor<64x64xf32, #blocked>
      %b59 = math.exp2 %b58 : tensor<64x64xf32, #blocked>
      %b60 = kiln.reduce(%b59) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg14: f32, %arg15: f32):
        %b79 = arith.addf %arg14, %arg15 : f32
        kiln.reduce.return %b79 : f32
      }
      %b61 = arith.subf %m2, %b53 : tensor<64xf32, #slice>
      %b62 = math.exp2 %b61 : tensor<64xf32, #slice>
      %b63 = arith.mulf %l2, %b62 : tensor<64xf32, #slice>
      %b64 = arith.addf %b63, %b60 : tensor<64xf32, #slice>
      %b65 = kiln.expand_dims %b62 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %b66 = kiln.broadcast %b65 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %b67 = arith.mulf %acc2, %b66 : tensor<64x64xf32, #blocked>
      %b68 = kiln.splat %b36 : i32 -> tensor<64x1xi32, #blocked1>
      %b69 = arith.addi %b68, %b43 : tensor<64x1xi32, #blocked1>
      %b70 = kiln.splat %arg7 : i32 -> tensor<64x1xi32, #blocked1>
      %b71 = arith.muli %b69, %b70 : tensor<64x1xi32, #blocked1>
      %b72 = kiln.splat %arg2 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
      %b73 = kiln.addptr %b72, %b71 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
      %b74 = kiln.broadcast %b73 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
      %b75 = kiln.addptr %b74, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
      %b76 = kiln.load %b75 : tensor<64x64x!kiln.ptr<f16>, #blocked1> -> tensor<64x64xf16, #blocked1>
      %b77 = arith.truncf %b59 : tensor<64x64xf32, #blocked> to tensor<64x64xf16, #blocked>
      %b78 = kiln.dot %b77, %b76, %b67 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked> * tensor<64x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      scf.yield %b64, %b78, %b53 : tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>
    }
    scf.yield %loop2#0, %loop2#1, %loop2#2 : tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>
    } {kiln.tensor_map_version}
    %25 = kiln.expand_dims %v#0 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
    %26 = kiln.broadcast %25 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
    %27 = arith.divf %v#1, %26 : tensor<64x64xf32, #blocked>
    %28 = kiln.splat %arg8 : i32 -> tensor<64x1xi32, #blocked1>
    %29 = arith.muli %12, %28 : tensor<64x1xi32, #blocked1>
    %30 = kiln.splat %arg3 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
    %31 = kiln.addptr %30, %29 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
    %32 = kiln.broadcast %31 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
    %33 = kiln.addptr %32, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
    %34 = arith.truncf %27 : tensor<64x64xf32, #blocked> to tensor<64x64xf16, #blocked>
    %35 = kiln_gpu.convert_layout %34 : tensor<64x64xf16, #blocked> -> tensor<64x64xf16, #blocked1>
    kiln.store %33, %35 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xf16, #blocked1>
    return
  }
}


// -----

// B read as the transpose of a [N, K] block loaded through pointers (a
// tensor descriptor made in the kernel, `desc.load(...).T`), contiguous
// along K: cp.async copies the block as it lies into a K-major slot
// (`transposed`), and the transpose goes with the load.
// CHECK-LABEL: func.func @transposed_b
// CHECK: kiln_gpu.async_copy {{.*}}operand = 0, {{.*}}slots = 3>} : tensor<64x32x!kiln.ptr<f16>
// CHECK: kiln_gpu.async_copy {{.*}}operand = 1, {{.*}}slots = 3, kMajor = true>, transposed} : tensor<64x32x!kiln.ptr<f16>
// CHECK: scf.for
// CHECK: %[[B:.*]] = kiln_gpu.shared_operand {{.*}}kMajor = true>} : tensor<32x64xf16
// CHECK-NOT: kiln.trans
// CHECK: kiln.dot %{{.*}}, %[[B]]
// CHECK: kiln_gpu.async_copy {{.*}}kMajor = true>, transposed}
// CHECK-NOT: kiln.load
// CHECK: scf.yield
// ONE-LABEL: func.func @transposed_b
// ONE-NOT: async_copy
// ONE: kiln.trans
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
#rows = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#cols = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @transposed_b(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %out: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %stride = arith.constant dense<1024> : tensor<64x1xi32, #blocked2>
    %r = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #rows>
    %c = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #cols>
    %r2 = kiln.expand_dims %r {axis = 1 : i32} : tensor<64xi32, #rows> -> tensor<64x1xi32, #blocked2>
    %rs = arith.muli %r2, %stride : tensor<64x1xi32, #blocked2>
    %c2 = kiln.expand_dims %c {axis = 0 : i32} : tensor<32xi32, #cols> -> tensor<1x32xi32, #blocked2>
    %rb = kiln.broadcast %rs : tensor<64x1xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %cb = kiln.broadcast %c2 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %offsets = arith.addi %rb, %cb : tensor<64x32xi32, #blocked2>
    %acc = scf.for %i = %c0 to %n step %c32 iter_args(%sum = %zero) -> (tensor<64x64xf32, #blocked>) : i32 {
      %step = kiln.splat %i : i32 -> tensor<64x32xi32, #blocked2>
      %at = arith.addi %offsets, %step : tensor<64x32xi32, #blocked2>
      %pa0 = kiln.splat %a : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
      %pa = kiln.addptr %pa0, %at : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %pb0 = kiln.splat %b : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
      %pb = kiln.addptr %pb0, %at : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %x = kiln.load %pa : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %y = kiln.load %pb : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
      %d = kiln.dot %x, %yt, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      scf.yield %d : tensor<64x64xf32, #blocked>
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// A [32, 64] block read as B by two wgmma dots: as loaded ([K][N],
// N-major) by one, and transposed ([K][N] = [64][32], K-major) by the
// other (tutorial 06's backward reads dO and qT so). One slot holds its
// rows as loaded; the copies write it through the first dot's view, and
// each dot reads it in its own.
// CHECK-LABEL: func.func @one_slot_two_views
// CHECK: kiln_gpu.async_copy {{.*}}operand = 1, {{.*}}offset = 0, slotBytes = 4096, slots = 3>} : tensor<32x64x!kiln.ptr<f16>
// CHECK: scf.for
// CHECK: %[[N:.*]] = kiln_gpu.shared_operand {{.*}}operand = 1, {{.*}}offset = 0, slotBytes = 4096, slots = 3>} : tensor<32x64xf16
// CHECK: kiln.dot %{{.*}}, %[[N]]
// CHECK: %[[K:.*]] = kiln_gpu.shared_operand {{.*}}operand = 1, {{.*}}offset = 0, slotBytes = 4096, slots = 3, kMajor = true>} : tensor<64x32xf16
// CHECK-NOT: kiln.trans
// CHECK: kiln.dot %{{.*}}, %[[K]]
// CHECK-NOT: kiln.load
// CHECK: scf.yield
// ONE-LABEL: func.func @one_slot_two_views
// ONE-NOT: async_copy
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#rowMajor = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#colMajor = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
#rows = #kiln_gpu.slice<{dim = 1, parent = #rowMajor}>
#cols = #kiln_gpu.slice<{dim = 0, parent = #rowMajor}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @one_slot_two_views(%b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %x: tensor<64x32xf16, #rowMajor>, %z: tensor<64x64xf16, #rowMajor>, %out: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #acc>
    %zeroNarrow = arith.constant dense<0.000000e+00> : tensor<64x32xf32, #acc>
    %stride = arith.constant dense<64> : tensor<32x1xi32, #rowMajor>
    %r = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #rows>
    %c = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #cols>
    %r2 = kiln.expand_dims %r {axis = 1 : i32} : tensor<32xi32, #rows> -> tensor<32x1xi32, #rowMajor>
    %rs = arith.muli %r2, %stride : tensor<32x1xi32, #rowMajor>
    %c2 = kiln.expand_dims %c {axis = 0 : i32} : tensor<64xi32, #cols> -> tensor<1x64xi32, #rowMajor>
    %rb = kiln.broadcast %rs : tensor<32x1xi32, #rowMajor> -> tensor<32x64xi32, #rowMajor>
    %cb = kiln.broadcast %c2 : tensor<1x64xi32, #rowMajor> -> tensor<32x64xi32, #rowMajor>
    %offsets = arith.addi %rb, %cb : tensor<32x64xi32, #rowMajor>
    %res:2 = scf.for %i = %c0 to %n step %c64 iter_args(%s = %zero, %t = %zeroNarrow) -> (tensor<64x64xf32, #acc>, tensor<64x32xf32, #acc>) : i32 {
      %step = kiln.splat %i : i32 -> tensor<32x64xi32, #rowMajor>
      %at = arith.addi %offsets, %step : tensor<32x64xi32, #rowMajor>
      %pb0 = kiln.splat %b : !kiln.ptr<f16> -> tensor<32x64x!kiln.ptr<f16>, #rowMajor>
      %pb = kiln.addptr %pb0, %at : tensor<32x64x!kiln.ptr<f16>, #rowMajor>, tensor<32x64xi32, #rowMajor>
      %y = kiln.load %pb : tensor<32x64x!kiln.ptr<f16>, #rowMajor> -> tensor<32x64xf16, #rowMajor>
      %d = kiln.dot %x, %y, %s {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #rowMajor> * tensor<32x64xf16, #rowMajor> -> tensor<64x64xf32, #acc>
      %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<32x64xf16, #rowMajor> -> tensor<64x32xf16, #colMajor>
      %e = kiln.dot %z, %yt, %t {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #rowMajor> * tensor<64x32xf16, #colMajor> -> tensor<64x32xf32, #acc>
      scf.yield %d, %e : tensor<64x64xf32, #acc>, tensor<64x32xf32, #acc>
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #acc>
    kiln.store %po, %res#0 : tensor<64x64x!kiln.ptr<f32>, #acc>, tensor<64x64xf32, #acc>
    %pn = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x32x!kiln.ptr<f32>, #acc>
    kiln.store %pn, %res#1 : tensor<64x32x!kiln.ptr<f32>, #acc>, tensor<64x32xf32, #acc>
    return
  }
}

// -----

// The same block with one layout conversion for both readers (the layout
// passes convert a square dO so at head dimension 64): a slot holds the
// block as loaded whatever layout its readers had it in, so it is copied
// as before and the conversion, read by both, goes once neither reads it.
// CHECK-LABEL: func.func @one_slot_through_one_conversion
// CHECK: kiln_gpu.async_copy {{.*}}operand = 1, {{.*}}offset = 0, slotBytes = 4096, slots = 3>} : tensor<32x64x!kiln.ptr<f16>
// CHECK: scf.for
// CHECK-NOT: kiln_gpu.convert_layout
// CHECK: %[[N:.*]] = kiln_gpu.shared_operand {{.*}}operand = 1, {{.*}}offset = 0, slotBytes = 4096, slots = 3>} : tensor<32x64xf16
// CHECK: kiln.dot %{{.*}}, %[[N]]
// CHECK: %[[K:.*]] = kiln_gpu.shared_operand {{.*}}operand = 1, {{.*}}offset = 0, slotBytes = 4096, slots = 3, kMajor = true>} : tensor<64x32xf16
// CHECK-NOT: kiln.trans
// CHECK: kiln.dot %{{.*}}, %[[K]]
// CHECK-NOT: kiln.load
// CHECK-NOT: kiln_gpu.convert_layout
// CHECK: scf.yield
// ONE-LABEL: func.func @one_slot_through_one_conversion
// ONE-NOT: async_copy
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#rowMajor = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#colMajor = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
#rows = #kiln_gpu.slice<{dim = 1, parent = #rowMajor}>
#cols = #kiln_gpu.slice<{dim = 0, parent = #rowMajor}>
#converted = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
#convertedT = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @one_slot_through_one_conversion(%b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %x: tensor<64x32xf16, #rowMajor>, %z: tensor<64x64xf16, #rowMajor>, %out: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #acc>
    %zeroNarrow = arith.constant dense<0.000000e+00> : tensor<64x32xf32, #acc>
    %stride = arith.constant dense<64> : tensor<32x1xi32, #rowMajor>
    %r = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #rows>
    %c = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #cols>
    %r2 = kiln.expand_dims %r {axis = 1 : i32} : tensor<32xi32, #rows> -> tensor<32x1xi32, #rowMajor>
    %rs = arith.muli %r2, %stride : tensor<32x1xi32, #rowMajor>
    %c2 = kiln.expand_dims %c {axis = 0 : i32} : tensor<64xi32, #cols> -> tensor<1x64xi32, #rowMajor>
    %rb = kiln.broadcast %rs : tensor<32x1xi32, #rowMajor> -> tensor<32x64xi32, #rowMajor>
    %cb = kiln.broadcast %c2 : tensor<1x64xi32, #rowMajor> -> tensor<32x64xi32, #rowMajor>
    %offsets = arith.addi %rb, %cb : tensor<32x64xi32, #rowMajor>
    %res:2 = scf.for %i = %c0 to %n step %c64 iter_args(%s = %zero, %t = %zeroNarrow) -> (tensor<64x64xf32, #acc>, tensor<64x32xf32, #acc>) : i32 {
      %step = kiln.splat %i : i32 -> tensor<32x64xi32, #rowMajor>
      %at = arith.addi %offsets, %step : tensor<32x64xi32, #rowMajor>
      %pb0 = kiln.splat %b : !kiln.ptr<f16> -> tensor<32x64x!kiln.ptr<f16>, #rowMajor>
      %pb = kiln.addptr %pb0, %at : tensor<32x64x!kiln.ptr<f16>, #rowMajor>, tensor<32x64xi32, #rowMajor>
      %y = kiln.load %pb : tensor<32x64x!kiln.ptr<f16>, #rowMajor> -> tensor<32x64xf16, #rowMajor>
      %yc = kiln_gpu.convert_layout %y : tensor<32x64xf16, #rowMajor> -> tensor<32x64xf16, #converted>
      %d = kiln.dot %x, %yc, %s {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #rowMajor> * tensor<32x64xf16, #converted> -> tensor<64x64xf32, #acc>
      %yt = kiln.trans %yc {order = array<i32: 1, 0>} : tensor<32x64xf16, #converted> -> tensor<64x32xf16, #convertedT>
      %e = kiln.dot %z, %yt, %t {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #rowMajor> * tensor<64x32xf16, #convertedT> -> tensor<64x32xf32, #acc>
      scf.yield %d, %e : tensor<64x64xf32, #acc>, tensor<64x32xf32, #acc>
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #acc>
    kiln.store %po, %res#0 : tensor<64x64x!kiln.ptr<f32>, #acc>, tensor<64x64xf32, #acc>
    %pn = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x32x!kiln.ptr<f32>, #acc>
    kiln.store %pn, %res#1 : tensor<64x32x!kiln.ptr<f32>, #acc>, tensor<64x32xf32, #acc>
    return
  }
}

// -----

// A block loaded before two loops and read as A in each (the causal
// forward's Q): copied into a slot of its own before the first loop, where
// the second loop's slots put it too; no copy between writes those bytes,
// so the second loop reads the slot as the first left it. The load is gone
// once the second loop reads its slot.
// CHECK-LABEL: func.func @invariant_two_loops
// CHECK-NOT: kiln.load %{{.*}} : tensor<64x32x
// CHECK: kiln_gpu.async_copy {{.*}}operand = 0, {{.*}}offset = 12288, {{.*}}slots = 1>} : tensor<64x32x!kiln.ptr<f16>
// CHECK: scf.for
// CHECK: kiln_gpu.shared_operand %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 0, {{.*}}offset = 12288, {{.*}}slots = 1>}
// CHECK: scf.yield
// CHECK-NOT: operand = 0, {{.*}}slots = 1>} : tensor<64x32x!kiln.ptr<f16>
// CHECK: scf.for
// CHECK: kiln_gpu.shared_operand %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 0, {{.*}}offset = 12288, {{.*}}slots = 1>}
// CHECK-NOT: kiln.load
// CHECK: return
// ONE-LABEL: func.func @invariant_two_loops
// ONE-NOT: async_copy
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#rowMajor = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#wide = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#rows = #kiln_gpu.slice<{dim = 1, parent = #rowMajor}>
#cols = #kiln_gpu.slice<{dim = 0, parent = #rowMajor}>
#wideRows = #kiln_gpu.slice<{dim = 1, parent = #wide}>
#wideCols = #kiln_gpu.slice<{dim = 0, parent = #wide}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @invariant_two_loops(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %out: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #acc>
    %stride = arith.constant dense<1024> : tensor<64x1xi32, #rowMajor>
    %r = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #rows>
    %c = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #cols>
    %r2 = kiln.expand_dims %r {axis = 1 : i32} : tensor<64xi32, #rows> -> tensor<64x1xi32, #rowMajor>
    %rs = arith.muli %r2, %stride : tensor<64x1xi32, #rowMajor>
    %c2 = kiln.expand_dims %c {axis = 0 : i32} : tensor<32xi32, #cols> -> tensor<1x32xi32, #rowMajor>
    %rb = kiln.broadcast %rs : tensor<64x1xi32, #rowMajor> -> tensor<64x32xi32, #rowMajor>
    %cb = kiln.broadcast %c2 : tensor<1x32xi32, #rowMajor> -> tensor<64x32xi32, #rowMajor>
    %offsets = arith.addi %rb, %cb : tensor<64x32xi32, #rowMajor>
    %pa0 = kiln.splat %a : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #rowMajor>
    %pa = kiln.addptr %pa0, %offsets : tensor<64x32x!kiln.ptr<f16>, #rowMajor>, tensor<64x32xi32, #rowMajor>
    %q = kiln.load %pa : tensor<64x32x!kiln.ptr<f16>, #rowMajor> -> tensor<64x32xf16, #rowMajor>
    %bstride = arith.constant dense<64> : tensor<32x1xi32, #wide>
    %br = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #wideRows>
    %bc = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #wideCols>
    %br2 = kiln.expand_dims %br {axis = 1 : i32} : tensor<32xi32, #wideRows> -> tensor<32x1xi32, #wide>
    %brs = arith.muli %br2, %bstride : tensor<32x1xi32, #wide>
    %bc2 = kiln.expand_dims %bc {axis = 0 : i32} : tensor<64xi32, #wideCols> -> tensor<1x64xi32, #wide>
    %brb = kiln.broadcast %brs : tensor<32x1xi32, #wide> -> tensor<32x64xi32, #wide>
    %bcb = kiln.broadcast %bc2 : tensor<1x64xi32, #wide> -> tensor<32x64xi32, #wide>
    %boffsets = arith.addi %brb, %bcb : tensor<32x64xi32, #wide>
    %pb0 = kiln.splat %b : !kiln.ptr<f16> -> tensor<32x64x!kiln.ptr<f16>, #wide>
    %first = scf.for %i = %c0 to %n step %c64 iter_args(%sum = %zero) -> (tensor<64x64xf32, #acc>) : i32 {
      %step = kiln.splat %i : i32 -> tensor<32x64xi32, #wide>
      %at = arith.addi %boffsets, %step : tensor<32x64xi32, #wide>
      %pb = kiln.addptr %pb0, %at : tensor<32x64x!kiln.ptr<f16>, #wide>, tensor<32x64xi32, #wide>
      %y = kiln.load %pb : tensor<32x64x!kiln.ptr<f16>, #wide> -> tensor<32x64xf16, #wide>
      %d = kiln.dot %q, %y, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #rowMajor> * tensor<32x64xf16, #wide> -> tensor<64x64xf32, #acc>
      scf.yield %d : tensor<64x64xf32, #acc>
    }
    %second = scf.for %i = %c0 to %n step %c64 iter_args(%sum = %first) -> (tensor<64x64xf32, #acc>) : i32 {
      %step = kiln.splat %i : i32 -> tensor<32x64xi32, #wide>
      %at = arith.addi %boffsets, %step : tensor<32x64xi32, #wide>
      %pb = kiln.addptr %pb0, %at : tensor<32x64x!kiln.ptr<f16>, #wide>, tensor<32x64xi32, #wide>
      %y = kiln.load %pb : tensor<32x64x!kiln.ptr<f16>, #wide> -> tensor<32x64xf16, #wide>
      %d = kiln.dot %q, %y, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #rowMajor> * tensor<32x64xf16, #wide> -> tensor<64x64xf32, #acc>
      scf.yield %d : tensor<64x64xf32, #acc>
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #acc>
    kiln.store %po, %second : tensor<64x64x!kiln.ptr<f32>, #acc>, tensor<64x64xf32, #acc>
    return
  }
}

// -----

// The same two loops with one between them of five stages, whose slots
// take the bytes where the others keep A (its own A slot comes after them):
// the third loop copies A again.
// CHECK-LABEL: func.func @invariant_overwritten_between
// ONE-LABEL: func.func @invariant_overwritten_between
// CHECK: kiln_gpu.async_copy {{.*}}operand = 0, {{.*}}offset = 12288, {{.*}}slots = 1>} : tensor<64x32x!kiln.ptr<f16>
// CHECK: scf.for
// CHECK: kiln_gpu.async_copy {{.*}}operand = 0, {{.*}}offset = 20480, {{.*}}slots = 1>} : tensor<64x32x!kiln.ptr<f16>
// CHECK: scf.for
// CHECK: kiln_gpu.async_copy {{.*}}operand = 0, {{.*}}offset = 12288, {{.*}}slots = 1>} : tensor<64x32x!kiln.ptr<f16>
// CHECK: scf.for
// CHECK: return
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#rowMajor = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#wide = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#rows = #kiln_gpu.slice<{dim = 1, parent = #rowMajor}>
#cols = #kiln_gpu.slice<{dim = 0, parent = #rowMajor}>
#wideRows = #kiln_gpu.slice<{dim = 1, parent = #wide}>
#wideCols = #kiln_gpu.slice<{dim = 0, parent = #wide}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @invariant_overwritten_between(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %out: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #acc>
    %stride = arith.constant dense<1024> : tensor<64x1xi32, #rowMajor>
    %r = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #rows>
    %c = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #cols>
    %r2 = kiln.expand_dims %r {axis = 1 : i32} : tensor<64xi32, #rows> -> tensor<64x1xi32, #rowMajor>
    %rs = arith.muli %r2, %stride : tensor<64x1xi32, #rowMajor>
    %c2 = kiln.expand_dims %c {axis = 0 : i32} : tensor<32xi32, #cols> -> tensor<1x32xi32, #rowMajor>
    %rb = kiln.broadcast %rs : tensor<64x1xi32, #rowMajor> -> tensor<64x32xi32, #rowMajor>
    %cb = kiln.broadcast %c2 : tensor<1x32xi32, #rowMajor> -> tensor<64x32xi32, #rowMajor>
    %offsets = arith.addi %rb, %cb : tensor<64x32xi32, #rowMajor>
    %pa0 = kiln.splat %a : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #rowMajor>
    %pa = kiln.addptr %pa0, %offsets : tensor<64x32x!kiln.ptr<f16>, #rowMajor>, tensor<64x32xi32, #rowMajor>
    %q = kiln.load %pa : tensor<64x32x!kiln.ptr<f16>, #rowMajor> -> tensor<64x32xf16, #rowMajor>
    %bstride = arith.constant dense<64> : tensor<32x1xi32, #wide>
    %br = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #wideRows>
    %bc = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #wideCols>
    %br2 = kiln.expand_dims %br {axis = 1 : i32} : tensor<32xi32, #wideRows> -> tensor<32x1xi32, #wide>
    %brs = arith.muli %br2, %bstride : tensor<32x1xi32, #wide>
    %bc2 = kiln.expand_dims %bc {axis = 0 : i32} : tensor<64xi32, #wideCols> -> tensor<1x64xi32, #wide>
    %brb = kiln.broadcast %brs : tensor<32x1xi32, #wide> -> tensor<32x64xi32, #wide>
    %bcb = kiln.broadcast %bc2 : tensor<1x64xi32, #wide> -> tensor<32x64xi32, #wide>
    %boffsets = arith.addi %brb, %bcb : tensor<32x64xi32, #wide>
    %pb0 = kiln.splat %b : !kiln.ptr<f16> -> tensor<32x64x!kiln.ptr<f16>, #wide>
    %first = scf.for %i = %c0 to %n step %c64 iter_args(%sum = %zero) -> (tensor<64x64xf32, #acc>) : i32 {
      %step = kiln.splat %i : i32 -> tensor<32x64xi32, #wide>
      %at = arith.addi %boffsets, %step : tensor<32x64xi32, #wide>
      %pb = kiln.addptr %pb0, %at : tensor<32x64x!kiln.ptr<f16>, #wide>, tensor<32x64xi32, #wide>
      %y = kiln.load %pb : tensor<32x64x!kiln.ptr<f16>, #wide> -> tensor<32x64xf16, #wide>
      %d = kiln.dot %q, %y, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #rowMajor> * tensor<32x64xf16, #wide> -> tensor<64x64xf32, #acc>
      scf.yield %d : tensor<64x64xf32, #acc>
    }
    %middle = scf.for %i = %c0 to %n step %c64 iter_args(%sum = %first) -> (tensor<64x64xf32, #acc>) : i32 {
      %step = kiln.splat %i : i32 -> tensor<32x64xi32, #wide>
      %at = arith.addi %boffsets, %step : tensor<32x64xi32, #wide>
      %pb = kiln.addptr %pb0, %at : tensor<32x64x!kiln.ptr<f16>, #wide>, tensor<32x64xi32, #wide>
      %y = kiln.load %pb : tensor<32x64x!kiln.ptr<f16>, #wide> -> tensor<32x64xf16, #wide>
      %d = kiln.dot %q, %y, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #rowMajor> * tensor<32x64xf16, #wide> -> tensor<64x64xf32, #acc>
      scf.yield %d : tensor<64x64xf32, #acc>
    } {kiln.num_stages = 5 : i32}
    %second = scf.for %i = %c0 to %n step %c64 iter_args(%sum = %middle) -> (tensor<64x64xf32, #acc>) : i32 {
      %step = kiln.splat %i : i32 -> tensor<32x64xi32, #wide>
      %at = arith.addi %boffsets, %step : tensor<32x64xi32, #wide>
      %pb = kiln.addptr %pb0, %at : tensor<32x64x!kiln.ptr<f16>, #wide>, tensor<32x64xi32, #wide>
      %y = kiln.load %pb : tensor<32x64x!kiln.ptr<f16>, #wide> -> tensor<32x64xf16, #wide>
      %d = kiln.dot %q, %y, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #rowMajor> * tensor<32x64xf16, #wide> -> tensor<64x64xf32, #acc>
      scf.yield %d : tensor<64x64xf32, #acc>
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #acc>
    kiln.store %po, %second : tensor<64x64x!kiln.ptr<f32>, #acc>, tensor<64x64xf32, #acc>
    return
  }
}

// -----

// Loads through host tensor descriptors whose row the loop carries (as
// tutorial 06's forward does): the masked pointers, computed from the same
// carried row, run ahead with the coordinates (and die), so the loop is
// pipelined.
// CHECK-LABEL: func.func @tma_carried_row
// CHECK: kiln_gpu.init_tma_barriers
// CHECK: scf.for
// CHECK: kiln_gpu.wait_tma_barrier
// CHECK: kiln.dot
// CHECK: kiln_gpu.async_tma_copy
// CHECK: kiln_gpu.async_tma_copy
// CHECK-NOT: kiln.load
// CHECK: scf.yield
// ONE-LABEL: func.func @tma_carried_row
// ONE-NOT: async_tma_copy
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @tma_carried_row(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapA: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %row: i32, %col: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %pa = kiln.splat %a : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %pb = kiln.splat %b : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %acc:2 = scf.for %i = %c0 to %n step %c1 iter_args(%sum = %zero, %k = %c0) -> (tensor<64x64xf32, #blocked>, i32) : i32 {
      %ko = kiln.splat %k : i32 -> tensor<64x32xi32, #blocked2>
      %pak = kiln.addptr %pa, %ko : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %pbk = kiln.addptr %pb, %ko : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %x = kiln.load %pak tensor_map %mapA[%row, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %y = kiln.load %pbk tensor_map %mapB[%col, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
      %d = kiln.dot %x, %yt, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      %next = arith.addi %k, %c32 : i32
      scf.yield %d, %next : tensor<64x64xf32, #blocked>, i32
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc#0 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// A load in the loop that no dot reads (a row of statistics, as
// attention's backward loads M and Delta): copied into block slots with
// the operands, in their commit groups, and read back from the slot the
// dots read, just before its first reader; its masked-off elements,
// zero-filled by the copies, become its `other` again.
// CHECK: // -----
// CHECK-LABEL: func.func @row_block
// CHECK: kiln_gpu.async_copy %{{.*}}, %[[S0:.*]], %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 0
// CHECK: kiln_gpu.async_copy %{{.*}}, %[[S0]], %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 1
// The copy reads its pointers under a blocked layout of its own, the slot
// is read under the row's.
// CHECK: kiln_gpu.async_copy_block %{{.*}}, %[[S0]], %{{.*}} {buffer = #kiln_gpu.block_buffer<offset = 24576, slotBytes = 256, slots = 3>} : tensor<64x!kiln.ptr<f32>, #[[COPY:blocked[0-9]*]]>, tensor<64xi1, #[[COPY]]>
// CHECK-NEXT: kiln_gpu.async_commit_group
// CHECK: kiln_gpu.async_copy_block %{{.*}}, %{{.*}}, %{{.*}} {buffer = #kiln_gpu.block_buffer<offset = 24576
// CHECK-NEXT: kiln_gpu.async_commit_group
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[SLOT:[a-z0-9_]*]] = %{{[a-z0-9_]*}})
// CHECK-NEXT: kiln_gpu.async_wait {pending = 1 : i32}
// CHECK-NOT: kiln.load
// CHECK: kiln.dot
// CHECK: kiln_gpu.async_copy %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 1
// CHECK: kiln_gpu.async_copy_block %{{.*}}, %{{.*}}, %{{.*}} {buffer = #kiln_gpu.block_buffer<offset = 24576
// CHECK-NEXT: kiln_gpu.async_commit_group
// CHECK-NEXT: %[[ROW:.*]] = kiln_gpu.load_block %[[SLOT]] {buffer = #kiln_gpu.block_buffer<offset = 24576, slotBytes = 256, slots = 3>} : tensor<64xf32, #slice{{[0-9]*}}>
// CHECK-NEXT: %[[KEPT:.*]] = arith.select %{{.*}}, %[[ROW]], %{{.*}} : tensor<64xi1, #{{.*}}>, tensor<64xf32, #{{.*}}>
// CHECK-NEXT: kiln.expand_dims %[[KEPT]]
// CHECK-NOT: kiln.load
// CHECK: scf.yield
// ONE-LABEL: func.func @row_block
// ONE-NOT: async_copy_block
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice3 = #kiln_gpu.slice<{dim = 0, parent = #blocked}>
#slice4 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice5 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @row_block(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg3: i32 {kiln.divisibility = 16 : i32}, %rows: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %inf = arith.constant dense<0x7F800000> : tensor<64xf32, #slice2>
    %c64_i32 = arith.constant 64 : i32
    %cst = arith.constant dense<64> : tensor<64x1xi32, #blocked>
    %cst_0 = arith.constant dense<2048> : tensor<32x64xi32, #blocked1>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32, #blocked2>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf16, #blocked2>
    %cst_3 = arith.constant dense<64> : tensor<32x1xi32, #blocked1>
    %cst_4 = arith.constant dense<32> : tensor<64x1xi32, #blocked2>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %c32_i32 = arith.constant 32 : i32
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice>
    %1 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %2 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %3 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %4 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice4>
    %5 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice5>
    %6 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #slice> -> tensor<64x1xi32, #blocked2>
    %7 = kiln.expand_dims %2 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked>
    %8 = arith.muli %6, %cst_4 : tensor<64x1xi32, #blocked2>
    %9 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked2>
    %10 = kiln.addptr %9, %8 : tensor<64x1x!kiln.ptr<f16>, #blocked2>, tensor<64x1xi32, #blocked2>
    %11 = kiln.expand_dims %5 {axis = 0 : i32} : tensor<32xi32, #slice5> -> tensor<1x32xi32, #blocked2>
    %12 = kiln.broadcast %10 : tensor<64x1x!kiln.ptr<f16>, #blocked2> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %13 = kiln.broadcast %11 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %14 = kiln.addptr %12, %13 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %15 = kiln.expand_dims %4 {axis = 1 : i32} : tensor<32xi32, #slice4> -> tensor<32x1xi32, #blocked1>
    %16 = arith.muli %15, %cst_3 : tensor<32x1xi32, #blocked1>
    %17 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<32x1x!kiln.ptr<f16>, #blocked1>
    %18 = kiln.addptr %17, %16 : tensor<32x1x!kiln.ptr<f16>, #blocked1>, tensor<32x1xi32, #blocked1>
    %19 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<64xi32, #slice1> -> tensor<1x64xi32, #blocked1>
    %20 = kiln.expand_dims %3 {axis = 0 : i32} : tensor<64xi32, #slice3> -> tensor<1x64xi32, #blocked>
    %21 = kiln.broadcast %18 : tensor<32x1x!kiln.ptr<f16>, #blocked1> -> tensor<32x64x!kiln.ptr<f16>, #blocked1>
    %22 = kiln.broadcast %19 : tensor<1x64xi32, #blocked1> -> tensor<32x64xi32, #blocked1>
    %23 = kiln.addptr %21, %22 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
    %rp0 = kiln.splat %rows : !kiln.ptr<f32> -> tensor<64x!kiln.ptr<f32>, #slice2>
    %rp1 = kiln.addptr %rp0, %2 : tensor<64x!kiln.ptr<f32>, #slice2>, tensor<64xi32, #slice2>
    %24:3 = scf.for %arg4 = %c0_i32 to %arg3 step %c1_i32 iter_args(%arg5 = %cst_5, %arg6 = %14, %arg7 = %23) -> (tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>)  : i32 {
      %31 = arith.muli %arg4, %c32_i32 : i32
      %32 = arith.subi %arg3, %31 : i32
      %33 = kiln.splat %32 : i32 -> tensor<1x32xi32, #blocked2>
      %34 = arith.cmpi slt, %11, %33 : tensor<1x32xi32, #blocked2>
      %35 = kiln.broadcast %34 : tensor<1x32xi1, #blocked2> -> tensor<64x32xi1, #blocked2>
      %36 = kiln.load %arg6, %35, %cst_2 : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %37 = kiln.load %arg7 : tensor<32x64x!kiln.ptr<f16>, #blocked1> -> tensor<32x64xf16, #blocked1>
      %ro = arith.muli %arg4, %c64_i32 : i32
      %ros = kiln.splat %ro : i32 -> tensor<64xi32, #slice2>
      %rp = kiln.addptr %rp1, %ros : tensor<64x!kiln.ptr<f32>, #slice2>, tensor<64xi32, #slice2>
      %ri = arith.addi %2, %ros : tensor<64xi32, #slice2>
      %rn = kiln.splat %arg3 : i32 -> tensor<64xi32, #slice2>
      %rm = arith.cmpi slt, %ri, %rn : tensor<64xi32, #slice2>
      %row = kiln.load %rp, %rm, %inf : tensor<64x!kiln.ptr<f32>, #slice2> -> tensor<64xf32, #slice2>
      %d = kiln.dot %36, %37, %arg5 {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      %re = kiln.expand_dims %row {axis = 1 : i32} : tensor<64xf32, #slice2> -> tensor<64x1xf32, #blocked>
      %rb = kiln.broadcast %re : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %38 = arith.addf %d, %rb : tensor<64x64xf32, #blocked>
      %39 = kiln.addptr %arg6, %cst_1 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %40 = kiln.addptr %arg7, %cst_0 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
      scf.yield %38, %39, %40 : tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>
    }
    %25 = arith.muli %7, %cst : tensor<64x1xi32, #blocked>
    %26 = kiln.splat %arg2 : !kiln.ptr<f32> -> tensor<64x1x!kiln.ptr<f32>, #blocked>
    %27 = kiln.addptr %26, %25 : tensor<64x1x!kiln.ptr<f32>, #blocked>, tensor<64x1xi32, #blocked>
    %28 = kiln.broadcast %27 : tensor<64x1x!kiln.ptr<f32>, #blocked> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    %29 = kiln.broadcast %20 : tensor<1x64xi32, #blocked> -> tensor<64x64xi32, #blocked>
    %30 = kiln.addptr %28, %29 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xi32, #blocked>
    kiln.store %30, %24#0 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// The same row, its mask computed from a value the loop carries: the
// pipelined loop holds that value ahead, so the mask could not be applied
// after the slot's read; the row stays a load (the operands still go
// through slots).
// CHECK: // -----
// CHECK-LABEL: func.func @row_block_carried_mask
// CHECK-NOT: async_copy_block
// CHECK: scf.for
// CHECK-NOT: load_block
// CHECK: kiln.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x!kiln.ptr<f32>, #{{.*}}> -> tensor<64xf32, #{{.*}}>
// CHECK: kiln_gpu.async_copy %
// CHECK-NOT: async_copy_block
// CHECK: scf.yield
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice3 = #kiln_gpu.slice<{dim = 0, parent = #blocked}>
#slice4 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice5 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @row_block_carried_mask(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg3: i32 {kiln.divisibility = 16 : i32}, %rows: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %inf = arith.constant dense<0x7F800000> : tensor<64xf32, #slice2>
    %c64_i32 = arith.constant 64 : i32
    %cst = arith.constant dense<64> : tensor<64x1xi32, #blocked>
    %cst_0 = arith.constant dense<2048> : tensor<32x64xi32, #blocked1>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32, #blocked2>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf16, #blocked2>
    %cst_3 = arith.constant dense<64> : tensor<32x1xi32, #blocked1>
    %cst_4 = arith.constant dense<32> : tensor<64x1xi32, #blocked2>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %c32_i32 = arith.constant 32 : i32
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice>
    %1 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %2 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %3 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %4 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice4>
    %5 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice5>
    %6 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #slice> -> tensor<64x1xi32, #blocked2>
    %7 = kiln.expand_dims %2 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked>
    %8 = arith.muli %6, %cst_4 : tensor<64x1xi32, #blocked2>
    %9 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked2>
    %10 = kiln.addptr %9, %8 : tensor<64x1x!kiln.ptr<f16>, #blocked2>, tensor<64x1xi32, #blocked2>
    %11 = kiln.expand_dims %5 {axis = 0 : i32} : tensor<32xi32, #slice5> -> tensor<1x32xi32, #blocked2>
    %12 = kiln.broadcast %10 : tensor<64x1x!kiln.ptr<f16>, #blocked2> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %13 = kiln.broadcast %11 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %14 = kiln.addptr %12, %13 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %15 = kiln.expand_dims %4 {axis = 1 : i32} : tensor<32xi32, #slice4> -> tensor<32x1xi32, #blocked1>
    %16 = arith.muli %15, %cst_3 : tensor<32x1xi32, #blocked1>
    %17 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<32x1x!kiln.ptr<f16>, #blocked1>
    %18 = kiln.addptr %17, %16 : tensor<32x1x!kiln.ptr<f16>, #blocked1>, tensor<32x1xi32, #blocked1>
    %19 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<64xi32, #slice1> -> tensor<1x64xi32, #blocked1>
    %20 = kiln.expand_dims %3 {axis = 0 : i32} : tensor<64xi32, #slice3> -> tensor<1x64xi32, #blocked>
    %21 = kiln.broadcast %18 : tensor<32x1x!kiln.ptr<f16>, #blocked1> -> tensor<32x64x!kiln.ptr<f16>, #blocked1>
    %22 = kiln.broadcast %19 : tensor<1x64xi32, #blocked1> -> tensor<32x64xi32, #blocked1>
    %23 = kiln.addptr %21, %22 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
    %rp0 = kiln.splat %rows : !kiln.ptr<f32> -> tensor<64x!kiln.ptr<f32>, #slice2>
    %rp1 = kiln.addptr %rp0, %2 : tensor<64x!kiln.ptr<f32>, #slice2>, tensor<64xi32, #slice2>
    %24:4 = scf.for %arg4 = %c0_i32 to %arg3 step %c1_i32 iter_args(%arg5 = %cst_5, %arg6 = %14, %arg7 = %23, %kk = %c0_i32) -> (tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>, i32)  : i32 {
      %31 = arith.muli %arg4, %c32_i32 : i32
      %32 = arith.subi %arg3, %31 : i32
      %33 = kiln.splat %32 : i32 -> tensor<1x32xi32, #blocked2>
      %34 = arith.cmpi slt, %11, %33 : tensor<1x32xi32, #blocked2>
      %35 = kiln.broadcast %34 : tensor<1x32xi1, #blocked2> -> tensor<64x32xi1, #blocked2>
      %36 = kiln.load %arg6, %35, %cst_2 : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %37 = kiln.load %arg7 : tensor<32x64x!kiln.ptr<f16>, #blocked1> -> tensor<32x64xf16, #blocked1>
      %ro = arith.addi %kk, %c0_i32 : i32
      %ros = kiln.splat %ro : i32 -> tensor<64xi32, #slice2>
      %rp = kiln.addptr %rp1, %ros : tensor<64x!kiln.ptr<f32>, #slice2>, tensor<64xi32, #slice2>
      %ri = arith.addi %2, %ros : tensor<64xi32, #slice2>
      %rn = kiln.splat %arg3 : i32 -> tensor<64xi32, #slice2>
      %rm = arith.cmpi slt, %ri, %rn : tensor<64xi32, #slice2>
      %row = kiln.load %rp, %rm, %inf : tensor<64x!kiln.ptr<f32>, #slice2> -> tensor<64xf32, #slice2>
      %d = kiln.dot %36, %37, %arg5 {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      %re = kiln.expand_dims %row {axis = 1 : i32} : tensor<64xf32, #slice2> -> tensor<64x1xf32, #blocked>
      %rb = kiln.broadcast %re : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %38 = arith.addf %d, %rb : tensor<64x64xf32, #blocked>
      %39 = kiln.addptr %arg6, %cst_1 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %40 = kiln.addptr %arg7, %cst_0 : tensor<32x64x!kiln.ptr<f16>, #blocked1>, tensor<32x64xi32, #blocked1>
      %kk1 = arith.addi %kk, %c64_i32 : i32
      scf.yield %38, %39, %40, %kk1 : tensor<64x64xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x64x!kiln.ptr<f16>, #blocked1>, i32
    }
    %25 = arith.muli %7, %cst : tensor<64x1xi32, #blocked>
    %26 = kiln.splat %arg2 : !kiln.ptr<f32> -> tensor<64x1x!kiln.ptr<f32>, #blocked>
    %27 = kiln.addptr %26, %25 : tensor<64x1x!kiln.ptr<f32>, #blocked>, tensor<64x1xi32, #blocked>
    %28 = kiln.broadcast %27 : tensor<64x1x!kiln.ptr<f32>, #blocked> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    %29 = kiln.broadcast %20 : tensor<1x64xi32, #blocked> -> tensor<64x64xi32, #blocked>
    %30 = kiln.addptr %28, %29 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xi32, #blocked>
    kiln.store %30, %24#0 : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// Two dots that wait for themselves, carrying an accumulator 128 columns
// wide, on two warpgroups: after each iteration's copies (and their commit
// group), every thread arrives on the slot's mbarrier once its copies land,
// where the iteration runs; the mbarriers (one arrival per thread) follow
// the slots; the loop carries the phase's parity and waits for the slot's
// phase instead of a copy group; after it, the copies still in flight
// (masked off) are drained before the mbarriers are invalidated.
// CHECK: // -----
// CHECK-LABEL: func.func @wide_accumulator
// CHECK: kiln_gpu.init_tma_barriers {arrivals = 256 : i32, count = 3 : i32, offset = 50688 : i64}
// CHECK: kiln_gpu.async_commit_group
// CHECK-NEXT: kiln_gpu.async_copy_arrive %c0{{.*}}, %[[RUNS0:.*]] {barriers = 50688 : i64}
// CHECK: kiln_gpu.async_commit_group
// CHECK-NEXT: kiln_gpu.async_copy_arrive %c1{{.*}}, %{{.*}} {barriers = 50688 : i64}
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[SLOT:[a-z0-9_]*]] = %{{[a-z0-9_]*}}, %[[PHASE:[a-z0-9_]*]] = %{{[a-z0-9_]*}})
// CHECK-NEXT: kiln_gpu.wait_tma_barrier %[[SLOT]], %[[PHASE]] {barriers = 50688 : i64, threadCopies}
// CHECK-NOT: kiln_gpu.async_wait
// CHECK: kiln_gpu.async_commit_group
// CHECK-NEXT: kiln_gpu.async_copy_arrive %{{.*}}, %{{.*}} {barriers = 50688 : i64}
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: kiln_gpu.async_wait {pending = 0 : i32}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 50688 : i64}
// ONE-LABEL: func.func @wide_accumulator
// ONE-NOT: async_copy_arrive
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
  func.func @wide_accumulator(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg3: i32 {kiln.divisibility = 16 : i32}, %rows: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %xa: tensor<128x32xf16, #blocked2>) attributes {kiln.kernel} {
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

// -----

// The same loop on one warpgroup: no other warpgroup to drift apart
// from, so the loop keeps its copy groups and CTA barrier.
// CHECK: // -----
// CHECK-LABEL: func.func @one_warpgroup
// CHECK-NOT: init_tma_barriers
// CHECK: scf.for
// CHECK-NEXT: kiln_gpu.async_wait {pending = 1 : i32}
// CHECK-NOT: async_copy_arrive
// CHECK: scf.yield
// ONE-LABEL: func.func @one_warpgroup
// ONE-NOT: async_copy_arrive
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice1 = #kiln_gpu.slice<{dim = 0, parent = #blocked1}>
#slice2 = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice3 = #kiln_gpu.slice<{dim = 0, parent = #blocked}>
#slice4 = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice5 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @one_warpgroup(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg3: i32 {kiln.divisibility = 16 : i32}, %rows: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %xa: tensor<64x32xf16, #blocked2>) attributes {kiln.kernel} {
    %inf = arith.constant dense<0x7F800000> : tensor<64xf32, #slice2>
    %c64_i32 = arith.constant 64 : i32
    %cst = arith.constant dense<128> : tensor<64x1xi32, #blocked>
    %cst_0 = arith.constant dense<4096> : tensor<32x128xi32, #blocked1>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32, #blocked2>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf16, #blocked2>
    %cst_3 = arith.constant dense<128> : tensor<32x1xi32, #blocked1>
    %cst_4 = arith.constant dense<32> : tensor<64x1xi32, #blocked2>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x128xf32, #blocked>
    %c32_i32 = arith.constant 32 : i32
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice>
    %1 = kiln.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #slice1>
    %2 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %3 = kiln.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #slice3>
    %4 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice4>
    %5 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #slice5>
    %6 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #slice> -> tensor<64x1xi32, #blocked2>
    %7 = kiln.expand_dims %2 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked>
    %8 = arith.muli %6, %cst_4 : tensor<64x1xi32, #blocked2>
    %9 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked2>
    %10 = kiln.addptr %9, %8 : tensor<64x1x!kiln.ptr<f16>, #blocked2>, tensor<64x1xi32, #blocked2>
    %11 = kiln.expand_dims %5 {axis = 0 : i32} : tensor<32xi32, #slice5> -> tensor<1x32xi32, #blocked2>
    %12 = kiln.broadcast %10 : tensor<64x1x!kiln.ptr<f16>, #blocked2> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %13 = kiln.broadcast %11 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %14 = kiln.addptr %12, %13 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %15 = kiln.expand_dims %4 {axis = 1 : i32} : tensor<32xi32, #slice4> -> tensor<32x1xi32, #blocked1>
    %16 = arith.muli %15, %cst_3 : tensor<32x1xi32, #blocked1>
    %17 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<32x1x!kiln.ptr<f16>, #blocked1>
    %18 = kiln.addptr %17, %16 : tensor<32x1x!kiln.ptr<f16>, #blocked1>, tensor<32x1xi32, #blocked1>
    %19 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<128xi32, #slice1> -> tensor<1x128xi32, #blocked1>
    %20 = kiln.expand_dims %3 {axis = 0 : i32} : tensor<128xi32, #slice3> -> tensor<1x128xi32, #blocked>
    %21 = kiln.broadcast %18 : tensor<32x1x!kiln.ptr<f16>, #blocked1> -> tensor<32x128x!kiln.ptr<f16>, #blocked1>
    %22 = kiln.broadcast %19 : tensor<1x128xi32, #blocked1> -> tensor<32x128xi32, #blocked1>
    %23 = kiln.addptr %21, %22 : tensor<32x128x!kiln.ptr<f16>, #blocked1>, tensor<32x128xi32, #blocked1>
    %rp0 = kiln.splat %rows : !kiln.ptr<f32> -> tensor<64x!kiln.ptr<f32>, #slice2>
    %rp1 = kiln.addptr %rp0, %2 : tensor<64x!kiln.ptr<f32>, #slice2>, tensor<64xi32, #slice2>
    %24:4 = scf.for %arg4 = %c0_i32 to %arg3 step %c1_i32 iter_args(%arg5 = %cst_5, %arg6 = %14, %arg7 = %23, %sum = %cst_5) -> (tensor<64x128xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x128x!kiln.ptr<f16>, #blocked1>, tensor<64x128xf32, #blocked>)  : i32 {
      %31 = arith.muli %arg4, %c32_i32 : i32
      %32 = arith.subi %arg3, %31 : i32
      %33 = kiln.splat %32 : i32 -> tensor<1x32xi32, #blocked2>
      %34 = arith.cmpi slt, %11, %33 : tensor<1x32xi32, #blocked2>
      %35 = kiln.broadcast %34 : tensor<1x32xi1, #blocked2> -> tensor<64x32xi1, #blocked2>
      %36 = kiln.load %arg6, %35, %cst_2 : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %37 = kiln.load %arg7 : tensor<32x128x!kiln.ptr<f16>, #blocked1> -> tensor<32x128xf16, #blocked1>
      %ro = arith.muli %arg4, %c64_i32 : i32
      %ros = kiln.splat %ro : i32 -> tensor<64xi32, #slice2>
      %rp = kiln.addptr %rp1, %ros : tensor<64x!kiln.ptr<f32>, #slice2>, tensor<64xi32, #slice2>
      %ri = arith.addi %2, %ros : tensor<64xi32, #slice2>
      %rn = kiln.splat %arg3 : i32 -> tensor<64xi32, #slice2>
      %rm = arith.cmpi slt, %ri, %rn : tensor<64xi32, #slice2>
      %row = kiln.load %rp, %rm, %inf : tensor<64x!kiln.ptr<f32>, #slice2> -> tensor<64xf32, #slice2>
      %d0 = kiln.dot %36, %37, %arg5 {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x128xf16, #blocked1> -> tensor<64x128xf32, #blocked>
      %d = kiln.dot %xa, %37, %d0 {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x128xf16, #blocked1> -> tensor<64x128xf32, #blocked>
      %re = kiln.expand_dims %row {axis = 1 : i32} : tensor<64xf32, #slice2> -> tensor<64x1xf32, #blocked>
      %rb = kiln.broadcast %re : tensor<64x1xf32, #blocked> -> tensor<64x128xf32, #blocked>
      %38 = arith.addf %sum, %rb : tensor<64x128xf32, #blocked>
      %39 = kiln.addptr %arg6, %cst_1 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
      %40 = kiln.addptr %arg7, %cst_0 : tensor<32x128x!kiln.ptr<f16>, #blocked1>, tensor<32x128xi32, #blocked1>
      scf.yield %d, %39, %40, %38 : tensor<64x128xf32, #blocked>, tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<32x128x!kiln.ptr<f16>, #blocked1>, tensor<64x128xf32, #blocked>
    }
    %25 = arith.muli %7, %cst : tensor<64x1xi32, #blocked>
    %26 = kiln.splat %arg2 : !kiln.ptr<f32> -> tensor<64x1x!kiln.ptr<f32>, #blocked>
    %27 = kiln.addptr %26, %25 : tensor<64x1x!kiln.ptr<f32>, #blocked>, tensor<64x1xi32, #blocked>
    %28 = kiln.broadcast %27 : tensor<64x1x!kiln.ptr<f32>, #blocked> -> tensor<64x128x!kiln.ptr<f32>, #blocked>
    %29 = kiln.broadcast %20 : tensor<1x128xi32, #blocked> -> tensor<64x128xi32, #blocked>
    %30 = kiln.addptr %28, %29 : tensor<64x128x!kiln.ptr<f32>, #blocked>, tensor<64x128xi32, #blocked>
    %sums = arith.addf %24#0, %24#3 : tensor<64x128xf32, #blocked>
    kiln.store %30, %sums : tensor<64x128x!kiln.ptr<f32>, #blocked>, tensor<64x128xf32, #blocked>
    return
  }
}

// -----

// In a loop of TMA copies, a block loaded once before it through a tensor
// map (attention's Q) is copied by the TMA unit too, into a slot of its
// own: its mbarrier (one arrival, one phase) comes before the ring's, it
// is initialized and the block copied ahead of the ring's first copies,
// every thread waits for it before the loop. The second loop of the same
// block finds it in its slot: no copy, no mbarrier of its own, and its ring
// at the same place as the first's; the block's mbarrier is invalidated
// after that loop, the last to read the slot.
// CHECK-LABEL: func.func @tma_invariant_two_loops
// CHECK-SAME: %[[MAPA:[^:]*]]: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32, kiln.tensor_map_box = array<i64: 8, 32, 64>}
// CHECK: kiln_gpu.init_tma_barriers {arrivals = 1 : i32, count = 1 : i32, offset = 16384 : i64}
// CHECK-NEXT: %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT: kiln_gpu.async_tma_copy %[[MAPA]][%{{.*}}, %{{.*}}], %[[FIRST:.*]], %[[TRUE]] {barriers = 16384 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 12288, slotBytes = 4096, slots = 1>, tile = tensor<64x32xf16>}
// CHECK-NOT: kiln_gpu.async_copy
// CHECK: kiln_gpu.init_tma_barriers {arrivals = 1 : i32, count = 3 : i32, offset = 16392 : i64}
// CHECK: kiln_gpu.wait_tma_barrier %[[FIRST]], %{{.*}} {barriers = 16384 : i64, perThread}
// CHECK: scf.for
// CHECK: kiln_gpu.shared_operand %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 0, {{.*}}offset = 12288, {{.*}}slots = 1>}
// CHECK: scf.yield
// CHECK: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 16392 : i64}
// CHECK-NOT: offset = 16384
// CHECK: kiln_gpu.init_tma_barriers {arrivals = 1 : i32, count = 3 : i32, offset = 16392 : i64}
// CHECK-NOT: offset = 16384
// CHECK: scf.for
// CHECK: kiln_gpu.shared_operand %{{.*}} {buffer = #kiln_gpu.operand_buffer<operand = 0, {{.*}}offset = 12288, {{.*}}slots = 1>}
// CHECK-NOT: offset = 16384
// CHECK: kiln_gpu.inval_tma_barriers {count = 3 : i32, offset = 16392 : i64}
// CHECK-NEXT: kiln_gpu.inval_tma_barriers {count = 1 : i32, offset = 16384 : i64}
// CHECK-NOT: kiln_gpu.inval_tma_barriers
// CHECK: return
// ONE-LABEL: func.func @tma_invariant_two_loops
// ONE-NOT: async_tma_copy
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @tma_invariant_two_loops(%a: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapA: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %row: i32, %col: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %pa = kiln.splat %a : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %pb = kiln.splat %b : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %x = kiln.load %pa tensor_map %mapA[%row, %c0] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
    %first = scf.for %i = %c0 to %n step %c1 iter_args(%sum = %zero) -> (tensor<64x64xf32, #blocked>) : i32 {
      %k = arith.muli %i, %c32 : i32
      %y = kiln.load %pb tensor_map %mapB[%col, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
      %d = kiln.dot %x, %yt, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      scf.yield %d : tensor<64x64xf32, #blocked>
    }
    %second = scf.for %i = %c0 to %n step %c1 iter_args(%sum = %first) -> (tensor<64x64xf32, #blocked>) : i32 {
      %k = arith.muli %i, %c32 : i32
      %y = kiln.load %pb tensor_map %mapB[%col, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
      %d = kiln.dot %x, %yt, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      scf.yield %d : tensor<64x64xf32, #blocked>
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %second : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// A block loaded once through the tensor map that the loop's B copies
// read, as A: its slot would need another box of the same map (8 rows for
// an A slot, 64 for B's), which the host encodes once per launch. It is
// left to cp.async (here not even that: its splat pointers have runs of
// one element), and the map keeps B's box.
// CHECK-LABEL: func.func @tma_invariant_other_box
// CHECK-SAME: %[[MAPB:[^:]*]]: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32, kiln.tensor_map_box = array<i64: 64, 32, 64>}
// CHECK-NOT: count = 1 : i32
// CHECK: %[[X:.*]] = kiln.load %{{.*}} tensor_map %[[MAPB]]
// CHECK-NOT: operand = 0
// CHECK: scf.for
// CHECK: kiln.dot %{{.*}}, %{{.*}}, %{{.*}} {inputPrecision
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blockedT = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @tma_invariant_other_box(%b: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %mapB: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i32}, %out: !kiln.ptr<f32>, %n: i32, %row: i32, %col: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %pb = kiln.splat %b : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %x = kiln.load %pb tensor_map %mapB[%row, %c0] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%sum = %zero) -> (tensor<64x64xf32, #blocked>) : i32 {
      %k = arith.muli %i, %c32 : i32
      %y = kiln.load %pb tensor_map %mapB[%col, %k] : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
      %yt = kiln.trans %y {order = array<i32: 1, 0>} : tensor<64x32xf16, #blocked2> -> tensor<32x64xf16, #blockedT>
      %d = kiln.dot %x, %yt, %sum {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #blocked2> * tensor<32x64xf16, #blockedT> -> tensor<64x64xf32, #blocked>
      scf.yield %d : tensor<64x64xf32, #blocked>
    }
    %po = kiln.splat %out : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #blocked>
    kiln.store %po, %acc : tensor<64x64x!kiln.ptr<f32>, #blocked>, tensor<64x64xf32, #blocked>
    return
  }
}

// -----

// Attention at head dimension 64 on two warpgroups (the plain forward's
// kiln_gpu stage at 128/64/8/3): the second dot's group stays in flight
// (kiln_gpu.wgmma_buffer) into the next iteration, and its accumulator is
// read through kiln_gpu.async_dot_wait, by the rescale after the next
// softmax and after the loop. The first dot still waits for itself. The
// second dot reads V's slot past the next iteration's CTA barrier, so the
// ring has a fourth slot; the copies do not arrive on mbarriers.
// CHECK-LABEL: func.func @second_dot_in_flight
// CHECK-NOT: kiln_gpu.async_copy_arrive
// CHECK: kiln_gpu.async_copy {{.*}}slots = 4, kMajor = true>}
// CHECK: scf.for {{.*}} iter_args(%[[ACC:arg[0-9]+]] =
// CHECK-NEXT: kiln_gpu.async_wait {pending = 1 : i32}
// CHECK: kiln.dot {{.*}}precision<ieee>} :
// CHECK: kiln_gpu.async_commit_group
// CHECK: %[[READY:.*]] = kiln_gpu.async_dot_wait %[[ACC]] :
// CHECK: arith.mulf %[[READY]],
// CHECK: %[[NEXT:.*]] = kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 0 : i32}
// CHECK: scf.yield %[[NEXT]],
// CHECK-NEXT: }
// CHECK-NEXT: kiln_gpu.async_dot_wait %{{.*}}#0 :
// CHECK-NEXT: kiln_gpu.async_wait {pending = 0 : i32}
// ONE-LABEL: func.func @second_dot_in_flight
// ONE-NOT: wgmma_buffer
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 8], order = [0, 1]}>
#slice = #kiln_gpu.slice<{dim = 1, parent = #blocked1}>
#slice1 = #kiln_gpu.slice<{dim = 1, parent = #blocked}>
#slice2 = #kiln_gpu.slice<{dim = 0, parent = #blocked}>
#slice3 = #kiln_gpu.slice<{dim = 1, parent = #blocked2}>
#slice4 = #kiln_gpu.slice<{dim = 0, parent = #blocked2}>
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @second_dot_in_flight(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg2: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg3: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg4: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %arg5: f32, %arg6: i32 {kiln.divisibility = 16 : i32}, %arg7: i32 {kiln.divisibility = 16 : i32}, %arg8: i32 {kiln.divisibility = 16 : i32}, %arg9: i32, %arg10: i32, %arg11: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %cst = arith.constant dense<0.000000e+00> : tensor<128x64xf16, #blocked>
    %cst_0 = arith.constant dense<1.000000e+00> : tensor<128xf32, #slice>
    %cst_1 = arith.constant dense<0xFF800000> : tensor<128xf32, #slice>
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_2 = arith.constant 1.44269502 : f32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #blocked1>
    %c128_i32 = arith.constant 128 : i32
    %0 = kiln.program_id {axis = 0 : i32} : i32
    %1 = kiln.program_id {axis = 1 : i32} : i32
    %2 = arith.divsi %1, %arg10 : i32
    %3 = arith.extsi %2 : i32 to i64
    %4 = arith.extsi %arg6 : i32 to i64
    %5 = arith.muli %3, %4 : i64
    %6 = arith.remsi %1, %arg10 : i32
    %7 = arith.extsi %6 : i32 to i64
    %8 = arith.extsi %arg7 : i32 to i64
    %9 = arith.muli %7, %8 : i64
    %10 = arith.addi %5, %9 : i64
    %11 = arith.muli %0, %c128_i32 : i32
    %12 = kiln.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #slice>
    %13 = kiln.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #slice1>
    %14 = kiln.splat %11 : i32 -> tensor<128xi32, #slice>
    %15 = kiln.splat %11 : i32 -> tensor<128xi32, #slice1>
    %16 = arith.addi %14, %12 : tensor<128xi32, #slice>
    %17 = arith.addi %15, %13 : tensor<128xi32, #slice1>
    %18 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice2>
    %19 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice3>
    %20 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice4>
    %21 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #slice1>
    %22 = kiln.addptr %arg0, %10 : !kiln.ptr<f16>, i64
    %23 = kiln.expand_dims %17 {axis = 1 : i32} : tensor<128xi32, #slice1> -> tensor<128x1xi32, #blocked>
    %24 = kiln.splat %arg8 : i32 -> tensor<128x1xi32, #blocked>
    %25 = arith.muli %23, %24 : tensor<128x1xi32, #blocked>
    %26 = kiln.splat %22 : !kiln.ptr<f16> -> tensor<128x1x!kiln.ptr<f16>, #blocked>
    %27 = kiln.addptr %26, %25 : tensor<128x1x!kiln.ptr<f16>, #blocked>, tensor<128x1xi32, #blocked>
    %28 = kiln.expand_dims %18 {axis = 0 : i32} : tensor<64xi32, #slice2> -> tensor<1x64xi32, #blocked>
    %29 = kiln.expand_dims %20 {axis = 0 : i32} : tensor<64xi32, #slice4> -> tensor<1x64xi32, #blocked2>
    %30 = kiln.broadcast %27 : tensor<128x1x!kiln.ptr<f16>, #blocked> -> tensor<128x64x!kiln.ptr<f16>, #blocked>
    %31 = kiln.broadcast %28 : tensor<1x64xi32, #blocked> -> tensor<128x64xi32, #blocked>
    %32 = kiln.addptr %30, %31 : tensor<128x64x!kiln.ptr<f16>, #blocked>, tensor<128x64xi32, #blocked>
    %33 = kiln.addptr %arg1, %10 : !kiln.ptr<f16>, i64
    %34 = kiln.expand_dims %19 {axis = 1 : i32} : tensor<64xi32, #slice3> -> tensor<64x1xi32, #blocked2>
    %35 = kiln.expand_dims %21 {axis = 1 : i32} : tensor<64xi32, #slice1> -> tensor<64x1xi32, #blocked>
    %36 = kiln.splat %33 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked2>
    %37 = kiln.addptr %36, %34 : tensor<64x1x!kiln.ptr<f16>, #blocked2>, tensor<64x1xi32, #blocked2>
    %38 = kiln.splat %arg8 : i32 -> tensor<1x64xi32, #blocked2>
    %39 = arith.muli %29, %38 : tensor<1x64xi32, #blocked2>
    %40 = kiln.broadcast %37 : tensor<64x1x!kiln.ptr<f16>, #blocked2> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
    %41 = kiln.broadcast %39 : tensor<1x64xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
    %42 = kiln.addptr %40, %41 : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
    %43 = kiln.addptr %arg2, %10 : !kiln.ptr<f16>, i64
    %44 = kiln.splat %arg8 : i32 -> tensor<64x1xi32, #blocked>
    %45 = arith.muli %35, %44 : tensor<64x1xi32, #blocked>
    %46 = kiln.splat %43 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked>
    %47 = kiln.addptr %46, %45 : tensor<64x1x!kiln.ptr<f16>, #blocked>, tensor<64x1xi32, #blocked>
    %48 = kiln.broadcast %47 : tensor<64x1x!kiln.ptr<f16>, #blocked> -> tensor<64x64x!kiln.ptr<f16>, #blocked>
    %49 = kiln.broadcast %28 : tensor<1x64xi32, #blocked> -> tensor<64x64xi32, #blocked>
    %50 = kiln.addptr %48, %49 : tensor<64x64x!kiln.ptr<f16>, #blocked>, tensor<64x64xi32, #blocked>
    %51 = arith.mulf %arg5, %cst_2 : f32
    %52 = kiln.splat %arg11 : i32 -> tensor<128x1xi32, #blocked>
    %53 = arith.cmpi slt, %23, %52 : tensor<128x1xi32, #blocked>
    %54 = kiln.broadcast %53 : tensor<128x1xi1, #blocked> -> tensor<128x64xi1, #blocked>
    %55 = kiln.load %32, %54, %cst : tensor<128x64x!kiln.ptr<f16>, #blocked> -> tensor<128x64xf16, #blocked>
    %56:5 = scf.for %arg12 = %c0_i32 to %arg11 step %c64_i32 iter_args(%arg13 = %cst_3, %arg14 = %cst_0, %arg15 = %cst_1, %arg16 = %42, %arg17 = %50) -> (tensor<128x64xf32, #blocked1>, tensor<128xf32, #slice>, tensor<128xf32, #slice>, tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64x!kiln.ptr<f16>, #blocked>)  : i32 {
      %75 = kiln.load %arg16 : tensor<64x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64xf16, #blocked2>
      %76 = kiln.dot %55, %75, %cst_3 {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #blocked> * tensor<64x64xf16, #blocked2> -> tensor<128x64xf32, #blocked1>
      %77 = kiln.reduce(%76) {axis = 1 : i32} : (tensor<128x64xf32, #blocked1>) -> tensor<128xf32, #slice> {
      ^bb0(%arg18: f32, %arg19: f32):
        %103 = arith.maxnumf %arg18, %arg19 : f32
        kiln.reduce.return %103 : f32
      }
      %78 = kiln.splat %51 : f32 -> tensor<128xf32, #slice>
      %79 = arith.mulf %77, %78 : tensor<128xf32, #slice>
      %80 = arith.maxnumf %arg15, %79 : tensor<128xf32, #slice>
      %81 = kiln.splat %51 : f32 -> tensor<128x64xf32, #blocked1>
      %82 = arith.mulf %76, %81 : tensor<128x64xf32, #blocked1>
      %83 = kiln.expand_dims %80 {axis = 1 : i32} : tensor<128xf32, #slice> -> tensor<128x1xf32, #blocked1>
      %84 = kiln.broadcast %83 : tensor<128x1xf32, #blocked1> -> tensor<128x64xf32, #blocked1>
      %85 = arith.subf %82, %84 : tensor<128x64xf32, #blocked1>
      %86 = math.exp2 %85 : tensor<128x64xf32, #blocked1>
      %87 = arith.subf %arg15, %80 : tensor<128xf32, #slice>
      %88 = math.exp2 %87 : tensor<128xf32, #slice>
      %89 = kiln.reduce(%86) {axis = 1 : i32} : (tensor<128x64xf32, #blocked1>) -> tensor<128xf32, #slice> {
      ^bb0(%arg18: f32, %arg19: f32):
        %103 = arith.addf %arg18, %arg19 : f32
        kiln.reduce.return %103 : f32
      }
      %90 = kiln.expand_dims %88 {axis = 1 : i32} : tensor<128xf32, #slice> -> tensor<128x1xf32, #blocked1>
      %91 = kiln.broadcast %90 : tensor<128x1xf32, #blocked1> -> tensor<128x64xf32, #blocked1>
      %92 = arith.mulf %arg13, %91 : tensor<128x64xf32, #blocked1>
      %93 = kiln.load %arg17 : tensor<64x64x!kiln.ptr<f16>, #blocked> -> tensor<64x64xf16, #blocked>
      %94 = arith.truncf %86 : tensor<128x64xf32, #blocked1> to tensor<128x64xf16, #blocked1>
      %95 = kiln.dot %94, %93, %92 {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #blocked1> * tensor<64x64xf16, #blocked> -> tensor<128x64xf32, #blocked1>
      %96 = arith.mulf %arg14, %88 : tensor<128xf32, #slice>
      %97 = arith.addf %96, %89 : tensor<128xf32, #slice>
      %98 = arith.muli %arg8, %c64_i32 : i32
      %99 = kiln.splat %98 : i32 -> tensor<64x64xi32, #blocked2>
      %100 = kiln.splat %98 : i32 -> tensor<64x64xi32, #blocked>
      %101 = kiln.addptr %arg16, %99 : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
      %102 = kiln.addptr %arg17, %100 : tensor<64x64x!kiln.ptr<f16>, #blocked>, tensor<64x64xi32, #blocked>
      scf.yield %95, %97, %80, %101, %102 : tensor<128x64xf32, #blocked1>, tensor<128xf32, #slice>, tensor<128xf32, #slice>, tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64x!kiln.ptr<f16>, #blocked>
    }
    %57 = math.log2 %56#1 : tensor<128xf32, #slice>
    %58 = arith.addf %56#2, %57 : tensor<128xf32, #slice>
    %59 = kiln.expand_dims %56#1 {axis = 1 : i32} : tensor<128xf32, #slice> -> tensor<128x1xf32, #blocked1>
    %60 = kiln.broadcast %59 : tensor<128x1xf32, #blocked1> -> tensor<128x64xf32, #blocked1>
    %61 = arith.divf %56#0, %60 : tensor<128x64xf32, #blocked1>
    %62 = arith.muli %1, %arg11 : i32
    %63 = kiln.addptr %arg4, %62 : !kiln.ptr<f32>, i32
    %64 = kiln.splat %63 : !kiln.ptr<f32> -> tensor<128x!kiln.ptr<f32>, #slice>
    %65 = kiln.addptr %64, %16 : tensor<128x!kiln.ptr<f32>, #slice>, tensor<128xi32, #slice>
    %66 = kiln.splat %arg11 : i32 -> tensor<128xi32, #slice>
    %67 = arith.cmpi slt, %16, %66 : tensor<128xi32, #slice>
    kiln.store %65, %58, %67 : tensor<128x!kiln.ptr<f32>, #slice>, tensor<128xf32, #slice>
    %68 = kiln.addptr %arg3, %10 : !kiln.ptr<f16>, i64
    %69 = kiln.splat %68 : !kiln.ptr<f16> -> tensor<128x1x!kiln.ptr<f16>, #blocked>
    %70 = kiln.addptr %69, %25 : tensor<128x1x!kiln.ptr<f16>, #blocked>, tensor<128x1xi32, #blocked>
    %71 = kiln.broadcast %70 : tensor<128x1x!kiln.ptr<f16>, #blocked> -> tensor<128x64x!kiln.ptr<f16>, #blocked>
    %72 = kiln.addptr %71, %31 : tensor<128x64x!kiln.ptr<f16>, #blocked>, tensor<128x64xi32, #blocked>
    %73 = arith.truncf %61 : tensor<128x64xf32, #blocked1> to tensor<128x64xf16, #blocked1>
    %74 = kiln_gpu.convert_layout %73 : tensor<128x64xf16, #blocked1> -> tensor<128x64xf16, #blocked>
    kiln.store %72, %74, %54 : tensor<128x64x!kiln.ptr<f16>, #blocked>, tensor<128x64xf16, #blocked>
    return
  }
}
