//===- BooleanVectorsTest.cpp - The NVIDIA translation's mask splitting ---===//
//
// SplitBooleanVectorsPass on small functions: nothing of type vector of i1
// is left behind, a lane extracted from a compare becomes a scalar compare,
// and the lanes of compares, logic, shuffles (two sources, poison lanes),
// selects and extensions keep their values (checked on constants, which
// the pass folds as it builds each lane).
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVIDIA/BooleanVectors.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"

#include <gtest/gtest.h>

#include <memory>

using namespace llvm;

namespace {

/// Parses `text`, runs the pass (then InstCombine when `combine`) on its
/// function `name`, and returns the module.
std::unique_ptr<Module> runOn(LLVMContext &context, StringRef text,
                              StringRef name, bool combine) {
  SMDiagnostic error;
  std::unique_ptr<Module> module = parseAssemblyString(text, error, context);
  if (!module) {
    ADD_FAILURE() << error.getMessage().str();
    return nullptr;
  }
  LoopAnalysisManager loops;
  FunctionAnalysisManager functions;
  CGSCCAnalysisManager cgscc;
  ModuleAnalysisManager modules;
  PassBuilder builder;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  FunctionPassManager passes;
  passes.addPass(mlir::kiln::nvidia::SplitBooleanVectorsPass());
  if (combine)
    passes.addPass(InstCombinePass());
  passes.run(*module->getFunction(name), functions);
  return module;
}

/// What `function` (one block) returns.
Value *returnedValue(Function &function) {
  return cast<ReturnInst>(function.getEntryBlock().getTerminator())
      ->getReturnValue();
}

/// Whether any instruction of `function` produces a vector of i1.
bool hasBooleanVectors(Function &function) {
  for (Instruction &inst : instructions(function))
    if (auto *vector = dyn_cast<FixedVectorType>(inst.getType()))
      if (vector->getElementType()->isIntegerTy(1))
        return true;
  return false;
}

TEST(SplitBooleanVectors, ExtractedLaneBecomesScalarCompare) {
  LLVMContext context;
  std::unique_ptr<Module> module = runOn(context, R"(
    define i1 @lane2(<4 x i32> %a, i32 %n) {
      %head = insertelement <4 x i32> poison, i32 %n, i64 0
      %splat = shufflevector <4 x i32> %head, <4 x i32> poison, <4 x i32> zeroinitializer
      %mask = icmp slt <4 x i32> %a, %splat
      %lane = extractelement <4 x i1> %mask, i64 2
      ret i1 %lane
    }
  )",
                                         "lane2", /*combine=*/true);
  ASSERT_TRUE(module);
  Function &function = *module->getFunction("lane2");
  EXPECT_FALSE(hasBooleanVectors(function));
  auto *compare = dyn_cast<ICmpInst>(returnedValue(function));
  ASSERT_NE(compare, nullptr);
  EXPECT_EQ(compare->getPredicate(), ICmpInst::ICMP_SLT);
  EXPECT_EQ(compare->getOperand(1), function.getArg(1));
  auto *lane = dyn_cast<ExtractElementInst>(compare->getOperand(0));
  ASSERT_NE(lane, nullptr);
  EXPECT_EQ(lane->getVectorOperand(), function.getArg(0));
  EXPECT_TRUE(cast<ConstantInt>(lane->getIndexOperand())->equalsInt(2));
}

