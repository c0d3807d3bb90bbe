// RUN: kiln-opt %s -kiln-gpu-pipeline-loads="num-stages=3" -kiln-gpu-warp-specialize -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm -kiln-nvvm-erase-needless-barriers -kiln-nvvm-name-consumer-barriers | FileCheck %s

// A warp-specialized kernel (kiln-gpu-warp-specialize's first example, 4
// consumer warps): the CTA is 8 warps; every warp waits for the mbarriers'
// initialization (a barrier with no thread count), then threads from 128
// on branch to the producer, where only the first producer warp (threads
// 128 to 159) runs the region, its TMA copies issued by thread 128 and its
// lanes (thread index less 128), and returns; the others return at once.
// The consumer warps wait for each slot by themselves, release it after
// the dot (bar.warp.sync, then lane 0 of each warp arrives), and their
// barriers are named barrier 1 of 128 threads. With 4 consumer warps no
// registers move (no setmaxnreg).
// CHECK: module attributes {{{.*}}kiln_gpu.producer_warps = 4 : i32
// CHECK: llvm.func @tma({{.*}}nvvm.reqntid = array<i32: 256, 1, 1>
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.barrier{{$}}
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.barrier{{$}}
// CHECK-NEXT: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[CONSUMERS:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-NEXT: %[[PRODUCER:.*]] = llvm.icmp "uge" %[[TID]], %[[CONSUMERS]] : i32
// CHECK-NEXT: llvm.cond_br %[[PRODUCER]], ^[[WARPGROUP:.*]], ^[[CONSUMER:[^ ]*]]
// CHECK-NEXT: ^[[WARPGROUP]]:
// CHECK-NEXT: %[[FIRST:.*]] = llvm.mlir.constant(160 : i32) : i32
// CHECK-NEXT: %[[ISSUER:.*]] = llvm.icmp "ult" %[[TID]], %[[FIRST]] : i32
// CHECK-NEXT: llvm.cond_br %[[ISSUER]], ^[[REGION:.*]], ^[[IDLE:[^ ]*]]
// CHECK-NEXT: ^[[REGION]]:
// CHECK-NOT: setmaxnreg
// CHECK: %[[COPIER:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[BASE:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-NEXT: llvm.sub %[[COPIER]], %[[BASE]] : i32
// CHECK: mbarrier.arrive.expect_tx
// CHECK: cp.async.bulk.tensor.2d
// CHECK: mbarrier.try_wait.parity
// CHECK: llvm.return
// CHECK-NEXT: ^[[IDLE]]:
// CHECK-NEXT: llvm.return
// CHECK-NEXT: ^[[CONSUMER]]:
// CHECK-NOT: setmaxnreg
// CHECK-NOT: cp.async.bulk.tensor
// CHECK: mbarrier.try_wait.parity
// CHECK-NOT: nvvm.barrier
// CHECK: wgmma.wait_group.sync.aligned 0
// CHECK: %[[ALL:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT: nvvm.bar.warp.sync %[[ALL]] : i32
// CHECK-NEXT: %[[LANE:.*]] = nvvm.read.ptx.sreg.laneid : i32
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3> -> i64
// CHECK: %[[COUNT:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-NEXT: nvvm.barrier id = %{{.*}} number_of_threads = %[[COUNT]]
// CHECK: nvvm.mbarrier.inval
// CHECK-NOT: nvvm.barrier0
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
