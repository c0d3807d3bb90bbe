//===- AxisInfoTest.cpp - Tests of the axis-info analysis ------------------===//
//
// Checks contiguity, divisibility and constancy on small kernels parsed from
// text: each rule the lowering relies on for vectorized, predicated access.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/AxisInfo.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::kiln;

namespace {

class AxisInfoTest : public ::testing::Test {
protected:
  AxisInfoTest() {
    context.loadDialect<KilnDialect, arith::ArithDialect, func::FuncDialect>();
  }

  /// Parses `body` as the body of a function with the given arguments and
  /// returns the analysis of the value named `%name` by a `// result` op:
  /// the operand of the function's return.
  AxisInfo analyze(StringRef arguments, StringRef body) {
    std::string text = ("func.func @k(" + arguments + ") -> tensor<1024xi32> {\n" +
                        body + "\n}")
                           .str();
    SmallVector<Value> values = returnedValues(text);
    if (values.empty())
      return AxisInfo::unknown(1);
    return analysis->getAxisInfo(values[0]);
  }

  /// Parses a module of one function and returns the operands of its
  /// return, with `analysis` set up on the module.
  SmallVector<Value> returnedValues(StringRef text) {
    module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module) << text.str();
    if (!module)
      return {};
    auto function = cast<func::FuncOp>(module->getBody()->front());
    auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
    analysis = std::make_unique<AxisInfoAnalysis>(*module);
    return SmallVector<Value>(ret.getOperands());
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<AxisInfoAnalysis> analysis;
};

TEST_F(AxisInfoTest, RangeIsContiguousAndAligned) {
  AxisInfo info = analyze("", R"(
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    return %r : tensor<1024xi32>)");
  EXPECT_EQ(info.contiguity[0], 1024);
  EXPECT_EQ(info.divisibility[0], AxisInfo::kMaxDivisibility);
  EXPECT_EQ(info.constancy[0], 1);
}

TEST_F(AxisInfoTest, OffsetByProgramKeepsContiguity) {
  // pid * 1024 + arange: contiguous, divisible by 1024 (from the constant).
  AxisInfo info = analyze("", R"(
    %pid = kiln.program_id {axis = 0 : i32} : i32
    %c = arith.constant 1024 : i32
    %base = arith.muli %pid, %c : i32
    %b = kiln.splat %base : i32 -> tensor<1024xi32>
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %o = arith.addi %b, %r : tensor<1024xi32>
    return %o : tensor<1024xi32>)");
  EXPECT_EQ(info.contiguity[0], 1024);
  EXPECT_EQ(info.divisibility[0], 1024);
}

TEST_F(AxisInfoTest, RemainderBySplatOfMultipleKeepsAlignedRuns) {
  // (pid * 1024 + arange) % n with n a multiple of 16: runs of 16.
  AxisInfo info = analyze("%n: i32 {kiln.divisibility = 16 : i32}", R"(
    %pid = kiln.program_id {axis = 0 : i32} : i32
    %c = arith.constant 1024 : i32
    %base = arith.muli %pid, %c : i32
    %b = kiln.splat %base : i32 -> tensor<1024xi32>
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %o = arith.addi %b, %r : tensor<1024xi32>
    %ns = kiln.splat %n : i32 -> tensor<1024xi32>
    %m = arith.remsi %o, %ns : tensor<1024xi32>
    return %m : tensor<1024xi32>)");
  EXPECT_EQ(info.contiguity[0], 16);
  EXPECT_EQ(info.divisibility[0], 16);
}

TEST_F(AxisInfoTest, RemainderWrapsWhereTheRunMeetsAMultiple) {
  // (arange + 128) % 1024 is 128..1023 then 0..127: runs of 128, not 1024.
  AxisInfo info = analyze("", R"(
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %s = arith.constant dense<128> : tensor<1024xi32>
    %o = arith.addi %r, %s : tensor<1024xi32>
    %c = arith.constant dense<1024> : tensor<1024xi32>
    %m = arith.remsi %o, %c : tensor<1024xi32>
    return %m : tensor<1024xi32>)");
  EXPECT_EQ(info.contiguity[0], 128);
  EXPECT_EQ(info.divisibility[0], 128);
}

TEST_F(AxisInfoTest, SignedRemainderKeepsNoRunsOfBlocksThatMayBeNegative) {
  // arange - 512 runs from -512: its signed remainder by 256 goes 0, -255,
  // -254, ... and has no runs; the unsigned one wraps at multiples of 256.
  // So does arange - n, n unknown. Scalars are taken to be non-negative, as
  // the indices pid * n are.
  SmallVector<Value> values = returnedValues(R"(
    func.func @k(%n: i32 {kiln.divisibility = 1024 : i32}) -> (tensor<1024xi32>, tensor<1024xi32>, tensor<1024xi32>, tensor<1024xi32>) {
      %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
      %s = arith.constant dense<512> : tensor<1024xi32>
      %c = arith.constant dense<256> : tensor<1024xi32>
      %below = arith.subi %r, %s : tensor<1024xi32>
      %signed = arith.remsi %below, %c : tensor<1024xi32>
      %unsigned = arith.remui %below, %c : tensor<1024xi32>
      %ns = kiln.splat %n : i32 -> tensor<1024xi32>
      %shifted = arith.subi %r, %ns : tensor<1024xi32>
      %shiftedRem = arith.remsi %shifted, %c : tensor<1024xi32>
      %pid = kiln.program_id {axis = 0 : i32} : i32
      %base = arith.muli %pid, %n : i32
      %b = kiln.splat %base : i32 -> tensor<1024xi32>
      %above = arith.addi %b, %r : tensor<1024xi32>
      %aboveRem = arith.remsi %above, %c : tensor<1024xi32>
      return %signed, %unsigned, %shiftedRem, %aboveRem : tensor<1024xi32>, tensor<1024xi32>, tensor<1024xi32>, tensor<1024xi32>
    })");
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(analysis->getAxisInfo(values[0]).contiguity[0], 1);
  EXPECT_EQ(analysis->getAxisInfo(values[0]).divisibility[0], 256);
  EXPECT_EQ(analysis->getAxisInfo(values[1]).contiguity[0], 256);
  EXPECT_EQ(analysis->getAxisInfo(values[2]).contiguity[0], 1);
  EXPECT_EQ(analysis->getAxisInfo(values[3]).contiguity[0], 256);
}

TEST_F(AxisInfoTest, RemainderByUnknownSplatIsUnknown) {
  AxisInfo info = analyze("%n: i32", R"(
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %ns = kiln.splat %n : i32 -> tensor<1024xi32>
    %m = arith.remsi %r, %ns : tensor<1024xi32>
    return %m : tensor<1024xi32>)");
  EXPECT_EQ(info.contiguity[0], 1);
}

TEST_F(AxisInfoTest, LoopCarriedValueJoinsInitialAndYielded) {
  // A block advanced by 64 each iteration stays contiguous and divisible by
  // 64; one advanced by a unit step loses the divisibility.
  context.loadDialect<scf::SCFDialect>();
  SmallVector<Value> values = returnedValues(R"(
    func.func @k(%n: i32) -> (tensor<1024xi32>, tensor<1024xi32>) {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
      %s64 = arith.constant dense<64> : tensor<1024xi32>
      %s1 = arith.constant dense<1> : tensor<1024xi32>
      %a, %b = scf.for %i = %c0 to %n step %c1 iter_args(%x = %r, %y = %r) -> (tensor<1024xi32>, tensor<1024xi32>) : i32 {
        %x2 = arith.addi %x, %s64 : tensor<1024xi32>
        %y2 = arith.addi %y, %s1 : tensor<1024xi32>
        scf.yield %x2, %y2 : tensor<1024xi32>, tensor<1024xi32>
      }
      return %a, %b : tensor<1024xi32>, tensor<1024xi32>
    })");
  ASSERT_EQ(values.size(), 2u);
  auto loop = values[0].getDefiningOp<scf::ForOp>();
  ASSERT_TRUE(loop);
  AxisInfo stepped = analysis->getAxisInfo(loop.getRegionIterArgs()[0]);
  EXPECT_EQ(stepped.contiguity[0], 1024);
  EXPECT_EQ(stepped.divisibility[0], 64);
  AxisInfo unit = analysis->getAxisInfo(loop.getRegionIterArgs()[1]);
  EXPECT_EQ(unit.contiguity[0], 1024);
  EXPECT_EQ(unit.divisibility[0], 1);
}

TEST_F(AxisInfoTest, UnalignedStartLimitsDivisibility) {
  AxisInfo info = analyze("", R"(
    %r = kiln.make_range {start = 4 : i32, end = 1028 : i32} : tensor<1024xi32>
    return %r : tensor<1024xi32>)");
  EXPECT_EQ(info.contiguity[0], 1024);
  EXPECT_EQ(info.divisibility[0], 4);
}

TEST_F(AxisInfoTest, SpecializedArgumentDivisibility) {
  AxisInfo info = analyze("%n: i32 {kiln.divisibility = 16 : i32}", R"(
    %b = kiln.splat %n : i32 -> tensor<1024xi32>
    return %b : tensor<1024xi32>)");
  EXPECT_EQ(info.divisibility[0], 16);
  EXPECT_EQ(info.constancy[0], 1024);
  EXPECT_EQ(info.contiguity[0], 1);
}

TEST_F(AxisInfoTest, MulByNonConstantLosesContiguity) {
  AxisInfo info = analyze("%s: i32", R"(
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %b = kiln.splat %s : i32 -> tensor<1024xi32>
    %o = arith.muli %r, %b : tensor<1024xi32>
    return %o : tensor<1024xi32>)");
  EXPECT_EQ(info.contiguity[0], 1);
}

TEST_F(AxisInfoTest, PointerVectorWidth) {
  std::string text = R"(
    func.func @k(%p: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %q: !kiln.ptr<f32>, %h: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}) -> (tensor<1024x!kiln.ptr<f32>>, tensor<1024x!kiln.ptr<f32>>, tensor<1024x!kiln.ptr<f16>>) {
      %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
      %ps = kiln.splat %p : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>>
      %pp = kiln.addptr %ps, %r : tensor<1024x!kiln.ptr<f32>>, tensor<1024xi32>
      %qs = kiln.splat %q : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>>
      %qp = kiln.addptr %qs, %r : tensor<1024x!kiln.ptr<f32>>, tensor<1024xi32>
      %hs = kiln.splat %h : !kiln.ptr<f16> -> tensor<1024x!kiln.ptr<f16>>
      %hp = kiln.addptr %hs, %r : tensor<1024x!kiln.ptr<f16>>, tensor<1024xi32>
      return %pp, %qp, %hp : tensor<1024x!kiln.ptr<f32>>, tensor<1024x!kiln.ptr<f32>>, tensor<1024x!kiln.ptr<f16>>
    })";
  SmallVector<Value> values = returnedValues(text);
  ASSERT_FALSE(values.empty());
  // 16-byte aligned f32: four per access; unproven alignment: one; f16: eight.
  EXPECT_EQ(analysis->getPtrVectorWidth(values[0], 0), 4);
  EXPECT_EQ(analysis->getPtrVectorWidth(values[1], 0), 1);
  EXPECT_EQ(analysis->getPtrVectorWidth(values[2], 0), 8);
}

