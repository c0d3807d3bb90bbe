//===- HalfMoves.cpp - 16-bit float vectors moved as integers -------------===//
//
// See HalfMoves.h. Runs on optimized LLVM IR right before code generation:
// no later InstCombine folds the bitcasts back into floating-point moves.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/HalfMoves.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"

using namespace llvm;

namespace {

/// The i16 vector type of the same shape as `type`, if `type` is a vector of
/// bfloat or half; null otherwise.
VectorType *integerTwin(Type *type) {
  auto *vector = dyn_cast<VectorType>(type);
  if (!vector || !vector->getElementType()->is16bitFPTy())
    return nullptr;
  return VectorType::get(Type::getInt16Ty(type->getContext()),
                         vector->getElementCount());
}

/// `value` as its i16 twin: the integers it was cast from, if it is one of
/// this file's casts back, so that chains of moves stay in integers.
Value *asIntegers(IRBuilder<> &builder, Value *value) {
  VectorType *twin = integerTwin(value->getType());
  if (auto *cast = dyn_cast<BitCastInst>(value))
    if (cast->getSrcTy() == twin)
      return cast->getOperand(0);
  return builder.CreateBitCast(value, twin);
}

/// Whether `type` is bfloat or a vector of bfloat.
bool isBFloat(Type *type) { return type->getScalarType()->isBFloatTy(); }

/// `type` (bfloat, or a vector of it) with `element` for elements.
Type *withElement(Type *type, Type *element) {
  if (auto *vector = dyn_cast<VectorType>(type))
    return VectorType::get(element, vector->getElementCount());
  return element;
}

/// `value`, bfloat or a vector of it, extended to float with integer
/// instructions: exact, the bfloat's bits are the float's upper half.
Value *bfloatToFloat(IRBuilder<> &builder, Value *value) {
  Type *type = value->getType();
  Value *integers = isa<VectorType>(type)
                        ? asIntegers(builder, value)
                        : builder.CreateBitCast(value, builder.getInt16Ty());
  Value *bits = builder.CreateShl(
      builder.CreateZExt(integers, withElement(type, builder.getInt32Ty())), 16);
  return builder.CreateBitCast(bits, withElement(type, builder.getFloatTy()));
}

/// `value` (float, or a vector of floats) rounded to bfloat with integer
/// instructions: to nearest, ties to even, a NaN kept a quiet NaN (as
/// roundToBFloat16Bits in JIT.cpp and PyTorch do). Returns the i16 bits.
Value *floatToBFloatBits(IRBuilder<> &builder, Value *value) {
  Type *bitsType = withElement(value->getType(), builder.getInt32Ty());
  auto constant = [&](uint32_t number) {
    return ConstantInt::get(bitsType, number);
  };
  Value *bits = builder.CreateBitCast(value, bitsType);
  Value *upper = builder.CreateLShr(bits, constant(16));
  Value *isNaN = builder.CreateICmpUGT(builder.CreateAnd(bits, constant(0x7fffffff)),
                                       constant(0x7f800000));
  Value *quietNaN = builder.CreateOr(upper, constant(0x40));
  Value *bias = builder.CreateAdd(constant(0x7fff), builder.CreateAnd(upper, constant(1)));
  Value *rounded = builder.CreateLShr(builder.CreateAdd(bits, bias), constant(16));
  return builder.CreateTrunc(builder.CreateSelect(isNaN, quietNaN, rounded),
                             withElement(value->getType(), builder.getInt16Ty()));
}

/// Replaces `old` by `value`, of old's type, which takes old's name.
void replaceWith(Instruction *old, Value *value) {
  value->takeName(old);
  old->replaceAllUsesWith(value);
  old->eraseFromParent();
}

/// Replaces `old` by `integers`, bitcast to old's type (the i16 twin of a
/// move's result, or the i16 bits of a rounding to bfloat).
void replaceWithIntegers(IRBuilder<> &builder, Instruction *old, Value *integers) {
  replaceWith(old, builder.CreateBitCast(integers, old->getType()));
}

bool rewrite(Instruction *inst) {
  IRBuilder<> builder(inst);
  if (auto *shuffle = dyn_cast<ShuffleVectorInst>(inst)) {
    if (!integerTwin(shuffle->getOperand(0)->getType()))
      return false;
    Value *result = builder.CreateShuffleVector(
        asIntegers(builder, shuffle->getOperand(0)),
        asIntegers(builder, shuffle->getOperand(1)), shuffle->getShuffleMask());
    replaceWithIntegers(builder, inst, result);
    return true;
  }
  if (auto *load = dyn_cast<LoadInst>(inst)) {
    VectorType *twin = integerTwin(load->getType());
    if (!twin || load->isAtomic())
      return false;
    LoadInst *integers = builder.CreateAlignedLoad(
        twin, load->getPointerOperand(), load->getAlign(), load->isVolatile());
    integers->copyMetadata(*load);
    replaceWithIntegers(builder, inst, integers);
    return true;
  }
  if (auto *store = dyn_cast<StoreInst>(inst)) {
    if (!integerTwin(store->getValueOperand()->getType()) || store->isAtomic())
      return false;
    StoreInst *integers = builder.CreateAlignedStore(
        asIntegers(builder, store->getValueOperand()), store->getPointerOperand(),
        store->getAlign(), store->isVolatile());
    integers->copyMetadata(*store);
    store->eraseFromParent();
    return true;
  }
  if (auto *select = dyn_cast<SelectInst>(inst)) {
    if (!integerTwin(select->getType()))
      return false;
    Value *result = builder.CreateSelect(select->getCondition(),
                                         asIntegers(builder, select->getTrueValue()),
                                         asIntegers(builder, select->getFalseValue()));
    replaceWithIntegers(builder, inst, result);
    return true;
  }
  // Conversions from bfloat: exact to float, then as from float.
  if (isa<FPExtInst>(inst) || isa<FPToSIInst>(inst) || isa<FPToUIInst>(inst)) {
    auto *conversion = cast<CastInst>(inst);
    if (!isBFloat(conversion->getSrcTy()))
      return false;
    Value *widened = bfloatToFloat(builder, conversion->getOperand(0));
    replaceWith(inst, widened->getType() == conversion->getDestTy()
                          ? widened
                          : builder.CreateCast(conversion->getOpcode(), widened,
                                               conversion->getDestTy()));
    return true;
  }
  // Conversions to bfloat: to float first (from double or an integer, as
  // PyTorch narrows), then rounded with integer instructions.
  if (isa<FPTruncInst>(inst) || isa<SIToFPInst>(inst) || isa<UIToFPInst>(inst)) {
    auto *conversion = cast<CastInst>(inst);
    if (!isBFloat(conversion->getDestTy()))
      return false;
    Type *floats = withElement(conversion->getDestTy(), builder.getFloatTy());
    Value *source = conversion->getOperand(0);
    Value *narrowed = source->getType() == floats
                          ? source
                          : builder.CreateCast(conversion->getOpcode(), source, floats);
    replaceWithIntegers(builder, inst, floatToBFloatBits(builder, narrowed));
    return true;
  }
  // Comparisons of bfloat: of the exact float extensions.
  if (auto *compare = dyn_cast<FCmpInst>(inst)) {
    if (!isBFloat(compare->getOperand(0)->getType()))
      return false;
    Value *result = builder.CreateFCmp(compare->getPredicate(),
                                       bfloatToFloat(builder, compare->getOperand(0)),
                                       bfloatToFloat(builder, compare->getOperand(1)));
    if (auto *resultInst = dyn_cast<Instruction>(result))
      resultInst->copyIRFlags(compare);
    replaceWith(inst, result);
    return true;
  }
  auto *call = dyn_cast<IntrinsicInst>(inst);
  if (!call)
    return false;
  switch (call->getIntrinsicID()) {
  case Intrinsic::masked_load:
  case Intrinsic::masked_gather: {
    // (pointer or pointers, mask, passthru); the alignment is a parameter
    // attribute.
    VectorType *twin = integerTwin(call->getType());
    if (!twin)
      return false;
    Value *pointers = call->getArgOperand(0), *mask = call->getArgOperand(1);
    Align align = call->getParamAlign(0).valueOrOne();
    Value *passThru = asIntegers(builder, call->getArgOperand(2));
    Value *result =
        call->getIntrinsicID() == Intrinsic::masked_load
            ? builder.CreateMaskedLoad(twin, pointers, align, mask, passThru)
            : builder.CreateMaskedGather(twin, pointers, align, mask, passThru);
    replaceWithIntegers(builder, inst, result);
    return true;
  }
  case Intrinsic::masked_store:
  case Intrinsic::masked_scatter: {
    // (value, pointer or pointers, mask)
    if (!integerTwin(call->getArgOperand(0)->getType()))
      return false;
    Value *value = asIntegers(builder, call->getArgOperand(0));
    Value *pointers = call->getArgOperand(1), *mask = call->getArgOperand(2);
    Align align = call->getParamAlign(1).valueOrOne();
    if (call->getIntrinsicID() == Intrinsic::masked_store)
      builder.CreateMaskedStore(value, pointers, align, mask);
    else
      builder.CreateMaskedScatter(value, pointers, align, mask);
    call->eraseFromParent();
    return true;
  }
  case Intrinsic::maxnum:
  case Intrinsic::minnum:
  case Intrinsic::maximum:
  case Intrinsic::minimum:
  case Intrinsic::maximumnum:
  case Intrinsic::minimumnum: {
    // Of the exact float extensions; the result is one of the operands (or
    // a NaN), so rounding it back to bfloat is exact.
    if (!isBFloat(call->getType()))
      return false;
    Value *result = builder.CreateBinaryIntrinsic(call->getIntrinsicID(),
                                                  bfloatToFloat(builder, call->getArgOperand(0)),
                                                  bfloatToFloat(builder, call->getArgOperand(1)));
    replaceWithIntegers(builder, inst, floatToBFloatBits(builder, result));
    return true;
  }
  default:
    return false;
  }
}

} // namespace

unsigned mlir::kiln::cpu::moveHalfVectorsAsIntegers(Module &module) {
  unsigned rewritten = 0;
  for (Function &function : module) {
    SmallVector<Instruction *> candidates;
    for (Instruction &inst : instructions(function))
      candidates.push_back(&inst);
    for (Instruction *inst : candidates)
      rewritten += rewrite(inst);
    // The casts back to floats that only fed rewritten moves are now unused.
    SmallVector<Instruction *> unused;
    for (Instruction &inst : instructions(function))
      if (isa<BitCastInst>(inst) && inst.use_empty())
        unused.push_back(&inst);
    for (Instruction *inst : unused)
      inst->eraseFromParent();
  }
  return rewritten;
}
