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

/// Replaces `old` by `integers`, bitcast to old's type (the i16 twin of a
/// move's result, or the i32 bits of an extension's floats).
void replaceWithIntegers(IRBuilder<> &builder, Instruction *old, Value *integers) {
  Value *back = builder.CreateBitCast(integers, old->getType());
  back->takeName(old);
  old->replaceAllUsesWith(back);
  old->eraseFromParent();
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
  if (auto *extend = dyn_cast<FPExtInst>(inst)) {
    // bfloat to float is exact: the bfloat's bits are the float's upper half.
    Type *source = extend->getSrcTy();
    if (!integerTwin(source) || !source->getScalarType()->isBFloatTy() ||
        !extend->getDestTy()->getScalarType()->isFloatTy())
      return false;
    auto *wide = VectorType::get(builder.getInt32Ty(),
                                 cast<VectorType>(source)->getElementCount());
    Value *bits = builder.CreateShl(
        builder.CreateZExt(asIntegers(builder, extend->getOperand(0)), wide), 16);
    replaceWithIntegers(builder, inst, bits);
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
