// RUN: kiln-opt %s -split-input-file -kiln-nvvm-name-consumer-barriers | FileCheck %s

// A warp-specialized kernel (kiln_gpu.producer_warps): each CTA barrier
// becomes named barrier 1 over the 8 consumer warps (256 threads); the one
// every warp passes before the producer branches off (an nvvm.barrier with
// no thread count) stays.
// CHECK-LABEL: llvm.func @specialized
// CHECK-NEXT: nvvm.barrier{{$}}
// CHECK-NEXT: %[[ID:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[THREADS:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK-NEXT: nvvm.barrier id = %[[ID]] number_of_threads = %[[THREADS]]
// CHECK-NOT: nvvm.barrier0
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.producer_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  llvm.func @specialized() {
    nvvm.barrier
    nvvm.barrier0
    llvm.return
  }
}

// -----

// Without producer warps the CTA barriers stay the CTA's.
// CHECK-LABEL: llvm.func @plain
// CHECK-NEXT: nvvm.barrier0
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  llvm.func @plain() {
    nvvm.barrier0
    llvm.return
  }
}
