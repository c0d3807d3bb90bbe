// RUN: kiln-opt %s -split-input-file -kiln-nvvm-erase-needless-barriers | FileCheck %s

// A shared-only barrier that no shared access precedes (only a global
// load, a shuffle and a special register before it) goes; the one after
// the shared store stays and loses its mark; a barrier right after it
// orders nothing more and goes.
// CHECK-LABEL: llvm.func @entry
// CHECK: llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// CHECK-NEXT: nvvm.read.ptx.sreg.tid.x
// CHECK-NEXT: nvvm.shfl.sync
// CHECK-NEXT: llvm.store
// CHECK-NEXT: nvvm.barrier0{{$}}
// CHECK-NEXT: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: kiln.shared_only
llvm.func @entry(%p: !llvm.ptr<1>, %s: !llvm.ptr<3>, %m: i32, %c: i32) -> f32 {
  %v = llvm.load %p : !llvm.ptr<1> -> f32
  %t = nvvm.read.ptx.sreg.tid.x : i32
  %x = nvvm.shfl.sync bfly %m, %t, %c, %c : i32 -> i32
  nvvm.barrier0 {kiln.shared_only}
  llvm.store %v, %s : f32, !llvm.ptr<3>
  nvvm.barrier0 {kiln.shared_only}
  nvvm.barrier0
  %w = llvm.load %s : !llvm.ptr<3> -> f32
  llvm.return %w : f32
}

// -----

// A barrier that orders global memory too (a debug_barrier's) stays at
// the start; so does a shared-only one after inline PTX that may touch
// shared memory (a cp.async).
// CHECK-LABEL: llvm.func @kept
// CHECK-NEXT: nvvm.barrier0{{$}}
// CHECK-NEXT: llvm.inline_asm
// CHECK-NEXT: nvvm.barrier0{{$}}
llvm.func @kept(%s: !llvm.ptr<3>, %p: !llvm.ptr<1>) {
  nvvm.barrier0
  llvm.inline_asm has_side_effects "cp.async.cg.shared.global [$0], [$1], 16;", "r,l" %s, %p : (!llvm.ptr<3>, !llvm.ptr<1>) -> ()
  nvvm.barrier0 {kiln.shared_only}
  llvm.return
}

// -----

// Only the entry block counts as "before": a shared-only barrier in
// another block stays. Inline PTX that names global memory only is no
// shared access. Two barriers with a store between both stay.
// CHECK-LABEL: llvm.func @blocks
// CHECK-NEXT: llvm.inline_asm
// CHECK-NEXT: llvm.br
// CHECK: ^bb1:
// CHECK-NEXT: nvvm.barrier0{{$}}
// CHECK-NEXT: llvm.store
// CHECK-NEXT: nvvm.barrier0{{$}}
llvm.func @blocks(%s: !llvm.ptr<3>, %p: !llvm.ptr<1>, %v: f32) {
  llvm.inline_asm has_side_effects "st.global.b32 [$0], 0;", "l" %p : (!llvm.ptr<1>) -> ()
  nvvm.barrier0 {kiln.shared_only}
  llvm.br ^bb1
^bb1:
  nvvm.barrier0 {kiln.shared_only}
  llvm.store %v, %s : f32, !llvm.ptr<3>
  nvvm.barrier0
  llvm.return
}

// -----

// The NVIDIA instructions the lowering emits as NVVM ops count as shared
// accesses by their type: a shared-only barrier after a cp.async wait, a
// proxy fence or an ldmatrix stays.
// CHECK-LABEL: llvm.func @nvvm_ops
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0{{$}}
// CHECK: llvm.func @fence
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: nvvm.barrier0{{$}}
// CHECK: llvm.func @ldmatrix
// CHECK-NEXT: nvvm.ldmatrix
// CHECK-NEXT: nvvm.barrier0{{$}}
llvm.func @nvvm_ops() {
  nvvm.cp.async.wait.group 0
  nvvm.barrier0 {kiln.shared_only}
  llvm.return
}
llvm.func @fence() {
  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
  nvvm.barrier0 {kiln.shared_only}
  llvm.return
}
llvm.func @ldmatrix(%s: !llvm.ptr<3>) -> i32 {
  %r = nvvm.ldmatrix %s {num = 1 : i32, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>} : (!llvm.ptr<3>) -> i32
  nvvm.barrier0 {kiln.shared_only}
  llvm.return %r : i32
}
