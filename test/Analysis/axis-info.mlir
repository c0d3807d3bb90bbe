// The axis-info analysis on small kernels: test-kiln-axis-info remarks each
// integer and pointer value's contiguity, divisibility and constancy per
// dimension (arguments first, then results in order); the checks name the
// line each value is defined on.
// RUN: kiln-opt %s -split-input-file -test-kiln-axis-info -o /dev/null 2>&1 | FileCheck %s

// A program's slice of a vector: contiguous runs of the whole block, aligned
// to the block; the pointers inherit the arguments' 16-byte alignment.
// CHECK: :[[@LINE+3]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [16], constancy = [1]
// CHECK: :[[@LINE+2]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [16], constancy = [1]
// CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1], constancy = [1]
func.func @vector_add(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %n: i32 {kiln.divisibility = 16 : i32}, %m: i32) attributes {kiln.kernel} {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1], constancy = [1]
  %pid = kiln.program_id {axis = 0 : i32} : i32
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1024], constancy = [1], constant = 1024
  %c1024 = arith.constant 1024 : i32
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1024], constancy = [1]
  %base = arith.muli %pid, %c1024 : i32
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1024], divisibility = [1073741824], constancy = [1]
  %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1024], constancy = [1024]
  %bs = kiln.splat %base : i32 -> tensor<1024xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1024], divisibility = [1024], constancy = [1]
  %offs = arith.addi %bs, %r : tensor<1024xi32>
  // A bound divisible by 16 keeps the mask uniform over runs of 16; an
  // unknown one over single elements.
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [16], constancy = [1024]
  %ns = kiln.splat %n : i32 -> tensor<1024xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1], constancy = [16]
  %mask = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1], constancy = [1024]
  %ms = kiln.splat %m : i32 -> tensor<1024xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1], constancy = [1]
  %mask2 = arith.cmpi slt, %offs, %ms : tensor<1024xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [16], constancy = [1024]
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>>
  // Divisibility of pointers is in bytes: 1024 f32 elements are 4096 bytes,
  // capped by the base's 16.
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1024], divisibility = [16], constancy = [1]
  %p = kiln.addptr %xs, %offs : tensor<1024x!kiln.ptr<f32>>, tensor<1024xi32>
  %v = kiln.load %p, %mask : tensor<1024x!kiln.ptr<f32>> -> tensor<1024xf32>
  kiln.store %p, %v, %mask2 : tensor<1024x!kiln.ptr<f32>>, tensor<1024xf32>
  return
}

// -----

// A 2-D tile of a row-major matrix: contiguous along the rows' elements,
// each row's run starting at a multiple of the (specialized) stride.
func.func @tile(%stride: i32 {kiln.divisibility = 16 : i32}) -> tensor<16x32xi32> attributes {kiln.kernel} {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [16], divisibility = [1073741824], constancy = [1]
  %rows = kiln.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [32], divisibility = [1073741824], constancy = [1]
  %cols = kiln.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  // The new dimension has one element: no run, no alignment beyond the
  // row's own.
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [16, 1], divisibility = [1073741824, 1], constancy = [1, 1]
  %r2 = kiln.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1, 1], divisibility = [16, 16], constancy = [16, 1]
  %s = kiln.splat %stride : i32 -> tensor<16x1xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1, 1], divisibility = [16, 16], constancy = [1, 1]
  %rs = arith.muli %r2, %s : tensor<16x1xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1, 1], divisibility = [16, 16], constancy = [1, 32]
  %rb = kiln.broadcast %rs : tensor<16x1xi32> -> tensor<16x32xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1, 32], divisibility = [1, 1073741824], constancy = [1, 1]
  %c2 = kiln.expand_dims %cols {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1, 32], divisibility = [1, 1073741824], constancy = [16, 1]
  %cb = kiln.broadcast %c2 : tensor<1x32xi32> -> tensor<16x32xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1, 32], divisibility = [1, 16], constancy = [1, 1]
  %offs = arith.addi %rb, %cb : tensor<16x32xi32>
  return %offs : tensor<16x32xi32>
}

// -----

