// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @range_empty() {
  // expected-error @+1 {{expected end > start, got start = 4 and end = 4}}
  %r = kiln.make_range {start = 4 : i32, end = 4 : i32} : tensor<1xi32>
  return
}

// -----

func.func @range_not_power_of_two() {
  // expected-error @+1 {{expected a power-of-two length, got 12}}
  %r = kiln.make_range {start = 0 : i32, end = 12 : i32} : tensor<12xi32>
  return
}

// -----

func.func @range_wrong_shape() {
  // expected-error @+1 {{expected result of shape [16], got [32]}}
  %r = kiln.make_range {start = 0 : i32, end = 16 : i32} : tensor<32xi32>
  return
}

// -----

func.func @program_id_axis() {
  // expected-error @+1 {{attribute 'axis' failed to satisfy constraint}}
  %p = kiln.program_id {axis = 3 : i32} : i32
  return
}

// -----

func.func @broadcast_rank(%a: tensor<64xf32>) {
  // expected-error @+1 {{expected source and result of the same rank, got [64] and [2, 64]}}
  %b = kiln.broadcast %a : tensor<64xf32> -> tensor<2x64xf32>
  return
}

// -----

func.func @broadcast_shape(%a: tensor<2x64xf32>) {
  // expected-error @+1 {{cannot broadcast shape [2, 64] to [4, 64]}}
  %b = kiln.broadcast %a : tensor<2x64xf32> -> tensor<4x64xf32>
  return
}

// -----

func.func @expand_dims_axis(%a: tensor<64xf32>) {
  // expected-error @+1 {{expected axis in [0, 1], got 2}}
  %b = kiln.expand_dims %a {axis = 2 : i32} : tensor<64xf32> -> tensor<64x1xf32>
  return
}

// -----

func.func @expand_dims_shape(%a: tensor<64xf32>) {
  // expected-error @+1 {{expected result of shape [1, 64], got [64, 1]}}
  %b = kiln.expand_dims %a {axis = 0 : i32} : tensor<64xf32> -> tensor<64x1xf32>
  return
}

// -----

func.func @load_result(%p: tensor<16x!kiln.ptr<f32>>) {
  // expected-error @+1 {{expected result type 'tensor<16xf32>', got 'tensor<16xf16>'}}
  %x = kiln.load %p : tensor<16x!kiln.ptr<f32>> -> tensor<16xf16>
  return
}

// -----

func.func @load_pointers(%p: !kiln.ptr<!kiln.ptr<f32>>) {
  // expected-error @+1 {{cannot access memory that holds pointers ('!kiln.ptr<!kiln.ptr<f32>>'): loads and stores of pointer values are not supported}}
  %x = kiln.load %p : !kiln.ptr<!kiln.ptr<f32>> -> !kiln.ptr<f32>
  return
}

// -----

func.func @store_pointers(%p: !kiln.ptr<!kiln.ptr<f32>>, %q: !kiln.ptr<f32>) {
  // expected-error @+1 {{cannot access memory that holds pointers ('!kiln.ptr<!kiln.ptr<f32>>'): loads and stores of pointer values are not supported}}
  kiln.store %p, %q : !kiln.ptr<!kiln.ptr<f32>>, !kiln.ptr<f32>
  return
}

// -----

func.func @load_mask_shape(%p: tensor<16x!kiln.ptr<f32>>, %m: tensor<32xi1>) {
  // expected-error @+1 {{failed to verify that mask has the shape of ptr}}
  %x = "kiln.load"(%p, %m) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (tensor<16x!kiln.ptr<f32>>, tensor<32xi1>) -> tensor<16xf32>
  return
}

// -----

func.func @store_value(%p: tensor<16x!kiln.ptr<f32>>, %v: tensor<16xf16>) {
  // expected-error @+1 {{expected value of type 'tensor<16xf32>', got 'tensor<16xf16>'}}
  kiln.store %p, %v : tensor<16x!kiln.ptr<f32>>, tensor<16xf16>
  return
}

// -----

