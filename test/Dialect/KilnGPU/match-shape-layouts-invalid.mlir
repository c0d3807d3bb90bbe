// RUN: kiln-opt %s -kiln-gpu-match-shape-layouts -verify-diagnostics

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>

module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @carried(%init: tensor<32xi32, #b1>, %n: index) -> tensor<32x1xi32, #b2> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{cannot be recomputed under another layout}}
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<32xi32, #b1>) {
    scf.yield %acc : tensor<32xi32, #b1>
  }
  %e = kiln.expand_dims %r {axis = 1 : i32} : tensor<32xi32, #b1> -> tensor<32x1xi32, #b2>
  return %e : tensor<32x1xi32, #b2>
}
}
