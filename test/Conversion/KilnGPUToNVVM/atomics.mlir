// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm -kiln-nvvm-erase-needless-barriers | FileCheck %s

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// 128 threads hold a 32-element block four times over: only the owner of
// an element applies it (the predicate is mask and ownership), and the old
// values reach the replicas through a shared array between two barriers,
// written by the owners only, behind a branch.
// CHECK: llvm.mlir.global internal @kiln_atomic_exchange_0() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<32 x i64>
// CHECK-LABEL: llvm.func @replicated
// CHECK: %[[PRED:.*]] = llvm.and %{{.*}}, %{{.*}} : vector<1xi1>
// CHECK: nvvm.barrier0
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "mov.b32 $0, 0;\0A\09@$3 atom.global.cta.relaxed.add.u32 $0, [ $1 + 0 ], $2;", "=r,l,r,b"
// CHECK: llvm.cond_br %{{.*}}, ^[[STORE:.*]], ^[[JOIN:.*]]
// CHECK: ^[[STORE]]:
// CHECK-NEXT: llvm.getelementptr
// CHECK-NEXT: llvm.zext
// CHECK-NEXT: llvm.store %{{.*}}, %{{.*}} : i64, !llvm.ptr<3>
// CHECK-NEXT: llvm.br ^[[JOIN]]
// CHECK: ^[[JOIN]]:
// CHECK: nvvm.barrier0
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> i64
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
  func.func public @replicated(%bins: !kiln.ptr<i32>, %out: !kiln.ptr<i32>) attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32, #b1>
    %c = arith.constant dense<7> : tensor<32xi32, #b1>
    %m = arith.cmpi slt, %r, %c : tensor<32xi32, #b1>
    %bs = kiln.splat %bins : !kiln.ptr<i32> -> tensor<32x!kiln.ptr<i32>, #b1>
    %bp = kiln.addptr %bs, %r : tensor<32x!kiln.ptr<i32>, #b1>, tensor<32xi32, #b1>
    %one = arith.constant dense<1> : tensor<32xi32, #b1>
    %old = kiln.atomic_rmw add, %bp, %one, %m {sem = #kiln.sem<relaxed>, scope = #kiln.scope<cta>} : tensor<32x!kiln.ptr<i32>, #b1>, tensor<32xi32, #b1>
    %os = kiln.splat %out : !kiln.ptr<i32> -> tensor<32x!kiln.ptr<i32>, #b1>
    %op = kiln.addptr %os, %r : tensor<32x!kiln.ptr<i32>, #b1>, tensor<32xi32, #b1>
    kiln.store %op, %old : tensor<32x!kiln.ptr<i32>, #b1>, tensor<32xi32, #b1>
    return
  }
}

// -----

// A scalar atomic runs on thread 0 only, after a barrier so that the
// whole program's earlier accesses precede it; its result is broadcast.
// Float max splits on the sign: signed max of the bits for non-negative
// values, unsigned min for negative ones.
// CHECK-LABEL: llvm.func @scalar
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: llvm.icmp "eq" %[[TID]]
// CHECK: nvvm.barrier0
// CHECK: "mov.b32 $0, 0;\0A\09@$3 atom.global.gpu.acq_rel.max.s32 $0, [ $1 + 0 ], $2;\0A\09@$4 atom.global.gpu.acq_rel.min.u32 $0, [ $1 + 0 ], $2;", "=r,l,r,b,b"
// CHECK: nvvm.barrier0
// CHECK: nvvm.barrier0
// CHECK: "mov.b16 $0, 0;\0A\09@$4 atom.global.acquire.sys.cas.b16 $0, [ $1 + 0 ], $2, $3;", "=h,l,h,h,b"
// CHECK: nvvm.barrier0
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
  func.func public @scalar(%f: !kiln.ptr<f32>, %h: !kiln.ptr<i16>, %v: f32, %c: i16) attributes {kiln.kernel} {
    %old = kiln.atomic_rmw fmax, %f, %v : !kiln.ptr<f32>, f32
    kiln.store %f, %old : !kiln.ptr<f32>, f32
    %o16 = kiln.atomic_cas %h, %c, %c {sem = #kiln.sem<acquire>, scope = #kiln.scope<sys>} : !kiln.ptr<i16>, i16
    kiln.store %h, %o16 : !kiln.ptr<i16>, i16
    return
  }
}

// -----

// CHECK-LABEL: llvm.func @barrier
// CHECK-NEXT: nvvm.barrier0
// CHECK-NEXT: llvm.return
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @barrier(%n: i32) attributes {kiln.kernel} {
    %h = kiln.axis_hint %n {divisibility = array<i64: 16>} : i32
    kiln.debug_barrier
    return
  }
}

// -----

// The tutorial's lock release: a debug_barrier, then a scalar exchange
// that needs a barrier of its own. Nothing lies between the two, so one
// remains. A barrier after a memory access stays.
// CHECK-LABEL: llvm.func @release
// CHECK: nvvm.barrier0
// CHECK-NOT: nvvm.barrier0
// CHECK: atom.global.gpu.acq_rel.exch.b32
// CHECK-NEXT: nvvm.barrier0
// CHECK: st.global.b32
// CHECK-NEXT: nvvm.barrier0
// CHECK-NEXT: llvm.return
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
  func.func public @release(%lock: !kiln.ptr<i32>, %zero: i32) attributes {kiln.kernel} {
    kiln.debug_barrier
    %old = kiln.atomic_rmw xchg, %lock, %zero : !kiln.ptr<i32>, i32
    kiln.debug_barrier
    kiln.store %lock, %zero : !kiln.ptr<i32>, i32
    kiln.debug_barrier
    return
  }
}

// -----

// Each owned element prints with one vprintf and fails with one
// __assertfail, each behind a branch.
// CHECK-LABEL: llvm.func @debugging
// CHECK: llvm.cond_br
// CHECK: llvm.call @vprintf(%{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr) -> i32
// CHECK: llvm.cond_br
// CHECK: llvm.call @__assertfail(%{{.*}}) : (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64) -> ()
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @debugging(%n: i32) attributes {kiln.kernel} {
    kiln.print %n {prefix = "n: ", hex = false, isSigned = array<i32: 1>} : i32
    %c = arith.constant 0 : i32
    %ok = arith.cmpi sgt, %n, %c : i32
    kiln.assert %ok {message = "n > 0", file = "k.py", line = 4 : i32, function = "k"} : i1
    return
  }
}
