// RUN: kiln-opt %s -split-input-file -kiln-gpu-overlap-dots | FileCheck %s
// (%c0_i32 and %arg9 are the loop's bounds.)

// An attention loop after kiln-gpu-pipeline-loads (num-stages 3): Q in a
// slot of its own, K and V in rings of three slots. Iteration 0 runs
// without its second dot in an scf.if on the loop running at all; the
// rotated loop starts at the next iteration and carries the row maxima's
// rescaling factor, V's slot and the probabilities of the block before;
// each iteration issues its first dot, then the previous block's second
// dot, waits for the first only, and for the second before the yield;
// the last block's second dot follows the loop.
// CHECK-LABEL: func.func @attention
// CHECK: scf.if %{{[0-9]+}} -> (
// CHECK: kiln.dot
// CHECK-NOT: kiln.dot
// CHECK: %[[R:.*]]:7 = scf.for %{{.*}} = %{{.*}} to %arg9 step %{{.*}} iter_args(%{{[a-z0-9]+}} = %{{[a-z0-9_]+}}, %[[ACC:[a-z0-9]+]] = %{{[a-z0-9_]+}}, %{{[a-z0-9]+}} = %{{[a-z0-9_]+}}, %{{[a-z0-9]+}} = %{{[a-z0-9_]+}}, %[[ALPHA:[a-z0-9]+]] = %{{[a-z0-9_]+}}, %[[VSLOT:[a-z0-9]+]] = %{{[a-z0-9_]+}}, %[[P:[a-z0-9]+]] = %{{[a-z0-9_]+}})
// CHECK: %[[S:.*]] = kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 0
// CHECK: kiln.expand_dims %[[ALPHA]]
// CHECK: %[[SCALED:.*]] = arith.mulf %[[ACC]],
// CHECK: %[[V:.*]] = kiln_gpu.shared_operand %[[VSLOT]]
// CHECK: %[[O:.*]] = kiln.dot %[[P]], %[[V]], %[[SCALED]] {{.*}}kiln_gpu.wgmma_buffer = 0
// CHECK-NEXT: %[[SREADY:.*]] = kiln_gpu.async_dot_wait %[[S]] {pending = 1 : i32}
// CHECK: kiln.reduce(%[[SREADY]])
// CHECK: %[[DONE:.*]] = kiln_gpu.async_dot_wait %[[O]] :
// CHECK-NEXT: scf.yield %{{.*}}, %[[DONE]],
// CHECK: kiln_gpu.shared_operand %[[R]]#5
// CHECK: kiln.dot %[[R]]#6,
// CHECK: } else {
// CHECK: kiln_gpu.async_wait {pending = 0 : i32}
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
    %22 = arith.mulf %arg4, %cst_1 : f32
    %c0_i32_3 = arith.constant 0 : i32
    kiln_gpu.async_copy %21, %c0_i32_3 {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 49152, slotBytes = 8192, slots = 1>} : tensor<64x64x!kiln.ptr<f16>, #blocked1>
    kiln_gpu.async_commit_group
    %c0_i32_4 = arith.constant 0 : i32
    %23 = arith.addi %2, %c0_i32 : i32
    %24 = kiln.splat %23 : i32 -> tensor<1x64xi32, #blocked2>
    %25 = arith.addi %24, %18 : tensor<1x64xi32, #blocked2>
    %26 = kiln.splat %arg6 : i32 -> tensor<1x64xi32, #blocked2>
    %27 = arith.muli %25, %26 : tensor<1x64xi32, #blocked2>
    %28 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<1x64x!kiln.ptr<f16>, #blocked2>
    %29 = kiln.addptr %28, %27 : tensor<1x64x!kiln.ptr<f16>, #blocked2>, tensor<1x64xi32, #blocked2>
    %30 = kiln.expand_dims %5 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked1>
    %31 = kiln.expand_dims %6 {axis = 1 : i32} : tensor<64xi32, #slice3> -> tensor<64x1xi32, #blocked2>
    %32 = kiln.broadcast %29 : tensor<1x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
    %33 = kiln.broadcast %31 : tensor<64x1xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
    %34 = kiln.addptr %32, %33 : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
    %35 = kiln.splat %23 : i32 -> tensor<64x1xi32, #blocked1>
    %36 = arith.addi %35, %30 : tensor<64x1xi32, #blocked1>
    %37 = kiln.splat %arg7 : i32 -> tensor<64x1xi32, #blocked1>
    %38 = arith.muli %36, %37 : tensor<64x1xi32, #blocked1>
    %39 = kiln.splat %arg2 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
    %40 = kiln.addptr %39, %38 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
    %41 = kiln.broadcast %40 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
    %42 = kiln.addptr %41, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
    %43 = arith.cmpi slt, %c0_i32, %arg9 : i32
    %44 = kiln.splat %43 : i1 -> tensor<64x64xi1, #blocked2>
    kiln_gpu.async_copy %34, %c0_i32_4, %44 {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 8192, slots = 3, kMajor = true>} : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi1, #blocked2>
    %45 = kiln.splat %43 : i1 -> tensor<64x64xi1, #blocked1>
    kiln_gpu.async_copy %42, %c0_i32_4, %45 {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 24576, slotBytes = 8192, slots = 3>} : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi1, #blocked1>
    kiln_gpu.async_commit_group
    %c0_i32_5 = arith.constant 0 : i32
    %46:4 = scf.for %arg10 = %c0_i32 to %arg9 step %c64_i32 iter_args(%arg11 = %cst, %arg12 = %cst_2, %arg13 = %cst_0, %arg14 = %c0_i32_5) -> (tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>, i32)  : i32 {
      kiln_gpu.async_wait {pending = 0 : i32}
      %58 = arith.addi %2, %arg10 : i32
      %59 = kiln.splat %58 : i32 -> tensor<1x64xi32, #blocked2>
      %60 = arith.addi %59, %18 : tensor<1x64xi32, #blocked2>
      %61 = kiln.splat %arg6 : i32 -> tensor<1x64xi32, #blocked2>
      %62 = arith.muli %60, %61 : tensor<1x64xi32, #blocked2>
      %63 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<1x64x!kiln.ptr<f16>, #blocked2>
      %64 = kiln.addptr %63, %62 : tensor<1x64x!kiln.ptr<f16>, #blocked2>, tensor<1x64xi32, #blocked2>
      %65 = kiln.expand_dims %5 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked1>
      %66 = kiln.expand_dims %6 {axis = 1 : i32} : tensor<64xi32, #slice3> -> tensor<64x1xi32, #blocked2>
      %67 = kiln.broadcast %64 : tensor<1x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
      %68 = kiln.broadcast %66 : tensor<64x1xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
      %69 = kiln.addptr %67, %68 : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
      %70 = kiln_gpu.shared_operand %arg14 {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 8192, slots = 3, kMajor = true>} : tensor<64x64xf16, #blocked2>
      %71 = kiln_gpu.shared_operand %c0_i32_3 {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 49152, slotBytes = 8192, slots = 1>} : tensor<64x64xf16, #blocked1>
      %72 = kiln.dot %71, %70, %cst_2 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked1> * tensor<64x64xf16, #blocked2> -> tensor<64x64xf32, #blocked>
      %c1_i32 = arith.constant 1 : i32
      %73 = arith.muli %c64_i32, %c1_i32 : i32
      %74 = arith.addi %arg10, %73 : i32
      %c1_i32_6 = arith.constant 1 : i32
      %75 = arith.addi %arg14, %c1_i32_6 : i32
      %c3_i32 = arith.constant 3 : i32
      %76 = arith.cmpi sge, %75, %c3_i32 : i32
      %c3_i32_7 = arith.constant 3 : i32
      %77 = arith.subi %75, %c3_i32_7 : i32
      %78 = arith.select %76, %77, %75 : i32
      %79 = arith.addi %2, %74 : i32
      %80 = kiln.splat %79 : i32 -> tensor<1x64xi32, #blocked2>
      %81 = arith.addi %80, %18 : tensor<1x64xi32, #blocked2>
      %82 = kiln.splat %arg6 : i32 -> tensor<1x64xi32, #blocked2>
      %83 = arith.muli %81, %82 : tensor<1x64xi32, #blocked2>
      %84 = kiln.splat %arg1 : !kiln.ptr<f16> -> tensor<1x64x!kiln.ptr<f16>, #blocked2>
      %85 = kiln.addptr %84, %83 : tensor<1x64x!kiln.ptr<f16>, #blocked2>, tensor<1x64xi32, #blocked2>
      %86 = kiln.expand_dims %5 {axis = 1 : i32} : tensor<64xi32, #slice2> -> tensor<64x1xi32, #blocked1>
      %87 = kiln.expand_dims %6 {axis = 1 : i32} : tensor<64xi32, #slice3> -> tensor<64x1xi32, #blocked2>
      %88 = kiln.broadcast %85 : tensor<1x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
      %89 = kiln.broadcast %87 : tensor<64x1xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
      %90 = kiln.addptr %88, %89 : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
      %91 = kiln.splat %79 : i32 -> tensor<64x1xi32, #blocked1>
      %92 = arith.addi %91, %86 : tensor<64x1xi32, #blocked1>
      %93 = kiln.splat %arg7 : i32 -> tensor<64x1xi32, #blocked1>
      %94 = arith.muli %92, %93 : tensor<64x1xi32, #blocked1>
      %95 = kiln.splat %arg2 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
      %96 = kiln.addptr %95, %94 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
      %97 = kiln.broadcast %96 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
      %98 = kiln.addptr %97, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
      %99 = arith.cmpi slt, %74, %arg9 : i32
      %100 = kiln.splat %99 : i1 -> tensor<64x64xi1, #blocked2>
      kiln_gpu.async_copy %90, %78, %100 {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 8192, slots = 3, kMajor = true>} : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi1, #blocked2>
      %101 = kiln.splat %99 : i1 -> tensor<64x64xi1, #blocked1>
      kiln_gpu.async_copy %98, %78, %101 {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 24576, slotBytes = 8192, slots = 3>} : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi1, #blocked1>
      kiln_gpu.async_commit_group
      %102 = kiln.reduce(%72) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg15: f32, %arg16: f32):
        %134 = arith.maxnumf %arg15, %arg16 : f32
        kiln.reduce.return %134 : f32
      }
      %103 = kiln.splat %22 : f32 -> tensor<64xf32, #slice>
      %104 = arith.mulf %102, %103 : tensor<64xf32, #slice>
      %105 = arith.maxnumf %arg13, %104 : tensor<64xf32, #slice>
      %106 = kiln.splat %22 : f32 -> tensor<64x64xf32, #blocked>
      %107 = arith.mulf %72, %106 : tensor<64x64xf32, #blocked>
      %108 = kiln.expand_dims %105 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %109 = kiln.broadcast %108 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %110 = arith.subf %107, %109 : tensor<64x64xf32, #blocked>
      %111 = math.exp2 %110 : tensor<64x64xf32, #blocked>
      %112 = kiln.reduce(%111) {axis = 1 : i32} : (tensor<64x64xf32, #blocked>) -> tensor<64xf32, #slice> {
      ^bb0(%arg15: f32, %arg16: f32):
        %134 = arith.addf %arg15, %arg16 : f32
        kiln.reduce.return %134 : f32
      }
      %113 = arith.subf %arg13, %105 : tensor<64xf32, #slice>
      %114 = math.exp2 %113 : tensor<64xf32, #slice>
      %115 = arith.mulf %arg11, %114 : tensor<64xf32, #slice>
      %116 = arith.addf %115, %112 : tensor<64xf32, #slice>
      %117 = kiln.expand_dims %114 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
      %118 = kiln.broadcast %117 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
      %119 = arith.mulf %arg12, %118 : tensor<64x64xf32, #blocked>
      %120 = kiln.splat %58 : i32 -> tensor<64x1xi32, #blocked1>
      %121 = arith.addi %120, %65 : tensor<64x1xi32, #blocked1>
      %122 = kiln.splat %arg7 : i32 -> tensor<64x1xi32, #blocked1>
      %123 = arith.muli %121, %122 : tensor<64x1xi32, #blocked1>
      %124 = kiln.splat %arg2 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
      %125 = kiln.addptr %124, %123 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
      %126 = kiln.broadcast %125 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
      %127 = kiln.addptr %126, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
      %128 = arith.truncf %111 : tensor<64x64xf32, #blocked> to tensor<64x64xf16, #blocked>
      %129 = kiln_gpu.shared_operand %arg14 {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 24576, slotBytes = 8192, slots = 3>} : tensor<64x64xf16, #blocked1>
      %130 = kiln.dot %128, %129, %119 {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #blocked> * tensor<64x64xf16, #blocked1> -> tensor<64x64xf32, #blocked>
      %c1_i32_8 = arith.constant 1 : i32
      %131 = arith.addi %arg14, %c1_i32_8 : i32
      %c3_i32_9 = arith.constant 3 : i32
      %132 = arith.cmpi eq, %131, %c3_i32_9 : i32
      %c0_i32_10 = arith.constant 0 : i32
      %133 = arith.select %132, %c0_i32_10, %131 : i32
      scf.yield %116, %130, %105, %133 : tensor<64xf32, #slice>, tensor<64x64xf32, #blocked>, tensor<64xf32, #slice>, i32
    } {kiln_gpu.overlap_dots}
    kiln_gpu.async_wait {pending = 0 : i32}
    %47 = kiln.expand_dims %46#0 {axis = 1 : i32} : tensor<64xf32, #slice> -> tensor<64x1xf32, #blocked>
    %48 = kiln.broadcast %47 : tensor<64x1xf32, #blocked> -> tensor<64x64xf32, #blocked>
    %49 = arith.divf %46#1, %48 : tensor<64x64xf32, #blocked>
    %50 = kiln.splat %arg8 : i32 -> tensor<64x1xi32, #blocked1>
    %51 = arith.muli %12, %50 : tensor<64x1xi32, #blocked1>
    %52 = kiln.splat %arg3 : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>, #blocked1>
    %53 = kiln.addptr %52, %51 : tensor<64x1x!kiln.ptr<f16>, #blocked1>, tensor<64x1xi32, #blocked1>
    %54 = kiln.broadcast %53 : tensor<64x1x!kiln.ptr<f16>, #blocked1> -> tensor<64x64x!kiln.ptr<f16>, #blocked1>
    %55 = kiln.addptr %54, %20 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xi32, #blocked1>
    %56 = arith.truncf %49 : tensor<64x64xf32, #blocked> to tensor<64x64xf16, #blocked>
    %57 = kiln_gpu.convert_layout %56 : tensor<64x64xf16, #blocked> -> tensor<64x64xf16, #blocked1>
    kiln.store %55, %57 : tensor<64x64x!kiln.ptr<f16>, #blocked1>, tensor<64x64xf16, #blocked1>
    return
  }
}