// Cache modifiers follow the access on every target: a load takes ca, cg or
// cv, a store wb, cg, cs or wt.
func.func @load_store_cache_modifier(%p: tensor<16x!kiln.ptr<f32>>) {
  // expected-error @+1 {{cache modifier 'wb' is not valid for a load; expected one of 'ca', 'cg', 'cv'}}
  %x = kiln.load %p {cache = #kiln.cache<wb>} : tensor<16x!kiln.ptr<f32>> -> tensor<16xf32>
  return
}

// -----

func.func @load_cache_modifier_cs(%p: tensor<16x!kiln.ptr<f32>>) {
  // expected-error @+1 {{cache modifier 'cs' is not valid for a load}}
  %x = kiln.load %p {cache = #kiln.cache<cs>} : tensor<16x!kiln.ptr<f32>> -> tensor<16xf32>
  return
}

// -----

func.func @store_cache_modifier(%p: tensor<16x!kiln.ptr<f32>>, %v: tensor<16xf32>) {
  // expected-error @+1 {{cache modifier 'cv' is not valid for a store; expected one of 'wb', 'cg', 'cs', 'wt'}}
  kiln.store %p, %v {cache = #kiln.cache<cv>} : tensor<16x!kiln.ptr<f32>>, tensor<16xf32>
  return
}

// -----

func.func @load_other_type(%p: tensor<16x!kiln.ptr<f32>>, %o: tensor<16xf16>) {
  // expected-error @+1 {{failed to verify that other has the type of result}}
  %x = "kiln.load"(%p, %o) <{operandSegmentSizes = array<i32: 1, 0, 1, 0, 0>}> : (tensor<16x!kiln.ptr<f32>>, tensor<16xf16>) -> tensor<16xf32>
  return
}

// -----

func.func @atomic_rmw_value_type(%p: !kiln.ptr<i32>, %v: i64) {
  // expected-error @+1 {{expected value of type 'i32', got 'i64'}}
  %a = kiln.atomic_rmw add, %p, %v : !kiln.ptr<i32>, i64
  return
}

// -----

func.func @atomic_rmw_int_kind(%p: !kiln.ptr<f32>, %v: f32) {
  // expected-error @+1 {{expected i32 or i64 elements for 'add', got 'f32'}}
  %a = kiln.atomic_rmw add, %p, %v : !kiln.ptr<f32>, f32
  return
}

// -----

func.func @atomic_rmw_narrow_int(%p: !kiln.ptr<i16>, %v: i16) {
  // expected-error @+1 {{expected i32 or i64 elements for 'and', got 'i16'}}
  %a = kiln.atomic_rmw and, %p, %v : !kiln.ptr<i16>, i16
  return
}

// -----

func.func @atomic_rmw_fadd(%p: !kiln.ptr<i32>, %v: i32) {
  // expected-error @+1 {{expected f16, bf16, f32 or f64 elements for 'fadd', got 'i32'}}
  %a = kiln.atomic_rmw fadd, %p, %v : !kiln.ptr<i32>, i32
  return
}

// -----

func.func @atomic_rmw_fmax(%p: !kiln.ptr<f16>, %v: f16) {
  // expected-error @+1 {{expected f32 or f64 elements for 'fmax', got 'f16'}}
  %a = kiln.atomic_rmw fmax, %p, %v : !kiln.ptr<f16>, f16
  return
}

// -----

func.func @atomic_rmw_xchg(%p: !kiln.ptr<f16>, %v: f16) {
  // expected-error @+1 {{expected a 32- or 64-bit integer or float elements for 'xchg', got 'f16'}}
  %a = kiln.atomic_rmw xchg, %p, %v : !kiln.ptr<f16>, f16
  return
}

// -----

func.func @atomic_cas_value_type(%p: !kiln.ptr<i32>, %v: i64) {
  // expected-error @+1 {{expected value of type 'i32', got 'i64'}}
  %a = kiln.atomic_cas %p, %v, %v : !kiln.ptr<i32>, i64
  return
}

// -----

func.func @atomic_cas_width(%p: !kiln.ptr<i8>, %v: i8) {
  // expected-error @+1 {{expected 16-, 32- or 64-bit elements, got 8-bit ones}}
  %a = kiln.atomic_cas %p, %v, %v : !kiln.ptr<i8>, i8
  return
}

// -----

func.func @axis_hint_rank(%n: i32) {
  // expected-error @+1 {{expected 1 divisibility values, one per dimension, got 2}}
  %a = kiln.axis_hint %n {divisibility = array<i64: 16, 16>} : i32
  return
}

// -----

func.func @axis_hint_power_of_two(%n: i32) {
  // expected-error @+1 {{expected contiguity values that are powers of two, got 12}}
  %a = kiln.axis_hint %n {contiguity = array<i64: 12>} : i32
  return
}

// -----

func.func @print_flags(%n: i32) {
  // expected-error @+1 {{expected one isSigned flag per operand, got 2 for 1 operands}}
  kiln.print %n {prefix = "n: ", hex = false, isSigned = array<i32: 1, 1>} : i32
  return
}

// -----

func.func @extern_elementwise_empty_symbol(%x: f32) {
  // expected-error @+1 {{expected a function name, got an empty symbol}}
  %r = kiln.extern_elementwise ""(%x) : (f32) -> f32
  return
}

// -----

func.func @extern_elementwise_no_operands() {
  // expected-error @+1 {{expected 1 or more operands, but found 0}}
  %r = kiln.extern_elementwise "__nv_expf"() : () -> f32
  return
}

// -----

func.func @extern_elementwise_pointer_operand(%p: !kiln.ptr<f32>) {
  // expected-error @+1 {{expected operands of number type, got '!kiln.ptr<f32>'}}
  %r = kiln.extern_elementwise "__nv_expf"(%p) : (!kiln.ptr<f32>) -> f32
  return
}

// -----

func.func @extern_elementwise_pointer_result(%x: f32) {
  // expected-error @+1 {{expected a result of number type, got '!kiln.ptr<f32>'}}
  %r = kiln.extern_elementwise "__nv_expf"(%x) : (f32) -> !kiln.ptr<f32>
  return
}

// -----

func.func @extern_elementwise_shapes(%x: tensor<64xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %r = kiln.extern_elementwise "__nv_expf"(%x) : (tensor<64xf32>) -> tensor<128xf32>
  return
}

// -----

func.func @reduce_no_operands() {
  // expected-error @+1 {{expected at least one operand}}
  kiln.reduce() {axis = 0 : i32} : () -> () {
  ^bb0:
    "kiln.reduce.return"() : () -> ()
  }
  return
}

// -----

func.func @reduce_shapes(%x: tensor<16xf32>, %y: tensor<32xi32>) {
  // expected-error @+1 {{expected operands of one shape, got [16] and [32]}}
  %r:2 = kiln.reduce(%x, %y) {axis = 0 : i32} : (tensor<16xf32>, tensor<32xi32>) -> (f32, i32) {
  ^bb0(%a: f32, %b: i32, %c: f32, %d: i32):
    kiln.reduce.return %a, %b : f32, i32
  }
  return
}

// -----

func.func @reduce_axis(%x: tensor<16xf32>) {
  // expected-error @+1 {{expected axis in [0, 1), got 1}}
  %r = kiln.reduce(%x) {axis = 1 : i32} : (tensor<16xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    kiln.reduce.return %a : f32
  }
  return
}

// -----

func.func @reduce_result_count(%x: tensor<16xf32>) {
  // expected-error @+1 {{expected 1 results, got 2}}
  %r:2 = kiln.reduce(%x) {axis = 0 : i32} : (tensor<16xf32>) -> (f32, f32) {
  ^bb0(%a: f32, %b: f32):
    kiln.reduce.return %a : f32
  }
  return
}

// -----

func.func @reduce_result_shape(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{expected a result of shape [16] and element type 'f32', got 'tensor<8xf32>'}}
  %r = kiln.reduce(%x) {axis = 1 : i32} : (tensor<16x8xf32>) -> tensor<8xf32> {
  ^bb0(%a: f32, %b: f32):
    kiln.reduce.return %a : f32
  }
  return
}

// -----

func.func @reduce_arity(%x: tensor<16xf32>) {
  // expected-error @+1 {{expected a combine function of 2 arguments, got 3}}
  %r = kiln.reduce(%x) {axis = 0 : i32} : (tensor<16xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32, %c: f32):
    kiln.reduce.return %a : f32
  }
  return
}

// -----

func.func @reduce_argument_type(%x: tensor<16xf32>) {
  // expected-error @+1 {{expected combine argument 1 of type 'f32', got 'i32'}}
  %r = kiln.reduce(%x) {axis = 0 : i32} : (tensor<16xf32>) -> f32 {
  ^bb0(%a: f32, %b: i32):
    kiln.reduce.return %a : f32
  }
  return
}

// -----

func.func @reduce_return_count(%x: tensor<16xf32>) {
  // expected-error @+1 {{expected the combine function to return 1 values, got 2}}
  %r = kiln.reduce(%x) {axis = 0 : i32} : (tensor<16xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    kiln.reduce.return %a, %b : f32, f32
  }
  return
}

// -----

func.func @reduce_return_type(%x: tensor<16xf32>) {
  // expected-error @+1 {{expected combine result 0 of type 'f32', got 'i32'}}
  %r = kiln.reduce(%x) {axis = 0 : i32} : (tensor<16xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.constant 0 : i32
    kiln.reduce.return %c : i32
  }
  return
}

// -----

func.func @scan_result_type(%x: tensor<16xf32>) {
  // expected-error @+1 {{expected each result of its operand's type, got 'tensor<16xi32>' for 'tensor<16xf32>'}}
  %r = kiln.scan(%x) {axis = 0 : i32, reverse = false} : (tensor<16xf32>) -> tensor<16xi32> {
  ^bb0(%a: f32, %b: f32):
    kiln.scan.return %a : f32
  }
  return
}

// -----

func.func @reshape_count(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{expected a result of 32 elements, got 16 (shape [16])}}
  %r = kiln.reshape %a : tensor<4x8xf32> -> tensor<16xf32>
  return
}

