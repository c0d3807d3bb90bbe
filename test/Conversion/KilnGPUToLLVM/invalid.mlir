// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-llvm -verify-diagnostics

// 8-bit float bytes reach the lowering only on wgmma: elsewhere
// kiln-gpu-accelerate-matmul decodes them to f16 first.
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = "sm_80"} {
func.func @fp8_on_mma(%a: tensor<64x32xi8, #bA>, %b: tensor<32x64xi8, #bA>, %c: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  // expected-error @+2 {{expected 8-bit float operands only on wgmma (kiln-gpu-accelerate-matmul decodes the others)}}
  // expected-error @+1 {{failed to legalize operation 'kiln.dot'}}
  %d = kiln.dot %a, %b, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e4m3>, inputPrecision = #kiln.precision<ieee>, maxNumImpreciseAcc = 32 : i32} : tensor<64x32xi8, #bA> * tensor<32x64xi8, #bA> -> tensor<64x64xf32, #mma>
  return %d : tensor<64x64xf32, #mma>
}
}
