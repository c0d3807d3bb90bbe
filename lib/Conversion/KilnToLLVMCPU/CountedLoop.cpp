//===- CountedLoop.cpp - Loops emitted inside CPU lowering patterns -------===//
//
// The loop is a header block that carries the index and the values, tests
// the index and branches to the body or out; the body's end branches back
// with the next values. The block after the loop can use the header's
// arguments, since the header dominates it.
//
//===----------------------------------------------------------------------===//

#include "CountedLoop.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::kiln;

Value mlir::kiln::createI64Constant(OpBuilder &builder, Location loc, int64_t value) {
  return LLVM::ConstantOp::create(builder, loc, builder.getI64Type(),
                                  builder.getI64IntegerAttr(value));
}

SmallVector<Value> mlir::kiln::emitCountedLoop(
    ConversionPatternRewriter &rewriter, Location loc, int64_t count,
    ValueRange inits, function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  Type i64 = rewriter.getI64Type();
  Block *before = rewriter.getInsertionBlock();
  Block *after = rewriter.splitBlock(before, rewriter.getInsertionPoint());
  Region *region = before->getParent();
  SmallVector<Type> types{i64};
  SmallVector<Location> locs{loc};
  for (Value init : inits) {
    types.push_back(init.getType());
    locs.push_back(loc);
  }
  Block *header = rewriter.createBlock(region, after->getIterator(), types, locs);
  Block *bodyBlock = rewriter.createBlock(region, after->getIterator());

  rewriter.setInsertionPointToEnd(before);
  SmallVector<Value> initial{createI64Constant(rewriter, loc, 0)};
  llvm::append_range(initial, inits);
  LLVM::BrOp::create(rewriter, loc, initial, header);

  rewriter.setInsertionPointToEnd(header);
  Value index = header->getArgument(0);
  Value more = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::slt, index,
                                    createI64Constant(rewriter, loc, count));
  LLVM::CondBrOp::create(rewriter, loc, more, bodyBlock, after);

  // The latch goes wherever the body ends, after any loops of its own.
  rewriter.setInsertionPointToEnd(bodyBlock);
  SmallVector<Value> next{LLVM::AddOp::create(rewriter, loc, index,
                                              createI64Constant(rewriter, loc, 1))};
  llvm::append_range(next, body(index, header->getArguments().drop_front()));
  LLVM::BrOp::create(rewriter, loc, next, header);

  rewriter.setInsertionPointToStart(after);
  return SmallVector<Value>(header->getArguments().drop_front());
}