// -----

func.func @trans_not_a_permutation(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{expected order to be a permutation of the 2 source dimensions, got [0, 0]}}
  %t = kiln.trans %a {order = array<i32: 0, 0>} : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @trans_shape(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{expected result of shape [8, 4], got [4, 8]}}
  %t = kiln.trans %a {order = array<i32: 1, 0>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @join_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected result of shape [4, 2], got [2, 4]}}
  %j = kiln.join %a, %a : tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @split_last_dim(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{expected a source of rank two or more whose last dimension is 2, got shape [4, 4]}}
  %l, %r = kiln.split %a : tensor<4x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @split_shape(%a: tensor<4x2xf32>) {
  // expected-error @+1 {{expected results of shape [4], got [8] and [8]}}
  %l, %r = kiln.split %a : tensor<4x2xf32> -> tensor<8xf32>
  return
}

// -----

func.func @cat_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected result of shape [8], got [4]}}
  %c = kiln.cat %a, %a : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @flip_axis(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected axis in [0, 1), got 1}}
  %f = kiln.flip %a {axis = 1 : i32} : tensor<4xf32>
  return
}

// -----

func.func @gather_rank(%a: tensor<4x4xf32>, %i: tensor<16xi32>) {
  // expected-error @+1 {{expected an index of rank 2, got [16]}}
  %g = kiln.gather %a[%i] {axis = 0 : i32} : (tensor<4x4xf32>, tensor<16xi32>) -> tensor<16xf32>
  return
}