// -----

// A warp-specialized consumer loop (kiln-gpu-warp-specialize marked it):
// the slot's release runs late with the second dot, after the wait for it
// (the previous block's slot, carried), and after the last block's second
// dot, after the loop.
// CHECK-LABEL: func.func @warp_specialized
// CHECK: scf.if
// CHECK: kiln.dot
// CHECK-NOT: release_slot
// CHECK: scf.for {{.*}} iter_args({{.*}}%[[SLOT:[a-z0-9]+]] = %{{[a-z0-9_]+}}, %[[P:[a-z0-9]+]] = %{{[a-z0-9_]+}})
// CHECK: kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 0
// CHECK: %[[O:.*]] = kiln.dot %[[P]], {{.*}}kiln_gpu.wgmma_buffer = 0
// CHECK-NEXT: kiln_gpu.async_dot_wait %{{.*}} {pending = 1 : i32}
// CHECK-NOT: release_slot
// CHECK: kiln_gpu.async_dot_wait %[[O]] :
// CHECK-NEXT: kiln_gpu.release_slot %[[SLOT]] {barriers = 32784 : i64}
// CHECK-NEXT: scf.yield
// CHECK: kiln.dot
// CHECK-NEXT: kiln_gpu.release_slot
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>
#op = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]}>
#k = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 8192, slots = 2, kMajor = true>
#v = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 16384, slotBytes = 8192, slots = 2>
#q = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 32768, slotBytes = 16384, slots = 1>
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @warp_specialized(%lb: i32, %ub: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #acc>
    kiln_gpu.producer attributes {warps = 4 : i32} {
    }
    %r:2 = scf.for %i = %lb to %ub step %c64 iter_args(%acc = %zero, %slot = %c0) -> (tensor<128x64xf32, #acc>, i32) : i32 {
      kiln_gpu.wait_tma_barrier %slot, %c0 {barriers = 32768 : i64, perThread}
      %kt = kiln_gpu.shared_operand %slot {buffer = #k} : tensor<64x64xf16, #op>
      %q = kiln_gpu.shared_operand %slot {buffer = #q} : tensor<128x64xf16, #op>
      %s = kiln.dot %q, %kt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #op> * tensor<64x64xf16, #op> -> tensor<128x64xf32, #acc>
      %e = math.exp2 %s : tensor<128x64xf32, #acc>
      %p = arith.truncf %e : tensor<128x64xf32, #acc> to tensor<128x64xf16, #acc>
      %v = kiln_gpu.shared_operand %slot {buffer = #v} : tensor<64x64xf16, #op>
      %o = kiln.dot %p, %v, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #acc> * tensor<64x64xf16, #op> -> tensor<128x64xf32, #acc>
      kiln_gpu.release_slot %slot {barriers = 32784 : i64}
      %next = arith.addi %slot, %c64 : i32
      scf.yield %o, %next : tensor<128x64xf32, #acc>, i32
    } {kiln_gpu.overlap_dots}
    return
  }
}

