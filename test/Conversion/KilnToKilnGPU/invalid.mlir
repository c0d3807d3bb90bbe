// RUN: kiln-opt %s -split-input-file -convert-kiln-to-kiln-gpu='num-warps=3' -verify-diagnostics

// expected-error @+1 {{expected num_warps to be a power of two, got 3}}
module {
}