TEST(SplitBooleanVectors, LanesKeepTheirValues) {
  // mask  = 1 0 1 0
  // pick  = 1 1 0 0
  // flip  = mask ^ pick = 0 1 1 0
  // mixed = mask[3] flip[0] flip[1] mask[0] flip[2] flip[3] mask[1] poison
  //       = 0 0 1 1 1 0 0 poison
  // select(mixed, 10.., 20..) + zext(mixed) + sext(mixed) (lane 7 unchecked)
  LLVMContext context;
  std::unique_ptr<Module> module = runOn(context, R"(
    define <8 x i32> @lanes() {
      %mask = icmp slt <4 x i32> <i32 0, i32 5, i32 2, i32 7>, <i32 3, i32 3, i32 3, i32 3>
      %pick = icmp eq <4 x i32> <i32 1, i32 1, i32 0, i32 0>, <i32 1, i32 1, i32 1, i32 1>
      %flip = xor <4 x i1> %mask, %pick
      %mixed = shufflevector <4 x i1> %flip, <4 x i1> %mask, <8 x i32> <i32 7, i32 0, i32 1, i32 4, i32 2, i32 3, i32 5, i32 poison>
      %chosen = select <8 x i1> %mixed, <8 x i32> <i32 10, i32 11, i32 12, i32 13, i32 14, i32 15, i32 16, i32 17>, <8 x i32> <i32 20, i32 21, i32 22, i32 23, i32 24, i32 25, i32 26, i32 27>
      %one = zext <8 x i1> %mixed to <8 x i32>
      %minus = sext <8 x i1> %mixed to <8 x i32>
      %sum = add <8 x i32> %chosen, %one
      %all = add <8 x i32> %sum, %minus
      ret <8 x i32> %all
    }
  )",
                                         "lanes", /*combine=*/false);
  ASSERT_TRUE(module);
  Function &function = *module->getFunction("lanes");
  EXPECT_FALSE(hasBooleanVectors(function));
  // Only the two adds are left, their operands the constants the split
  // folded.
  auto *all = cast<BinaryOperator>(returnedValue(function));
  auto *sum = cast<BinaryOperator>(all->getOperand(0));
  auto *chosen = dyn_cast<Constant>(sum->getOperand(0));
  auto *one = dyn_cast<Constant>(sum->getOperand(1));
  auto *minus = dyn_cast<Constant>(all->getOperand(1));
  ASSERT_TRUE(chosen && one && minus);
  const int expectedChosen[] = {20, 21, 12, 13, 14, 25, 26};
  const int expectedOne[] = {0, 0, 1, 1, 1, 0, 0};
  for (unsigned lane = 0; lane < 7; ++lane) {
    SCOPED_TRACE(lane);
    EXPECT_EQ(
        cast<ConstantInt>(chosen->getAggregateElement(lane))->getSExtValue(),
        expectedChosen[lane]);
    EXPECT_EQ(cast<ConstantInt>(one->getAggregateElement(lane))->getSExtValue(),
              expectedOne[lane]);
    EXPECT_EQ(
        cast<ConstantInt>(minus->getAggregateElement(lane))->getSExtValue(),
        -expectedOne[lane]);
  }
}

TEST(SplitBooleanVectors, SelectOfMasksOnAScalarCondition) {
  // select i1 %c, <4 x i1> %m, <4 x i1> %k: a mask chosen as a whole.
  LLVMContext context;
  std::unique_ptr<Module> module = runOn(context, R"(
    define i1 @choose(<4 x i32> %a, <4 x i32> %b, i1 %c) {
      %m = icmp slt <4 x i32> %a, %b
      %k = icmp eq <4 x i32> %a, %b
      %mask = select i1 %c, <4 x i1> %m, <4 x i1> %k
      %lane = extractelement <4 x i1> %mask, i64 3
      ret i1 %lane
    }
  )", "choose", /*combine=*/true);
  ASSERT_TRUE(module);
  Function &function = *module->getFunction("choose");
  EXPECT_FALSE(hasBooleanVectors(function));
  auto *select = dyn_cast<SelectInst>(returnedValue(function));
  ASSERT_NE(select, nullptr);
  EXPECT_EQ(select->getCondition(), function.getArg(2));
  EXPECT_TRUE(isa<ICmpInst>(select->getTrueValue()));
  EXPECT_TRUE(isa<ICmpInst>(select->getFalseValue()));
}

TEST(SplitBooleanVectors, LeavesOtherUsesAlone) {
  // A bitcast of a mask to an integer is not split; the compare feeding it
  // is, and its lanes are gathered back into the vector the bitcast takes.
  LLVMContext context;
  std::unique_ptr<Module> module = runOn(context, R"(
    define i4 @bits(<4 x i32> %a, <4 x i32> %b) {
      %mask = icmp ult <4 x i32> %a, %b
      %bits = bitcast <4 x i1> %mask to i4
      ret i4 %bits
    }
  )",
                                         "bits", /*combine=*/false);
  ASSERT_TRUE(module);
  Function &function = *module->getFunction("bits");
  unsigned compares = 0;
  for (Instruction &inst : instructions(function))
    compares += isa<ICmpInst>(inst) && !inst.getType()->isVectorTy();
  EXPECT_EQ(compares, 4u);
  EXPECT_TRUE(isa<BitCastInst>(returnedValue(function)));
}

} // namespace
