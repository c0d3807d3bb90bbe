// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu -verify-diagnostics

// Grid queries outside a kernel cannot be lowered.
func.func private @helper() -> i32 {
  // expected-error @+1 {{'kiln.program_id' op outside a kernel cannot be lowered for the CPU}}
  %p = kiln.program_id {axis = 0 : i32} : i32
  return %p : i32
}
