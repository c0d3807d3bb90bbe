//===- Float8.cpp - 8-bit floats decoded and rounded, fp8 dots decoded -----===//
//
// 8-bit floats are i8 bytes in the kiln IR. The frontend's casts from them
// and the dots that a target cannot feed to 8-bit float tensor cores both
// decode them here, and targets without a conversion instruction round f32
// to them here (kiln.f32_to_float8), with 32-bit integer ops only: they
// vectorize on the CPU, are plain ALU instructions on the GPU, and no
// denormal flushing or fp-contraction can change the result. See
// docs/design/fp8.md.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The exponent bias and the explicit mantissa bits of a format.
struct Float8Layout {
  int bias;
  int mantissaBits;
};

Float8Layout getLayout(Float8Format format) {
  return format == Float8Format::e4m3 ? Float8Layout{7, 3} : Float8Layout{15, 2};
}

/// Builds integer and float ops on values shaped like `like` (a scalar or a
/// block, whose shape and encoding every constant takes).
class ShapedBuilder {
public:
  ShapedBuilder(OpBuilder &builder, Location loc, Type like)
      : builder(builder), loc(loc), like(like) {}

  Type type(Type element) const { return getTypeWithElement(like, element); }

  Value constant(Type element, TypedAttr scalar) const {
    Type t = type(element);
    if (auto shaped = dyn_cast<ShapedType>(t))
      return arith::ConstantOp::create(builder, loc, shaped,
                                       DenseElementsAttr::get(shaped, scalar));
    return arith::ConstantOp::create(builder, loc, t, scalar);
  }
  Value i32(uint32_t v) const {
    return constant(builder.getI32Type(), builder.getI32IntegerAttr(int32_t(v)));
  }
  Value f32(float v) const {
    return constant(builder.getF32Type(), builder.getF32FloatAttr(v));
  }
  Value andi(Value x, uint32_t mask) const { return arith::AndIOp::create(builder, loc, x, i32(mask)); }
  Value ori(Value x, Value y) const { return arith::OrIOp::create(builder, loc, x, y); }
  Value addi(Value x, Value y) const { return arith::AddIOp::create(builder, loc, x, y); }
  Value subi(Value x, Value y) const { return arith::SubIOp::create(builder, loc, x, y); }
  Value minui(Value x, uint32_t v) const { return arith::MinUIOp::create(builder, loc, x, i32(v)); }
  Value maxui(Value x, uint32_t v) const { return arith::MaxUIOp::create(builder, loc, x, i32(v)); }
  Value shli(Value x, Value bits) const { return arith::ShLIOp::create(builder, loc, x, bits); }
  Value shrui(Value x, Value bits) const { return arith::ShRUIOp::create(builder, loc, x, bits); }
  Value shli(Value x, uint32_t bits) const { return arith::ShLIOp::create(builder, loc, x, i32(bits)); }
  Value shrui(Value x, uint32_t bits) const { return arith::ShRUIOp::create(builder, loc, x, i32(bits)); }
  Value compare(arith::CmpIPredicate predicate, Value x, uint32_t v) const {
    return arith::CmpIOp::create(builder, loc, predicate, x, i32(v));
  }
  Value select(Value condition, Value x, Value y) const {
    return arith::SelectOp::create(builder, loc, condition, x, y);
  }

  OpBuilder &builder;
  Location loc;
  Type like;
};

constexpr uint32_t kF32QuietNaN = 0x7FC00000;
constexpr uint32_t kF32Infinity = 0x7F800000;

} // namespace

Value mlir::kiln::createFloat8ToF32(OpBuilder &builder, Location loc, Value bytes,
                                    Float8Format format) {
  ShapedBuilder s(builder, loc, bytes.getType());
  Float8Layout layout = getLayout(format);
  int m = layout.mantissaBits;
  Type i32 = builder.getI32Type(), f32 = builder.getF32Type();
  Value v = arith::ExtUIOp::create(builder, loc, s.type(i32), bytes);
  Value sign = s.shli(s.andi(v, 0x80), 24);
  Value magnitude = s.andi(v, 0x7F);
  // Normal numbers: exponent and mantissa moved into place, rebiased.
  Value normal = arith::AddIOp::create(builder, loc, s.shli(magnitude, 23 - m),
                                       s.i32(uint32_t(127 - layout.bias) << 23));
  // Subnormals (and zero): mantissa * 2^(1 - bias - m), an exact product
  // that is a normal f32, so denormal flushing cannot touch it.
  Value fraction = arith::UIToFPOp::create(builder, loc, s.type(f32),
                                           s.andi(magnitude, (1u << m) - 1));
  Value scaled = arith::MulFOp::create(builder, loc, fraction,
                                       s.f32(std::ldexp(1.0f, 1 - layout.bias - m)));
  Value subnormal = arith::BitcastOp::create(builder, loc, s.type(i32), scaled);
  Value isSubnormal = s.compare(arith::CmpIPredicate::eq, s.shrui(magnitude, m), 0);
  Value bits = s.select(isSubnormal, subnormal, normal);
  if (format == Float8Format::e4m3) {
    // No infinities; S.1111.111 is NaN.
    bits = s.select(s.compare(arith::CmpIPredicate::eq, magnitude, 0x7F), s.i32(kF32QuietNaN),
                    bits);
  } else {
    // IEEE-like: exponent all ones is an infinity or a NaN.
    Value special = s.select(s.compare(arith::CmpIPredicate::eq, magnitude, 0x7C),
                             s.i32(kF32Infinity), s.i32(kF32QuietNaN));
    bits = s.select(s.compare(arith::CmpIPredicate::uge, magnitude, 0x7C), special, bits);
  }
  Value signed_ = arith::OrIOp::create(builder, loc, bits, sign);
  return arith::BitcastOp::create(builder, loc, s.type(f32), signed_);
}