TEST_F(AxisInfoTest, PointerCastVectorWidth) {
  // A cast between pointers of one element size keeps the wide accesses;
  // to another size, or through integers to a wider element, each element
  // is its own access (its runs are no longer consecutive elements), still
  // aligned as the address was.
  std::string text = R"(
    func.func @k(%p: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}) -> (tensor<1024x!kiln.ptr<i32>>, tensor<1024x!kiln.ptr<f16>>, tensor<1024x!kiln.ptr<f32>>, tensor<1024x!kiln.ptr<i8>>) {
      %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
      %ps = kiln.splat %p : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>>
      %pp = kiln.addptr %ps, %r : tensor<1024x!kiln.ptr<f32>>, tensor<1024xi32>
      %i = kiln.ptr_bitcast %pp : tensor<1024x!kiln.ptr<f32>> -> tensor<1024x!kiln.ptr<i32>>
      %h = kiln.ptr_bitcast %pp : tensor<1024x!kiln.ptr<f32>> -> tensor<1024x!kiln.ptr<f16>>
      %a = kiln.ptr_to_int %pp : tensor<1024x!kiln.ptr<f32>> -> tensor<1024xi64>
      %back = kiln.int_to_ptr %a : tensor<1024xi64> -> tensor<1024x!kiln.ptr<f32>>
      %base = kiln.ptr_to_int %ps : tensor<1024x!kiln.ptr<f32>> -> tensor<1024xi64>
      %r64 = arith.extsi %r : tensor<1024xi32> to tensor<1024xi64>
      %bytes = arith.addi %base, %r64 : tensor<1024xi64>
      %b = kiln.int_to_ptr %bytes : tensor<1024xi64> -> tensor<1024x!kiln.ptr<i8>>
      return %i, %h, %back, %b : tensor<1024x!kiln.ptr<i32>>, tensor<1024x!kiln.ptr<f16>>, tensor<1024x!kiln.ptr<f32>>, tensor<1024x!kiln.ptr<i8>>
    })";
  SmallVector<Value> values = returnedValues(text);
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(analysis->getPtrVectorWidth(values[0], 0), 4);
  EXPECT_EQ(analysis->getPtrVectorWidth(values[1], 0), 1);
  EXPECT_EQ(analysis->getAxisInfo(values[1]).divisibility[0], 4);
  EXPECT_EQ(analysis->getPtrVectorWidth(values[2], 0), 1);
  // Consecutive addresses as i8 pointers: sixteen bytes per access.
  EXPECT_EQ(analysis->getPtrVectorWidth(values[3], 0), 16);
}

