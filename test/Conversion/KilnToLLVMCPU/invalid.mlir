// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu -verify-diagnostics

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
