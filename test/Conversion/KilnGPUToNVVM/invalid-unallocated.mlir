// RUN: kiln-opt %s -convert-kiln-gpu-to-nvvm -verify-diagnostics

// The conversion reads where shared memory lies; it does not place it.
// expected-error @below {{expects the module attribute 'kiln_gpu.shared' (bytes of shared memory): run kiln-gpu-allocate-shared-memory first}}
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @unallocated() attributes {kiln.kernel} {
  return
}
}
