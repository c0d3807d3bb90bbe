// RUN: kiln-opt %s -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm | FileCheck %s

// Two warpgroups (8 warps) taking turns: warpgroup w (thread index / 128)
// waits on named barrier 2 + w, counting both warpgroups' 256 threads, and
// passes the turn by arriving on barrier 2 + (w + 1) mod 2; warpgroup 0
// alone begins by arriving on its own barrier, 2.
// CHECK-LABEL: llvm.func @turns
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[WG:.*]] = llvm.udiv %[[TID]], %{{.*}} : i32
// CHECK: %[[FIRST:.*]] = llvm.icmp "eq" %[[WG]], %{{.*}} : i32
// CHECK: llvm.cond_br %[[FIRST]]
// CHECK: %[[TWO:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: %[[ROUND:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK: nvvm.barrier.arrive id = %[[TWO]] number_of_threads = %[[ROUND]]
// CHECK: %[[TID2:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[WG2:.*]] = llvm.udiv %[[TID2]], %{{.*}} : i32
// CHECK: %[[MINE:.*]] = llvm.add %[[WG2]], %{{.*}} : i32
// CHECK: nvvm.barrier id = %[[MINE]] number_of_threads = %{{.*}}
// CHECK: %[[TID3:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[WG3:.*]] = llvm.udiv %[[TID3]], %{{.*}} : i32
// CHECK: %[[PLUS:.*]] = llvm.add %[[WG3]], %{{.*}} : i32
// CHECK: %[[NEXT:.*]] = llvm.urem %[[PLUS]], %{{.*}} : i32
// CHECK: %[[THEIRS:.*]] = llvm.add %[[NEXT]], %{{.*}} : i32
// CHECK: nvvm.barrier.arrive id = %[[THEIRS]] number_of_threads = %{{.*}}
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @turns() attributes {kiln.kernel} {
    kiln_gpu.begin_turns
    kiln_gpu.await_turn
    kiln_gpu.pass_turn
    return
  }
}
