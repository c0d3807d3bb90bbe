// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu -verify-diagnostics

// One case per diagnostic of the CPU lowering and of the LLVM patterns it
// shares with the NVIDIA lowering (element-wise calls, combine functions).
// notifyMatchFailure reasons never reach the user, who sees "failed to
// legalize".

// Grid queries outside a kernel cannot be lowered.
func.func private @helper() -> i32 {
  // expected-error @+1 {{'kiln.program_id' op outside a kernel cannot be lowered for the CPU}}
  %p = kiln.program_id {axis = 0 : i32} : i32
  return %p : i32
}

// -----

// A symbol declared with another type is reported, not miscompiled.
func.func @clash(%x: f32, %y: f64) -> (f32, f64) {
  %0 = kiln.extern_elementwise "__nv_expf"(%x) : (f32) -> f32
  // expected-error @+2 {{'kiln.extern_elementwise' op expected '__nv_expf' to have type '!llvm.func<f32 (f32)>', got '!llvm.func<f64 (f64)>'}}
  // expected-error @+1 {{failed to legalize operation 'kiln.extern_elementwise'}}
  %1 = kiln.extern_elementwise "__nv_expf"(%y) : (f64) -> f64
  return %0, %1 : f32, f64
}

// -----

// Inline assembly is GPU code: the CPU refuses it, at the op.
func.func @inline_asm(%x: i32) -> i32 attributes {kiln.kernel} {
  // expected-error @+1 {{'kiln.elementwise_inline_asm' op cannot be lowered for the CPU: inline assembly is GPU code (PTX) that the host cannot run}}
  %r = kiln.elementwise_inline_asm "mov.b32 $0, $1;" "=r,r"(%x) {packed_element = 1 : i32, pure = true} : (i32) -> i32
  return %r : i32
}

// -----

// A reduction halves its axis: only power-of-two extents.
func.func @reduce_odd_extent(%x: tensor<12xf32>) -> f32 attributes {kiln.kernel} {
  // expected-error @+2 {{'kiln.reduce' op expected a power-of-two extent along the axis}}
  // expected-error @+1 {{failed to legalize operation 'kiln.reduce'}}
  %r = kiln.reduce(%x) {axis = 0 : i32} : (tensor<12xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    kiln.reduce.return %s : f32
  }
  return %r : f32
}

// -----

// An element-wise call whose name another symbol already has.
llvm.mlir.global internal @taken(0 : i32) : i32

func.func @name_taken(%x: f32) -> f32 attributes {kiln.kernel} {
  // expected-error @+2 {{'kiln.extern_elementwise' op cannot call 'taken': the name is taken by another symbol}}
  // expected-error @+1 {{failed to legalize operation 'kiln.extern_elementwise'}}
  %y = kiln.extern_elementwise "taken"(%x) : (f32) -> f32
  return %y : f32
}

// -----

// A combine function is inlined into the lowering's vector code, as one
// block: an `if` in it, lowered to branches first, cannot be.
func.func @combine_with_if(%x: tensor<16xf32>, %c: i1) -> f32 attributes {kiln.kernel} {
  // expected-error @+2 {{'kiln.reduce' op with control flow in its combine function is not supported; use kl.where instead of if}}
  // expected-error @+1 {{failed to legalize operation 'kiln.reduce'}}
  %r = kiln.reduce(%x) {axis = 0 : i32} : (tensor<16xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %s = scf.if %c -> f32 {
      scf.yield %a : f32
    } else {
      scf.yield %b : f32
    }
    kiln.reduce.return %s : f32
  }
  return %r : f32
}

// -----

// Nor can an op with regions of its own that nothing lowered before (here a
// reduction nested in the combine function).
func.func @combine_with_reduce(%x: tensor<16xf32>) -> f32 attributes {kiln.kernel} {
  // expected-error @+1 {{failed to legalize operation 'kiln.reduce'}}
  %r = kiln.reduce(%x) {axis = 0 : i32} : (tensor<16xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %t = kiln.splat %a : f32 -> tensor<4xf32>
    // expected-error @+1 {{'kiln.reduce' op in a combine function is not supported}}
    %u = kiln.reduce(%t) {axis = 0 : i32} : (tensor<4xf32>) -> f32 {
    ^bb0(%c: f32, %d: f32):
      %s = arith.addf %c, %d : f32
      kiln.reduce.return %s : f32
    }
    kiln.reduce.return %u : f32
  }
  return %r : f32
}

// -----

// Boolean blocks of 65536 elements make LLVM's code generator abort: the
// lowering refuses them at the op that makes one.
func.func @wide_compare(%x: tensor<256x256xf32>, %y: tensor<256x256xf32>) -> tensor<256x256xi1> attributes {kiln.kernel} {
  // expected-error @+1 {{the CPU backend compiles blocks of booleans (compares, masks) of at most 65535 elements, and this one has 65536 (LLVM's code generator fails on wider ones); use smaller blocks}}
  %c = arith.cmpf ogt, %x, %y : tensor<256x256xf32>
  return %c : tensor<256x256xi1>
}
