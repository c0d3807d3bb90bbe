// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm | FileCheck %s

#b = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// ptr_to_int and int_to_ptr are LLVM's ptrtoint and inttoptr on the vector
// of a thread's elements; ptr_bitcast is no instruction. The axis info
// decides the accesses: through pointers made from integers each element is
// its own load (the integers' runs are of bytes, not of i32 elements),
// through an f32 -> i32 pointer cast the thread's four consecutive elements
// are one vector store, and the addresses as i64 are stored two at a time.
// CHECK-LABEL: llvm.func @pointer_casts
// CHECK: %[[P:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (vector<4x!llvm.ptr<1>>, vector<4xi32>) -> vector<4x!llvm.ptr<1>>, f32
// CHECK: %[[A:.*]] = llvm.ptrtoint %[[P]] : vector<4x!llvm.ptr<1>> to vector<4xi64>
// CHECK: llvm.inttoptr %[[A]] : vector<4xi64> to vector<4x!llvm.ptr<1>>
// CHECK-COUNT-4: ld.global.b32
// CHECK-NOT: ld.global
// CHECK: llvm.extractelement %[[P]]
// CHECK: st.global.v4.b32
// CHECK: st.global.v2.b64
// CHECK: st.global.v2.b64
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
  func.func public @pointer_casts(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %out: !kiln.ptr<i64> {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32, #b>
    %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<512x!kiln.ptr<f32>, #b>
    %p = kiln.addptr %xs, %r : tensor<512x!kiln.ptr<f32>, #b>, tensor<512xi32, #b>
    %a = kiln.ptr_to_int %p : tensor<512x!kiln.ptr<f32>, #b> -> tensor<512xi64, #b>
    %q = kiln.int_to_ptr %a : tensor<512xi64, #b> -> tensor<512x!kiln.ptr<i32>, #b>
    %v = kiln.load %q : tensor<512x!kiln.ptr<i32>, #b> -> tensor<512xi32, #b>
    %f = kiln.ptr_bitcast %p : tensor<512x!kiln.ptr<f32>, #b> -> tensor<512x!kiln.ptr<i32>, #b>
    kiln.store %f, %v : tensor<512x!kiln.ptr<i32>, #b>, tensor<512xi32, #b>
    %os = kiln.splat %out : !kiln.ptr<i64> -> tensor<512x!kiln.ptr<i64>, #b>
    %op = kiln.addptr %os, %r : tensor<512x!kiln.ptr<i64>, #b>, tensor<512xi32, #b>
    kiln.store %op, %a : tensor<512x!kiln.ptr<i64>, #b>, tensor<512xi64, #b>
    return
  }
}

// -----

// Scalars: a pointer's address, and a pointer to it as another type.
// CHECK-LABEL: llvm.func @scalar_casts
// CHECK: %[[A:.*]] = llvm.ptrtoint %arg0 : !llvm.ptr<1> to i64
// CHECK: %[[Q:.*]] = llvm.inttoptr %[[A]] : i64 to !llvm.ptr<1>
// CHECK: llvm.return %[[Q]] : !llvm.ptr<1>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
  func.func @scalar_casts(%p: !kiln.ptr<f32>) -> !kiln.ptr<i8> {
    %a = kiln.ptr_to_int %p : !kiln.ptr<f32> -> i64
    %q = kiln.int_to_ptr %a : i64 -> !kiln.ptr<f16>
    %b = kiln.ptr_bitcast %q : !kiln.ptr<f16> -> !kiln.ptr<i8>
    return %b : !kiln.ptr<i8>
  }
}
