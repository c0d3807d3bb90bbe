// RUN: kiln-opt %s -split-input-file -kiln-nvvm-erase-needless-wgmma-waits | FileCheck %s

// Attention's loop at head dimension 64: the first dot's wait for all
// groups also completes the second dot's group of the iteration before,
// so the wait that returns that dot's accumulators keeps its results
// with no text, and the wait for one group after the second dot's commit
// goes. A libdevice call between counts for nothing. The marks go.
// CHECK-LABEL: llvm.func @second_dot_in_flight
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: %[[S:.*]] = llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 0;", "=f,0"
// CHECK-NEXT: llvm.call @__nv_exp2f
// CHECK-NEXT: %[[O:.*]] = llvm.inline_asm has_side_effects {{.*}}"", "=f,0"
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: llvm.fmul %[[O]]
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned
// CHECK-NOT: kiln.wgmma_wait
llvm.func @__nv_exp2f(f32) -> f32
llvm.func @second_dot_in_flight(%a: f32, %b: f32) -> f32 {
  nvvm.wgmma.commit.group.sync.aligned
  %s = llvm.inline_asm has_side_effects {kiln.wgmma_wait = 0 : i64} "wgmma.wait_group.sync.aligned 0;", "=f,0" %a : (f32) -> f32
  %e = llvm.call @__nv_exp2f(%s) : (f32) -> f32
  %o = llvm.inline_asm has_side_effects {kiln.wgmma_wait = 0 : i64} "wgmma.wait_group.sync.aligned 0;", "=f,0" %b : (f32) -> f32
  nvvm.wgmma.commit.group.sync.aligned
  nvvm.wgmma.wait.group.sync.aligned 1
  %r = llvm.fmul %o, %e : f32
  llvm.return %r : f32
}

// -----

// What may be in flight is unknown at the entry of a function that is no
// kernel, so its first wait stays. After a wait, each commit may add a
// group in flight: a later wait stays when it allows fewer groups than
// may be in flight (0 after one commit, 1 after two), and goes when it
// allows as many (2 after a wait for 1 and one commit). What may be in
// flight carries into the next block (2: its wait for 0 stays).
// CHECK-LABEL: llvm.func @counted
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: llvm.br ^bb1
// CHECK-NEXT: ^bb1:
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: llvm.return
llvm.func @counted() {
  nvvm.wgmma.wait.group.sync.aligned 1
  nvvm.wgmma.commit.group.sync.aligned
  nvvm.wgmma.wait.group.sync.aligned 0
  nvvm.wgmma.commit.group.sync.aligned
  nvvm.wgmma.commit.group.sync.aligned
  nvvm.wgmma.wait.group.sync.aligned 1
  nvvm.wgmma.commit.group.sync.aligned
  nvvm.wgmma.wait.group.sync.aligned 2
  llvm.br ^bb1
^bb1:
  nvvm.wgmma.wait.group.sync.aligned 0
  llvm.return
}

// -----

// The causal loop at head dimension 64: nothing is in flight at a kernel's
// entry (its wait goes); the loop's header meets the entry (none) and the
// back edge (the second dot's group), the masked and unmasked branches
// meet after the first dot's wait for all groups (none), so the wait for
// the second dot's accumulators loses its text and the wait for one group
// after its commit goes. After the loop the second dot's group may be in
// flight: that wait stays.
// CHECK-LABEL: llvm.func @causal_loop
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned
// CHECK: llvm.br ^bb1
// CHECK: ^bb1(%[[ACC:.*]]: f32):
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 0;"
// CHECK: ^bb4:
// CHECK-NEXT: llvm.inline_asm has_side_effects {{.*}}"", "=f,0" %[[ACC]]
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: llvm.fadd
// CHECK-NEXT: llvm.cond_br
// CHECK: ^bb5:
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 0;"
llvm.func @causal_loop(%a: f32, %c: i1, %d: i1) -> f32 attributes {nvvm.kernel} {
  nvvm.wgmma.wait.group.sync.aligned 0
  llvm.br ^bb1(%a : f32)
^bb1(%acc: f32):
  nvvm.wgmma.commit.group.sync.aligned
  %s = llvm.inline_asm has_side_effects {kiln.wgmma_wait = 0 : i64} "wgmma.wait_group.sync.aligned 0;", "=f,0" %a : (f32) -> f32
  llvm.cond_br %c, ^bb2, ^bb3
^bb2:
  llvm.br ^bb4
^bb3:
  llvm.br ^bb4
^bb4:
  %o = llvm.inline_asm has_side_effects {kiln.wgmma_wait = 0 : i64} "wgmma.wait_group.sync.aligned 0;", "=f,0" %acc : (f32) -> f32
  nvvm.wgmma.commit.group.sync.aligned
  nvvm.wgmma.wait.group.sync.aligned 1
  %n = llvm.fadd %o, %s : f32
  llvm.cond_br %d, ^bb1(%n : f32), ^bb5
^bb5:
  %r = llvm.inline_asm has_side_effects {kiln.wgmma_wait = 0 : i64} "wgmma.wait_group.sync.aligned 0;", "=f,0" %n : (f32) -> f32
  llvm.return %r : f32
}

// -----

// A call to a function of the kernel's own, or inline PTX of the kernel's
// that commits groups, may leave groups in flight: the wait after either
// stays, with its text.
// CHECK-LABEL: llvm.func @unknown_after
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK-NEXT: llvm.call @helper
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 0;"
// CHECK-NEXT: "wgmma.commit_group.sync.aligned;"
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
llvm.func @helper()
llvm.func @unknown_after(%a: f32, %b: f32) -> f32 {
  %s = llvm.inline_asm has_side_effects {kiln.wgmma_wait = 0 : i64} "wgmma.wait_group.sync.aligned 0;", "=f,0" %a : (f32) -> f32
  llvm.call @helper() : () -> ()
  %o = llvm.inline_asm has_side_effects {kiln.wgmma_wait = 0 : i64} "wgmma.wait_group.sync.aligned 0;", "=f,0" %b : (f32) -> f32
  llvm.inline_asm has_side_effects "wgmma.commit_group.sync.aligned;", "" : () -> ()
  nvvm.wgmma.wait.group.sync.aligned 0
  %r = llvm.fadd %s, %o : f32
  llvm.return %r : f32
}