// -----

func.func @gather_axis(%a: tensor<4x4xf32>, %i: tensor<4x4xi32>) {
  // expected-error @+1 {{expected axis in [0, 2), got 2}}
  %g = kiln.gather %a[%i] {axis = 2 : i32} : (tensor<4x4xf32>, tensor<4x4xi32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @gather_dims(%a: tensor<4x4xf32>, %i: tensor<2x8xi32>) {
  // expected-error @+1 {{expected index and source of one size along every dimension but 0, got [2, 8] and [4, 4]}}
  %g = kiln.gather %a[%i] {axis = 0 : i32} : (tensor<4x4xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @gather_result(%a: tensor<4x4xf32>, %i: tensor<2x4xi32>) {
  // expected-error @+1 {{expected a result of the index's shape and the source's element type, got 'tensor<2x4xi32>'}}
  %g = kiln.gather %a[%i] {axis = 0 : i32} : (tensor<4x4xf32>, tensor<2x4xi32>) -> tensor<2x4xi32>
  return
}

// -----

func.func @histogram_rank(%x: tensor<4x4xi32>) {
  // expected-error @+1 {{expected a 1-D source, got [4, 4]}}
  %h = kiln.histogram %x : tensor<4x4xi32> -> tensor<16xi32>
  return
}

// -----

func.func @histogram_mask(%x: tensor<16xi32>, %m: tensor<8xi1>) {
  // expected-error @+1 {{expected a mask of the source's shape [16], got [8]}}
  %h = kiln.histogram %x, %m : tensor<16xi32>, tensor<8xi1> -> tensor<16xi32>
  return
}

// -----

func.func @histogram_bins(%x: tensor<16xi32>) {
  // expected-error @+1 {{expected a 1-D result of a power-of-two length, got [12]}}
  %h = kiln.histogram %x : tensor<16xi32> -> tensor<12xi32>
  return
}

// -----

func.func @dot_rank(%a: tensor<16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{expected 2-D or 3-D operands, got rank 1}}
  %d = kiln.dot %a, %a, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16xf32> * tensor<16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @dot_ranks_differ(%a: tensor<16x16xf32>, %b: tensor<2x16x16xf32>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{expected operands and accumulator of one rank, got 'tensor<16x16xf32>', 'tensor<2x16x16xf32>' and 'tensor<16x16xf32>'}}
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x16xf32> * tensor<2x16x16xf32> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_inner(%a: tensor<16x32xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{expected the inner dimensions to agree, got 'tensor<16x32xf32>' * 'tensor<16x16xf32>'}}
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x32xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_acc_shape(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<16x32xf32>) {
  // expected-error @+1 {{expected an accumulator of shape matching 'tensor<16x32xf32>' * 'tensor<32x64xf32>', got 'tensor<16x32xf32>'}}
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x32xf32> * tensor<32x64xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @dot_fp8_one_format(%a: tensor<16x16xi8>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{expected an 8-bit float format for both operands or neither}}
  %d = kiln.dot %a, %a, %c {aFloat8 = #kiln.float8<e4m3>, inputPrecision = #kiln.precision<ieee>} : tensor<16x16xi8> * tensor<16x16xi8> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_fp8_not_bytes(%a: tensor<16x16xf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{expected i8 bytes for 8-bit float operands, got 'f16'}}
  %d = kiln.dot %a, %a, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e4m3>, inputPrecision = #kiln.precision<ieee>} : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_fp8_acc(%a: tensor<16x16xi8>, %c: tensor<16x16xi32>) {
  // expected-error @+1 {{cannot multiply 8-bit float operands into a 'i32' accumulator}}
  %d = kiln.dot %a, %a, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e5m2>, inputPrecision = #kiln.precision<ieee>} : tensor<16x16xi8> * tensor<16x16xi8> -> tensor<16x16xi32>
  return
}

// -----

func.func @dot_batch(%a: tensor<2x16x16xf32>, %b: tensor<4x16x16xf32>, %c: tensor<2x16x16xf32>) {
  // expected-error @+1 {{expected an accumulator of shape matching 'tensor<2x16x16xf32>' * 'tensor<4x16x16xf32>', got 'tensor<2x16x16xf32>'}}
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<2x16x16xf32> * tensor<4x16x16xf32> -> tensor<2x16x16xf32>
  return
}

// -----

func.func @dot_element_types(%a: tensor<16x16xf16>, %b: tensor<16x16xbf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{expected operands of one element type, got 'f16' and 'bf16'}}
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x16xf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_accumulator_type(%a: tensor<16x16xbf16>, %c: tensor<16x16xbf16>) {
  // expected-error @+1 {{cannot multiply 'bf16' operands into a 'bf16' accumulator}}
  %d = kiln.dot %a, %a, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xbf16>
  return
}

// -----

func.func @dot_f64_accumulator_type(%a: tensor<16x16xf64>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{cannot multiply 'f64' operands into a 'f32' accumulator}}
  %d = kiln.dot %a, %a, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x16xf64> * tensor<16x16xf64> -> tensor<16x16xf32>
  return
}

// -----

func.func @dot_precision(%a: tensor<16x16xf16>, %c: tensor<16x16xf32>) {
  // expected-error @+1 {{input precision tf32 only applies to f32 operands}}
  %d = kiln.dot %a, %a, %c {inputPrecision = #kiln.precision<tf32>} : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
  return
}

// -----

func.func @load_tensor_map_scalar(%p: !kiln.ptr<f32>, %map: !kiln.ptr<i8, 0>, %i: i32) {
  // expected-error @+1 {{a load through a tensor map must load a block}}
  %x = kiln.load %p tensor_map %map[%i] : !kiln.ptr<f32> -> f32
  return
}

// -----

func.func @load_tensor_map_coordinates(%p: tensor<16x8x!kiln.ptr<f32>>, %map: !kiln.ptr<i8, 0>, %i: i32) {
  // expected-error @+1 {{expected 2 tensor map coordinates (one per dimension), got 1}}
  %x = kiln.load %p tensor_map %map[%i] : tensor<16x8x!kiln.ptr<f32>> -> tensor<16x8xf32>
  return
}

// -----

func.func @load_coordinates_without_map(%p: tensor<16x!kiln.ptr<f32>>, %i: i32) {
  // expected-error @+1 {{tensor map coordinates without a tensor map}}
  %x = "kiln.load"(%p, %i) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 1>}> : (tensor<16x!kiln.ptr<f32>>, i32) -> tensor<16xf32>
  return
}

// -----

func.func @load_tensor_map_type(%p: tensor<16x!kiln.ptr<f32>>, %map: !kiln.ptr<i8>, %i: i32) {
  // expected-error @+1 {{operand #1 must be a tensor map (!kiln.ptr<i8, 0>)}}
  %x = "kiln.load"(%p, %map, %i) <{operandSegmentSizes = array<i32: 1, 0, 0, 1, 1>}> : (tensor<16x!kiln.ptr<f32>>, !kiln.ptr<i8>, i32) -> tensor<16xf32>
  return
}

// -----

func.func @inline_asm_pack(%x: i32) {
  // expected-error @+1 {{expected a positive packed_element, got 0}}
  %r = kiln.elementwise_inline_asm "mov.b32 $0, $1;" "=r,r"(%x) {packed_element = 0 : i32, pure = true} : (i32) -> i32
  return
}

// -----

func.func @inline_asm_no_result(%x: i32) {
  // expected-error @+1 {{expected at least one result}}
  kiln.elementwise_inline_asm "nop;" "r"(%x) {packed_element = 1 : i32, pure = false} : (i32) -> ()
  return
}

// -----

func.func @inline_asm_shapes(%x: tensor<64xi32>) {
  // expected-error @+1 {{expected operands and results of one shape, got 'tensor<128xi32>' and 'tensor<64xi32>'}}
  %r = kiln.elementwise_inline_asm "mov.b32 $0, $1;" "=r,r"(%x) {packed_element = 1 : i32, pure = true} : (tensor<64xi32>) -> tensor<128xi32>
  return
}

// -----

func.func @inline_asm_bool(%x: tensor<64xi1>) {
  // expected-error @+1 {{expected operands of a type other than i1, got 'tensor<64xi1>'}}
  %r = kiln.elementwise_inline_asm "mov.b32 $0, $1;" "=r,r"(%x) {packed_element = 1 : i32, pure = true} : (tensor<64xi1>) -> tensor<64xi32>
  return
}

// -----

func.func @inline_asm_pointer_result(%x: i64) {
  // expected-error @+1 {{expected results of number type, got '!kiln.ptr<f32>'}}
  %r = kiln.elementwise_inline_asm "mov.b64 $0, $1;" "=l,l"(%x) {packed_element = 1 : i32, pure = true} : (i64) -> !kiln.ptr<f32>
  return
}

// -----

func.func @inline_asm_narrow_pack(%x: tensor<64xi8>) {
  // expected-error @+1 {{expected a power-of-two packed_element for 8-bit elements, got 3}}
  %r = kiln.elementwise_inline_asm "mov.b32 $0, $1;" "=r,r"(%x) {packed_element = 3 : i32, pure = true} : (tensor<64xi8>) -> tensor<64xi8>
  return
}

// -----

func.func @ptr_to_int_narrow(%p: !kiln.ptr<f32>) {
  // expected-error @+1 {{result #0 must be 64-bit signless integer or ranked tensor of 64-bit signless integer values, but got 'i32'}}
  %a = kiln.ptr_to_int %p : !kiln.ptr<f32> -> i32
  return
}

// -----

func.func @ptr_to_int_shape(%p: tensor<64x!kiln.ptr<f32>>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %a = kiln.ptr_to_int %p : tensor<64x!kiln.ptr<f32>> -> tensor<32xi64>
  return
}

// -----

func.func @int_to_ptr_narrow(%a: tensor<64xi32>) {
  // expected-error @+1 {{operand #0 must be 64-bit signless integer or ranked tensor of 64-bit signless integer values, but got 'tensor<64xi32>'}}
  %p = kiln.int_to_ptr %a : tensor<64xi32> -> tensor<64x!kiln.ptr<i32>>
  return
}

// -----

func.func @int_to_ptr_block_from_scalar(%a: i64) {
  // expected-error @+1 {{if a result is non-scalar, then at least one operand must be non-scalar}}
  %p = kiln.int_to_ptr %a : i64 -> tensor<64x!kiln.ptr<i32>>
  return
}

// -----

func.func @ptr_bitcast_address_space(%p: !kiln.ptr<f32>) {
  // expected-error @+1 {{expected pointers of one address space, got '!kiln.ptr<f32>' and '!kiln.ptr<i8, 0>'}}
  %q = kiln.ptr_bitcast %p : !kiln.ptr<f32> -> !kiln.ptr<i8, 0>
  return
}

// -----

func.func @ptr_bitcast_from_integer(%a: i64) {
  // expected-error @+1 {{operand #0 must be Pointer to an element in device memory or ranked tensor of Pointer to an element in device memory values, but got 'i64'}}
  %q = kiln.ptr_bitcast %a : i64 -> !kiln.ptr<i8>
  return
}

// -----

func.func @make_tensor_map_address_space(%p: !kiln.ptr<f16, 3>, %n: i64) {
  // expected-error @+1 {{expected a pointer to global memory, got '!kiln.ptr<f16, 3>'}}
  %m = kiln.make_tensor_map %p[%n] strides [] : !kiln.ptr<f16, 3>
  return
}

// -----

func.func @make_tensor_map_pointer_pointee(%p: !kiln.ptr<!kiln.ptr<f16>>, %n: i64) {
  // expected-error @+1 {{cannot access memory that holds pointers}}
  %m = kiln.make_tensor_map %p[%n] strides [] : !kiln.ptr<!kiln.ptr<f16>>
  return
}

// -----

func.func @make_tensor_map_rank(%p: !kiln.ptr<f16>, %n: i64) {
  // expected-error @+1 {{expected 1 to 5 dimensions, got 6}}
  %m = kiln.make_tensor_map %p[%n, %n, %n, %n, %n, %n] strides [%n, %n, %n, %n, %n] : !kiln.ptr<f16>
  return
}

// -----

func.func @make_tensor_map_strides(%p: !kiln.ptr<f16>, %n: i64) {
  // expected-error @+1 {{expected 1 strides (one per dimension but the contiguous last), got 2}}
  %m = kiln.make_tensor_map %p[%n, %n] strides [%n, %n] : !kiln.ptr<f16>
  return
}