TEST_F(AxisInfoTest, MaskConstancyFollowsBoundDivisibility) {
  // offs < n is uniform over aligned runs as long as n's divisibility.
  std::string text = R"(
    func.func @k(%n: i32 {kiln.divisibility = 16 : i32}, %m: i32) -> (tensor<1024xi1>, tensor<1024xi1>) {
      %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
      %ns = kiln.splat %n : i32 -> tensor<1024xi32>
      %ms = kiln.splat %m : i32 -> tensor<1024xi32>
      %a = arith.cmpi slt, %r, %ns : tensor<1024xi32>
      %b = arith.cmpi slt, %r, %ms : tensor<1024xi32>
      return %a, %b : tensor<1024xi1>, tensor<1024xi1>
    })";
  SmallVector<Value> values = returnedValues(text);
  ASSERT_FALSE(values.empty());
  EXPECT_EQ(analysis->getMaskConstancy(values[0], 0), 16);
  EXPECT_EQ(analysis->getMaskConstancy(values[1], 0), 1);
}

TEST_F(AxisInfoTest, ExpandedRangeIsNotAlignedAlongTheNewDimension) {
  // rows[:, None] * 128 + cols[None, :]: each row starts at a multiple of
  // 128, but rows[:, None] alone holds consecutive values in every row.
  std::string text = R"(
    func.func @k() -> (tensor<16x1xi32>, tensor<16x32xi32>) {
      %r = kiln.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
      %c = kiln.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
      %rows = kiln.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %s = arith.constant dense<128> : tensor<16x1xi32>
      %scaled = arith.muli %rows, %s : tensor<16x1xi32>
      %rb = kiln.broadcast %scaled : tensor<16x1xi32> -> tensor<16x32xi32>
      %cols = kiln.expand_dims %c {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %cb = kiln.broadcast %cols : tensor<1x32xi32> -> tensor<16x32xi32>
      %offs = arith.addi %rb, %cb : tensor<16x32xi32>
      return %rows, %offs : tensor<16x1xi32>, tensor<16x32xi32>
    })";
  SmallVector<Value> values = returnedValues(text);
  ASSERT_FALSE(values.empty());
  const AxisInfo &rows = analysis->getAxisInfo(values[0]);
  EXPECT_EQ(rows.divisibility[1], 1);
  EXPECT_EQ(rows.contiguity[0], 16);
  const AxisInfo &offs = analysis->getAxisInfo(values[1]);
  EXPECT_EQ(offs.contiguity[1], 32);
  EXPECT_EQ(offs.divisibility[1], 128); // each row's run starts at i * 128
  EXPECT_EQ(offs.contiguity[0], 1);
}

