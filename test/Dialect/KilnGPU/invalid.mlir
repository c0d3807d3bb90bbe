// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{expected sizePerThread, threadsPerWarp, warpsPerCTA and order of the same rank, got 1, 1, 1 and 2}}
func.func @rank(%a: tensor<64xf32, #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0, 1]}>>) {
  return
}

// -----

// expected-error @+1 {{expected order to be a permutation of [0, 2)}}
func.func @order(%a: tensor<8x64xf32, #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 1]}>>) {
  return
}

// -----

// expected-error @+1 {{expected powers of two, got 3}}
func.func @power_of_two(%a: tensor<64xf32, #kiln_gpu.blocked<{sizePerThread = [3], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>>) {
  return
}