// What the user states: a hint on a value, an assumption about an argument
// (which holds for the argument everywhere, so the remainder is a multiple
// of 8 too: it is 0).
// CHECK: :[[@LINE+2]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1], constancy = [1]
// CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [8], constancy = [1]
func.func @hints(%off: i32, %n: i32) -> (i32, tensor<64xi32>) attributes {kiln.kernel} {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [16], constancy = [1]
  %h = kiln.axis_hint %off {divisibility = array<i64: 16>} : i32
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [8], constancy = [1], constant = 8
  %c8 = arith.constant 8 : i32
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1073741824], constancy = [1], constant = 0
  %c0 = arith.constant 0 : i32
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [8], constancy = [1]
  %rem = arith.remsi %n, %c8 : i32
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1], constancy = [1]
  %ok = arith.cmpi eq, %rem, %c0 : i32
  kiln.assume %ok : i1
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [8], constancy = [64]
  %ns = kiln.splat %n : i32 -> tensor<64xi32>
  return %h, %ns : i32, tensor<64xi32>
}

// -----

// A loop-carried offset stepped by a multiple keeps the runs of its initial
// value and the divisibility of both, and so does the loop's result (the
// initial value or a yielded one: the next loop of a split loop starts
// from it).
func.func @loop(%k: i32) -> tensor<128xi32> attributes {kiln.kernel} {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [128], divisibility = [1073741824], constancy = [1]
  %r = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: {{.*}}constant = 64
  %c64 = arith.constant dense<64> : tensor<128xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: {{.*}}constant = 0
  %lb = arith.constant 0 : i32
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: {{.*}}constant = 1
  %step = arith.constant 1 : i32
  // The result, the induction variable, the carried offset.
  // CHECK: :[[@LINE+3]]:10: remark: contiguity = [128], divisibility = [64], constancy = [1]
  // CHECK: :[[@LINE+2]]:18: remark: contiguity = [1], divisibility = [1], constancy = [1]
  // CHECK: :[[@LINE+1]]:54: remark: contiguity = [128], divisibility = [64], constancy = [1]
  %out = scf.for %i = %lb to %k step %step iter_args(%acc = %r) -> (tensor<128xi32>) : i32 {
    // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [128], divisibility = [64], constancy = [1]
    %next = arith.addi %acc, %c64 : tensor<128xi32>
    scf.yield %next : tensor<128xi32>
  }
  return %out : tensor<128xi32>
}

// -----

// Pointer casts keep the addresses: their divisibility (in bytes) and
// constancy carry over. Runs carry over only where consecutive elements are
// as many bytes apart in the result as in the source: f32 pointers and i32
// pointers, or integers and i8 pointers. Elsewhere each element is a run of
// its own, divisible by what divides every element of the former run.
func.func @pointer_casts(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [64], divisibility = [1073741824], constancy = [1]
  %r = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [16], constancy = [64]
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<64x!kiln.ptr<f32>>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [64], divisibility = [16], constancy = [1]
  %p = kiln.addptr %xs, %r : tensor<64x!kiln.ptr<f32>>, tensor<64xi32>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [64], divisibility = [16], constancy = [1]
  %i = kiln.ptr_bitcast %p : tensor<64x!kiln.ptr<f32>> -> tensor<64x!kiln.ptr<i32>>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [4], constancy = [1]
  %b = kiln.ptr_bitcast %p : tensor<64x!kiln.ptr<f32>> -> tensor<64x!kiln.ptr<i8>>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [4], constancy = [1]
  %d = kiln.ptr_bitcast %p : tensor<64x!kiln.ptr<f32>> -> tensor<64x!kiln.ptr<f64>>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [4], constancy = [1]
  %a = kiln.ptr_to_int %p : tensor<64x!kiln.ptr<f32>> -> tensor<64xi64>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [16], constancy = [64]
  %xa = kiln.ptr_to_int %xs : tensor<64x!kiln.ptr<f32>> -> tensor<64xi64>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [64], divisibility = [1073741824], constancy = [1]
  %r64 = arith.extsi %r : tensor<64xi32> to tensor<64xi64>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [64], divisibility = [16], constancy = [1]
  %bytes = arith.addi %xa, %r64 : tensor<64xi64>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [64], divisibility = [16], constancy = [1]
  %q = kiln.int_to_ptr %bytes : tensor<64xi64> -> tensor<64x!kiln.ptr<i8>>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [1], divisibility = [1], constancy = [1]
  %q4 = kiln.int_to_ptr %bytes : tensor<64xi64> -> tensor<64x!kiln.ptr<i32>>
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: remark: contiguity = [64], divisibility = [16], constancy = [1]
  %qa = kiln.ptr_to_int %q : tensor<64x!kiln.ptr<i8>> -> tensor<64xi64>
  return
}