/// `value >> amount`, rounded to nearest with ties to even (amount >= 1).
static Value roundShiftRight(const ShapedBuilder &s, Value value, Value amount) {
  Value one = s.i32(1);
  Value halfMinusOne = s.subi(s.shli(one, s.subi(amount, one)), one);
  Value lowestKept = s.andi(s.shrui(value, amount), 1);
  return s.shrui(s.addi(s.addi(value, halfMinusOne), lowestKept), amount);
}

Value mlir::kiln::createF32ToFloat8(OpBuilder &builder, Location loc, Value f32,
                                    Float8Format format) {
  ShapedBuilder s(builder, loc, f32.getType());
  Float8Layout layout = getLayout(format);
  uint32_t m = layout.mantissaBits, bias = layout.bias;
  // The largest finite value's magnitude byte: e4m3's S.1111.111 is NaN.
  uint32_t maxFiniteCode = format == Float8Format::e4m3 ? 0x7E : 0x7B;
  Type i32 = builder.getI32Type();
  Value bits = arith::BitcastOp::create(builder, loc, s.type(i32), f32);
  Value sign = s.andi(s.shrui(bits, 24), 0x80);
  Value magnitude = s.andi(bits, 0x7FFFFFFF);
  // Normal results: drop 23 - m mantissa bits with rounding (a carry into
  // the exponent is the right answer), then rebias the exponent.
  Value normal = s.subi(roundShiftRight(s, magnitude, s.i32(23 - m)), s.i32((127 - bias) << m));
  // Subnormal results: the significand with its implicit bit, in units of
  // the smallest subnormal, 2^(1 - bias - m); rounding up into the smallest
  // normal gives its code, 1 << m. The shift is clamped to [1, 31] so that
  // lanes taking the normal path stay defined.
  Value exponent = s.shrui(magnitude, 23);
  Value significand = s.ori(s.andi(magnitude, 0x7FFFFF), s.i32(0x800000));
  Value amount = s.maxui(s.minui(s.subi(s.i32(151 - bias - m), exponent), 31), 1);
  Value subnormal = roundShiftRight(s, significand, amount);
  Value isSubnormal = s.compare(arith::CmpIPredicate::ult, magnitude, (128 - bias) << 23);
  Value code = s.ori(s.minui(s.select(isSubnormal, subnormal, normal), maxFiniteCode), sign);
  // Any NaN, whatever its sign, is 0x7f in both formats (as the PTX
  // conversions give).
  code = s.select(s.compare(arith::CmpIPredicate::ugt, magnitude, kF32Infinity), s.i32(0x7F),
                  code);
  return arith::TruncIOp::create(builder, loc, s.type(builder.getI8Type()), code);
}

/// The byte of `value` rounded as kiln.f32_to_float8 rounds it.
static APInt roundToFloat8(APFloat value, Float8Format format) {
  const llvm::fltSemantics &semantics = format == Float8Format::e4m3
                                            ? APFloat::Float8E4M3FN()
                                            : APFloat::Float8E5M2();
  if (value.isNaN())
    return APInt(8, 0x7F);
  bool negative = value.isNegative();
  // Saturate first: every value not above the largest finite one rounds
  // to a finite value.
  APFloat largest = APFloat::getLargest(semantics, negative);
  bool lost = false;
  largest.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
  if (negative ? value < largest : value > largest)
    value = largest;
  value.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
  return value.bitcastToAPInt();
}

OpFoldResult F32ToFloat8Op::fold(FoldAdaptor adaptor) {
  if (auto scalar = dyn_cast_if_present<FloatAttr>(adaptor.getSrc()))
    return IntegerAttr::get(getType(), roundToFloat8(scalar.getValue(), getFormat()));
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getSrc()))
    return SplatElementsAttr::get(cast<ShapedType>(getType()),
                                  roundToFloat8(splat.getSplatValue<APFloat>(), getFormat()));
  return {};
}

void mlir::kiln::decodeFloat8Operands(DotOp dot) {
  if (!dot.hasFloat8Operands())
    return;
  OpBuilder builder(dot);
  Location loc = dot.getLoc();
  auto decode = [&](Value bytes, Float8Format format) -> Value {
    Value wide = createFloat8ToF32(builder, loc, bytes, format);
    // Exact: f16 holds every e4m3 and e5m2 value.
    return arith::TruncFOp::create(builder, loc,
                                   getTypeWithElement(bytes.getType(), builder.getF16Type()),
                                   wide);
  };
  Value a = decode(dot.getA(), *dot.getAFloat8());
  Value b = decode(dot.getB(), *dot.getBFloat8());
  dot.getAMutable().assign(a);
  dot.getBMutable().assign(b);
  dot.removeAFloat8Attr();
  dot.removeBFloat8Attr();
}