TEST_F(AxisInfoTest, DivisibilityHintOnAScalar) {
  // An unspecialized stride is only known to be odd or even once hinted;
  // the hint carries through the multiplication and the splat.
  std::string text = R"(
    func.func @k(%s: i32) -> (i32, i32, tensor<1024xi32>) {
      %pid = kiln.program_id {axis = 0 : i32} : i32
      %start = arith.muli %pid, %s : i32
      %hinted = kiln.axis_hint %start {divisibility = array<i64: 16>} : i32
      %b = kiln.splat %hinted : i32 -> tensor<1024xi32>
      %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
      %o = arith.addi %b, %r : tensor<1024xi32>
      return %start, %hinted, %o : i32, i32, tensor<1024xi32>
    })";
  SmallVector<Value> values = returnedValues(text);
  ASSERT_FALSE(values.empty());
  EXPECT_EQ(analysis->getAxisInfo(values[0]).divisibility[0], 1);
  EXPECT_EQ(analysis->getAxisInfo(values[1]).divisibility[0], 16);
  EXPECT_EQ(analysis->getAxisInfo(values[2]).divisibility[0], 16);
  EXPECT_EQ(analysis->getAxisInfo(values[2]).contiguity[0], 1024);
}

TEST_F(AxisInfoTest, ContiguityAndConstancyHintsOnABlock) {
  // A gathered index block is unknown until hinted; hints never lower what
  // is proven, and claims beyond the block's length are capped by it.
  std::string text = R"(
    func.func @k(%p: !kiln.ptr<i32>) -> (tensor<64xi32>, tensor<64xi32>, tensor<64xi32>) {
      %r = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
      %ps = kiln.splat %p : !kiln.ptr<i32> -> tensor<64x!kiln.ptr<i32>>
      %pp = kiln.addptr %ps, %r : tensor<64x!kiln.ptr<i32>>, tensor<64xi32>
      %idx = kiln.load %pp : tensor<64x!kiln.ptr<i32>> -> tensor<64xi32>
      %a = kiln.axis_hint %idx {contiguity = array<i64: 8>, divisibility = array<i64: 8>} : tensor<64xi32>
      %b = kiln.axis_hint %idx {constancy = array<i64: 128>} : tensor<64xi32>
      %c = kiln.axis_hint %r {contiguity = array<i64: 4>} : tensor<64xi32>
      return %a, %b, %c : tensor<64xi32>, tensor<64xi32>, tensor<64xi32>
    })";
  SmallVector<Value> values = returnedValues(text);
  ASSERT_FALSE(values.empty());
  const AxisInfo &a = analysis->getAxisInfo(values[0]);
  EXPECT_EQ(a.contiguity[0], 8);
  EXPECT_EQ(a.divisibility[0], 8);
  EXPECT_EQ(a.constancy[0], 1);
  EXPECT_EQ(analysis->getAxisInfo(values[1]).constancy[0], 64);
  EXPECT_EQ(analysis->getAxisInfo(values[2]).contiguity[0], 64);
}

