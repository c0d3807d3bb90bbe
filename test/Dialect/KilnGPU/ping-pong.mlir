// RUN: kiln-opt %s -split-input-file -kiln-gpu-ping-pong | FileCheck %s

// A warp-specialized attention loop on two consumer warpgroups (8 warps),
// Q, K and V in slots: warpgroup 0 gets the first turn before the loop; in
// the loop each warpgroup waits for its turn before the first dot, issues
// it asynchronously, passes the turn on, and only then waits for it. The
// second dot stays as it was.
// CHECK-LABEL: func.func @attention
// CHECK: kiln_gpu.producer
// CHECK: kiln_gpu.begin_turns
// CHECK-NEXT: scf.for
// CHECK: kiln_gpu.shared_operand
// CHECK-NEXT: kiln_gpu.shared_operand
// CHECK-NEXT: kiln_gpu.await_turn
// CHECK-NEXT: %[[S:.*]] = kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 0 : i32
// CHECK-NEXT: kiln_gpu.pass_turn
// CHECK-NEXT: %[[SCORES:.*]] = kiln_gpu.async_dot_wait %[[S]] :
// CHECK-NEXT: math.exp2 %[[SCORES]]
// CHECK: kiln.dot %{{.*}}, %{{.*}}, %{{.*}} {inputPrecision = #kiln.precision<ieee>} :
// CHECK-NEXT: kiln_gpu.release_slot
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>
#op = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]}>
#k = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 8192, slots = 2, kMajor = true>
#v = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 16384, slotBytes = 8192, slots = 2>
#q = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 32768, slotBytes = 16384, slots = 1>
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @attention(%lb: i32, %ub: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #acc>
    kiln_gpu.producer attributes {warps = 4 : i32} {
    }
    %r = scf.for %i = %lb to %ub step %c64 iter_args(%acc = %zero) -> (tensor<128x64xf32, #acc>) : i32 {
      kiln_gpu.wait_tma_barrier %c0, %c0 {barriers = 32768 : i64, perThread}
      %kt = kiln_gpu.shared_operand %c0 {buffer = #k} : tensor<64x64xf16, #op>
      %q = kiln_gpu.shared_operand %c0 {buffer = #q} : tensor<128x64xf16, #op>
      %s = kiln.dot %q, %kt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #op> * tensor<64x64xf16, #op> -> tensor<128x64xf32, #acc>
      %e = math.exp2 %s : tensor<128x64xf32, #acc>
      %p = arith.truncf %e : tensor<128x64xf32, #acc> to tensor<128x64xf16, #acc>
      %v = kiln_gpu.shared_operand %c0 {buffer = #v} : tensor<64x64xf16, #op>
      %o = kiln.dot %p, %v, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #acc> * tensor<64x64xf16, #op> -> tensor<128x64xf32, #acc>
      kiln_gpu.release_slot %c0 {barriers = 32784 : i64}
      scf.yield %o : tensor<128x64xf32, #acc>
    }
    return
  }
}

// -----

// Without a producer (a kernel that is not warp-specialized) nothing
// changes.
// CHECK-LABEL: func.func @not_specialized
// CHECK-NOT: _turn
// CHECK-NOT: wgmma_buffer
// CHECK: return
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>
#op = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]}>
#k = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 8192, slots = 2, kMajor = true>
#v = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 16384, slotBytes = 8192, slots = 2>
#q = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 32768, slotBytes = 16384, slots = 1>
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @not_specialized(%lb: i32, %ub: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #acc>
    %r = scf.for %i = %lb to %ub step %c64 iter_args(%acc = %zero) -> (tensor<128x64xf32, #acc>) : i32 {
      kiln_gpu.wait_tma_barrier %c0, %c0 {barriers = 32768 : i64, perThread}
      %kt = kiln_gpu.shared_operand %c0 {buffer = #k} : tensor<64x64xf16, #op>
      %q = kiln_gpu.shared_operand %c0 {buffer = #q} : tensor<128x64xf16, #op>
      %s = kiln.dot %q, %kt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #op> * tensor<64x64xf16, #op> -> tensor<128x64xf32, #acc>
      %e = math.exp2 %s : tensor<128x64xf32, #acc>
      %p = arith.truncf %e : tensor<128x64xf32, #acc> to tensor<128x64xf16, #acc>
      %v = kiln_gpu.shared_operand %c0 {buffer = #v} : tensor<64x64xf16, #op>
      %o = kiln.dot %p, %v, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #acc> * tensor<64x64xf16, #op> -> tensor<128x64xf32, #acc>
      kiln_gpu.release_slot %c0 {barriers = 32784 : i64}
      scf.yield %o : tensor<128x64xf32, #acc>
    }
    return
  }
}

// -----

// One warpgroup (4 warps) has no one to take turns with.
// CHECK-LABEL: func.func @one_warpgroup
// CHECK-NOT: _turn
// CHECK-NOT: wgmma_buffer
// CHECK: return
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#op = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#k = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 8192, slots = 2, kMajor = true>
#v = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 16384, slotBytes = 8192, slots = 2>
#q = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 32768, slotBytes = 8192, slots = 1>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @one_warpgroup(%lb: i32, %ub: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #acc>
    kiln_gpu.producer attributes {warps = 4 : i32} {
    }
    %r = scf.for %i = %lb to %ub step %c64 iter_args(%acc = %zero) -> (tensor<64x64xf32, #acc>) : i32 {
      kiln_gpu.wait_tma_barrier %c0, %c0 {barriers = 32768 : i64, perThread}
      %kt = kiln_gpu.shared_operand %c0 {buffer = #k} : tensor<64x64xf16, #op>
      %q = kiln_gpu.shared_operand %c0 {buffer = #q} : tensor<64x64xf16, #op>
      %s = kiln.dot %q, %kt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #op> * tensor<64x64xf16, #op> -> tensor<64x64xf32, #acc>
      %e = math.exp2 %s : tensor<64x64xf32, #acc>
      %p = arith.truncf %e : tensor<64x64xf32, #acc> to tensor<64x64xf16, #acc>
      %v = kiln_gpu.shared_operand %c0 {buffer = #v} : tensor<64x64xf16, #op>
      %o = kiln.dot %p, %v, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #acc> * tensor<64x64xf16, #op> -> tensor<64x64xf32, #acc>
      kiln_gpu.release_slot %c0 {barriers = 32784 : i64}
      scf.yield %o : tensor<64x64xf32, #acc>
    }
    return
  }
}

// -----

// A query in registers, which the first dot would store into the scratch
// between two CTA barriers: the other warpgroup, waiting for its turn,
// would never meet them. No turns.
// CHECK-LABEL: func.func @query_in_registers
// CHECK-NOT: _turn
// CHECK-NOT: wgmma_buffer
// CHECK: return
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>
#op = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]}>
#k = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 8192, slots = 2, kMajor = true>
#v = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 16384, slotBytes = 8192, slots = 2>
#q = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 32768, slotBytes = 16384, slots = 1>
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @query_in_registers(%q: tensor<128x64xf16, #op>, %lb: i32, %ub: i32) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #acc>
    kiln_gpu.producer attributes {warps = 4 : i32} {
    }
    %r = scf.for %i = %lb to %ub step %c64 iter_args(%acc = %zero) -> (tensor<128x64xf32, #acc>) : i32 {
      kiln_gpu.wait_tma_barrier %c0, %c0 {barriers = 32768 : i64, perThread}
      %kt = kiln_gpu.shared_operand %c0 {buffer = #k} : tensor<64x64xf16, #op>
      %s = kiln.dot %q, %kt, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #op> * tensor<64x64xf16, #op> -> tensor<128x64xf32, #acc>
      %e = math.exp2 %s : tensor<128x64xf32, #acc>
      %p = arith.truncf %e : tensor<128x64xf32, #acc> to tensor<128x64xf16, #acc>
      %v = kiln_gpu.shared_operand %c0 {buffer = #v} : tensor<64x64xf16, #op>
      %o = kiln.dot %p, %v, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #acc> * tensor<64x64xf16, #op> -> tensor<128x64xf32, #acc>
      kiln_gpu.release_slot %c0 {barriers = 32784 : i64}
      scf.yield %o : tensor<128x64xf32, #acc>
    }
    return
  }
}



// -----

// A loop that kiln-gpu-overlap-dots rotated: the warpgroup issues both
// asynchronous dots (this block's first, the previous block's second) in
// its turn and passes the turn before waiting for the first one; the
// first iteration and the last second dot, outside the loop, are not in
// turn. The turns begin as the consumers' code does, after the producer.
// CHECK-LABEL: func.func @rotated
// CHECK: kiln_gpu.producer
// CHECK: kiln_gpu.begin_turns
// CHECK-NOT: _turn
// CHECK: scf.for
// CHECK: kiln_gpu.await_turn
// CHECK-NEXT: kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 0
// CHECK-NEXT: kiln_gpu.shared_operand
// CHECK-NEXT: kiln.dot {{.*}}kiln_gpu.wgmma_buffer = 0
// CHECK-NEXT: kiln_gpu.pass_turn
// CHECK-NEXT: kiln_gpu.async_dot_wait %{{.*}} {pending = 1 : i32}
// CHECK-NOT: _turn
// CHECK: return
#blocked = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @rotated(%arg0: i32, %arg1: i32) attributes {kiln.kernel} {
    %c0_i32 = arith.constant 0 : i32
    %c64_i32 = arith.constant 64 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #blocked>
    kiln_gpu.producer attributes {warps = 4 : i32} {
    }
    %0 = arith.cmpi slt, %arg0, %arg1 : i32
    %1:2 = scf.if %0 -> (tensor<128x64xf32, #blocked>, i32) {
      kiln_gpu.wait_tma_barrier %c0_i32, %c0_i32 {barriers = 32768 : i64, perThread}
      %2 = kiln_gpu.shared_operand %c0_i32 {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 8192, slots = 2, kMajor = true>} : tensor<64x64xf16, #blocked1>
      %3 = kiln_gpu.shared_operand %c0_i32 {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 32768, slotBytes = 16384, slots = 1>} : tensor<128x64xf16, #blocked1>
      %4 = kiln.dot %3, %2, %cst {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #blocked1> * tensor<64x64xf16, #blocked1> -> tensor<128x64xf32, #blocked>
      %5 = math.exp2 %4 : tensor<128x64xf32, #blocked>
      %6 = arith.truncf %5 : tensor<128x64xf32, #blocked> to tensor<128x64xf16, #blocked>
      %7 = arith.addi %c0_i32, %c64_i32 : i32
      %8 = arith.addi %arg0, %c64_i32 : i32
      %9:4 = scf.for %arg2 = %8 to %arg1 step %c64_i32 iter_args(%arg3 = %cst, %arg4 = %7, %arg5 = %c0_i32, %arg6 = %6) -> (tensor<128x64xf32, #blocked>, i32, i32, tensor<128x64xf16, #blocked>)  : i32 {
        kiln_gpu.wait_tma_barrier %arg4, %c0_i32 {barriers = 32768 : i64, perThread}
        %12 = kiln_gpu.shared_operand %arg4 {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 8192, slots = 2, kMajor = true>} : tensor<64x64xf16, #blocked1>
        %13 = kiln_gpu.shared_operand %arg4 {buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 32768, slotBytes = 16384, slots = 1>} : tensor<128x64xf16, #blocked1>
        %14 = kiln.dot %13, %12, %cst {inputPrecision = #kiln.precision<ieee>, kiln_gpu.wgmma_buffer = 0 : i32} : tensor<128x64xf16, #blocked1> * tensor<64x64xf16, #blocked1> -> tensor<128x64xf32, #blocked>
        %15 = kiln_gpu.shared_operand %arg5 {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 16384, slotBytes = 8192, slots = 2>} : tensor<64x64xf16, #blocked1>
        %16 = kiln.dot %arg6, %15, %arg3 {inputPrecision = #kiln.precision<ieee>, kiln_gpu.wgmma_buffer = 0 : i32} : tensor<128x64xf16, #blocked> * tensor<64x64xf16, #blocked1> -> tensor<128x64xf32, #blocked>
        %17 = kiln_gpu.async_dot_wait %14 {pending = 1 : i32} : tensor<128x64xf32, #blocked>
        %18 = math.exp2 %17 : tensor<128x64xf32, #blocked>
        %19 = arith.truncf %18 : tensor<128x64xf32, #blocked> to tensor<128x64xf16, #blocked>
        %20 = arith.addi %arg4, %c64_i32 : i32
        %21 = kiln_gpu.async_dot_wait %16 : tensor<128x64xf32, #blocked>
        kiln_gpu.release_slot %arg5 {barriers = 32784 : i64}
        scf.yield %21, %20, %arg4, %19 : tensor<128x64xf32, #blocked>, i32, i32, tensor<128x64xf16, #blocked>
      }
      %10 = kiln_gpu.shared_operand %9#2 {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 16384, slotBytes = 8192, slots = 2>} : tensor<64x64xf16, #blocked1>
      %11 = kiln.dot %9#3, %10, %9#0 {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16, #blocked> * tensor<64x64xf16, #blocked1> -> tensor<128x64xf32, #blocked>
      kiln_gpu.release_slot %9#2 {barriers = 32784 : i64}
      scf.yield %11, %9#1 : tensor<128x64xf32, #blocked>, i32
    } else {
      scf.yield %cst, %c0_i32 : tensor<128x64xf32, #blocked>, i32
    }
    return
  }
}
