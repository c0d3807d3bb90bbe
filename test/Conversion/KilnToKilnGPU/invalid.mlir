// Each case runs with its own options: split-file writes them out apart.
// RUN: split-file %s %t
// RUN: kiln-opt %t/num-warps.mlir -convert-kiln-to-kiln-gpu='num-warps=3' -verify-diagnostics
// RUN: kiln-opt %t/threads-per-warp.mlir -convert-kiln-to-kiln-gpu='threads-per-warp=24' -verify-diagnostics
// RUN: kiln-opt %t/laid-out.mlir -convert-kiln-to-kiln-gpu -verify-diagnostics

//--- num-warps.mlir
// expected-error @+1 {{expected num_warps to be a power of two, got 3}}
module {
}

//--- threads-per-warp.mlir
// expected-error @+1 {{expected threads_per_warp to be a power of two, got 24}}
module {
}

//--- laid-out.mlir
// A second run would lay out blocks that already have a layout.
#b = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// expected-error @+1 {{expected blocks without layouts; the module already went through convert-kiln-to-kiln-gpu}}
module {
  func.func @twice(%x: tensor<128xf32, #b>) -> tensor<128xf32, #b> attributes {kiln.kernel} {
    return %x : tensor<128xf32, #b>
  }
}