TEST_F(AxisInfoTest, AssumedRemainderGivesDivisibility) {
  // kiln.assume(n % 48 == 0) makes n a multiple of 16; a remainder that is
  // only computed, or compared with something else, claims nothing.
  std::string text = R"(
    func.func @k(%n: i32, %m: i32, %k: i32) -> (i32, i32, i32) {
      %c48 = arith.constant 48 : i32
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %rn = arith.remsi %n, %c48 : i32
      %en = arith.cmpi eq, %rn, %c0 : i32
      kiln.assume %en : i1
      %rm = arith.remsi %m, %c48 : i32
      %em = arith.cmpi eq, %rm, %c1 : i32
      kiln.assume %em : i1
      %rk = arith.remsi %k, %c48 : i32
      %ek = arith.cmpi eq, %rk, %c0 : i32
      return %n, %m, %k : i32, i32, i32
    })";
  SmallVector<Value> values = returnedValues(text);
  ASSERT_FALSE(values.empty());
  EXPECT_EQ(analysis->getAxisInfo(values[0]).divisibility[0], 16);
  EXPECT_EQ(analysis->getAxisInfo(values[1]).divisibility[0], 1);
  EXPECT_EQ(analysis->getAxisInfo(values[2]).divisibility[0], 1);
}

TEST(HighestPowerOf2Divisor, Values) {
  EXPECT_EQ(highestPowerOf2Divisor(48), 16);
  EXPECT_EQ(highestPowerOf2Divisor(-12), 4);
  EXPECT_EQ(highestPowerOf2Divisor(7), 1);
  EXPECT_EQ(highestPowerOf2Divisor(0), AxisInfo::kMaxDivisibility);
}

} // namespace
