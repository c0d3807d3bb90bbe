//===- ir.cc - Python bindings for building kiln IR -----------------------===//
//
// kiln._C.ir: contexts, modules, types, values and a Builder that creates
// the ops a Kiln kernel is made of (kiln, arith, math, scf, func). The
// binding is deliberately thin: the Python frontend decides types and
// promotions; this file only checks what would otherwise make MLIR assert
// and turns every failure into a Python exception.
//
// This file registers the classes with pybind11; IRBinding.h declares
// them, IRHandles.cc and IRBuilder*.cc define them.
//
// The ops exposed are listed in one place each: the tables kBinaryOps,
// kUnaryOps and kCastOps (IRBuilderArith.cc) for arith/math, and the
// Builder methods for the kiln, scf and func ops. Every op the Builder creates is verified at once
// (non-recursively), so a mistake surfaces as kiln._C.ir.MLIRError at the
// source location the frontend set, not at the end of compilation.
//
//===----------------------------------------------------------------------===//

#include "IRBinding.h"

#include <functional>

// The binding's names (and, through them, mlir's and py for pybind11).
using namespace ::kiln::python::irbinding;
using ::kiln::python::DiagnosticCapture;
using ::kiln::python::Owner;
using ::kiln::python::PyModule;

namespace {

//===----------------------------------------------------------------------===//
// Module helpers
//===----------------------------------------------------------------------===//

std::shared_ptr<PyModule> createModule(const ContextRef &context) {
  auto module = std::make_shared<PyModule>();
  module->context = context;
  module->module = ModuleOp::create(UnknownLoc::get(context.get()));
  return module;
}

std::shared_ptr<PyModule> parseModule(const ContextRef &context, const std::string &text) {
  DiagnosticCapture capture(context.get());
  auto parsed = parseSourceString<ModuleOp>(text, ParserConfig(context.get()));
  if (!parsed)
    capture.raise("parsing");
  auto module = std::make_shared<PyModule>();
  module->context = context;
  module->module = std::move(parsed);
  return module;
}

std::string printModule(const PyModule &module, bool debugInfo) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.enableDebugInfo(debugInfo, /*prettyForm=*/false);
  // Arguments named after their parameters print as %name, not %argN.
  flags.printNameLocAsPrefix(true);
  module.get()->print(os, flags);
  return text;
}

void verifyModule(const PyModule &module) {
  DiagnosticCapture capture(module.context.get());
  if (failed(mlir::verify(module.get())))
    capture.raise("verification");
}

std::optional<PyFunction> getFunction(const std::shared_ptr<PyModule> &module,
                                      const std::string &name) {
  if (auto fn = module->get().lookupSymbol<func::FuncOp>(name))
    return PyFunction{fn, module};
  return std::nullopt;
}

void checkLive(const PyIfOp &o) {
  if (!o.op)
    throw py::value_error("this if op was replaced by set_if_results");
}

PyBlock entryBlock(const PyFunction &fn) {
  if (fn.op.getBody().empty())
    throw py::value_error("function '" + fn.op.getName().str() + "' has no body yet");
  return {&fn.op.getBody().front(), fn.owner};
}

} // namespace

void initIR(py::module_ &m) {
  ::kiln::python::registerMLIRError(m);

  py::class_<MLIRContext, ContextRef>(m, "Context",
                                      "An MLIR context with Kiln's dialects loaded")
      .def(py::init(&makeContext));

  py::class_<PyType>(m, "Type", "An MLIR type (scalar, !kiln.ptr or block)")
      .def("__str__", [](const PyType &t) { return toString(t.type); })
      .def("__repr__", [](const PyType &t) { return "ir.Type(" + toString(t.type) + ")"; })
      .def("__eq__", [](const PyType &a, const PyType &b) { return a.type == b.type; })
      .def("__hash__", [](const PyType &t) {
        return std::hash<const void *>()(t.type.getAsOpaquePointer());
      })
      .def("is_block", [](const PyType &t) { return isa<RankedTensorType>(t.type); })
      .def_property_readonly("shape", [](const PyType &t) {
        if (auto tensor = dyn_cast<RankedTensorType>(t.type))
          return std::vector<int64_t>(tensor.getShape().begin(), tensor.getShape().end());
        return std::vector<int64_t>();
      })
      .def_property_readonly("element_type", [](const PyType &t) {
        return PyType{getElementTypeOrSelf(t.type), t.context};
      })
      .def("is_ptr", [](const PyType &t) { return isa<kd::PointerType>(t.type); })
      .def_property_readonly("pointee", [](const PyType &t) {
        auto ptr = dyn_cast<kd::PointerType>(t.type);
        if (!ptr)
          throw py::type_error(toString(t.type) + " is not a pointer");
        return PyType{ptr.getPointeeType(), t.context};
      })
      .def_property_readonly("address_space", [](const PyType &t) {
        auto ptr = dyn_cast<kd::PointerType>(t.type);
        if (!ptr)
          throw py::type_error(toString(t.type) + " is not a pointer");
        return ptr.getAddressSpace();
      })
      .def("is_int", [](const PyType &t) { return isKilnInt(t.type); })
      .def("int_width", [](const PyType &t) {
        if (!isa<IntegerType>(t.type))
          throw py::type_error(toString(t.type) + " is not an integer type");
        return t.type.getIntOrFloatBitWidth();
      })
      .def("is_float", [](const PyType &t) { return isKilnFloat(t.type); })
      .def("is_function", [](const PyType &t) { return isa<FunctionType>(t.type); });

  py::class_<PyValue>(m, "Value", "An SSA value")
      .def_property_readonly("type", [](const PyValue &v) {
        return PyType{v.value.getType(),
                      // Types only need the context; find it from the value.
                      std::shared_ptr<MLIRContext>(v.owner, v.value.getContext())};
      })
      .def("__eq__", [](const PyValue &a, const PyValue &b) { return a.value == b.value; })
      .def("__hash__", [](const PyValue &v) {
        return std::hash<const void *>()(v.value.getAsOpaquePointer());
      })
      .def("__str__", [](const PyValue &v) {
        std::string text;
        llvm::raw_string_ostream os(text);
        v.value.print(os);
        return text;
      });

  py::class_<PyBlock>(m, "Block", "A block of operations")
      .def_property_readonly("args", [](const PyBlock &b) {
        return wrapValues(b.block->getArguments(), b.owner);
      })
      .def("arg", [](const PyBlock &b, unsigned i) {
        if (i >= b.block->getNumArguments())
          throw py::index_error("block has " + std::to_string(b.block->getNumArguments()) +
                                " arguments");
        return PyValue{b.block->getArgument(i), b.owner};
      })
      .def_property_readonly("num_args", [](const PyBlock &b) { return b.block->getNumArguments(); })
      .def("has_terminator", [](const PyBlock &b) {
        return !b.block->empty() && b.block->back().hasTrait<OpTrait::IsTerminator>();
      })
      .def("__eq__", [](const PyBlock &a, const PyBlock &b) { return a.block == b.block; });

  py::class_<PyInsertPoint>(m, "InsertPoint", "A saved builder position");

  py::class_<PyFunction>(m, "Function", "A func.func operation")
      .def_property_readonly("name", [](const PyFunction &f) { return f.op.getName().str(); })
      .def_property_readonly("type", [](const PyFunction &f) {
        return PyType{f.op.getFunctionType(),
                      std::shared_ptr<MLIRContext>(f.owner, f.op.getContext())};
      })
      .def_property_readonly("num_args", [](const PyFunction &f) { return f.op.getNumArguments(); })
      .def("add_entry_block", [](const PyFunction &f) {
        if (!f.op.getBody().empty())
          throw py::value_error("function '" + f.op.getName().str() + "' already has a body");
        return PyBlock{f.op.addEntryBlock(), f.owner};
      })
      .def_property_readonly("entry_block", &entryBlock)
      .def("arg", [](const PyFunction &f, unsigned i) {
        PyBlock block = entryBlock(f);
        if (i >= block.block->getNumArguments())
          throw py::index_error("function has " + std::to_string(block.block->getNumArguments()) +
                                " arguments");
        return PyValue{block.block->getArgument(i), f.owner};
      })
      .def("set_arg_attr", [](const PyFunction &f, unsigned i, const std::string &name, int64_t value) {
        if (i >= f.op.getNumArguments())
          throw py::index_error("function has " + std::to_string(f.op.getNumArguments()) +
                                " arguments");
        Builder b(f.op.getContext());
        f.op.setArgAttr(i, name, b.getI32IntegerAttr(static_cast<int32_t>(value)));
      }, py::arg("index"), py::arg("name"), py::arg("value"),
         "Sets an i32 attribute on argument `index` (e.g. kiln.divisibility)")
      .def("set_arg_name", [](const PyFunction &f, unsigned i, const std::string &name) {
        if (f.op.getBody().empty() || i >= f.op.getNumArguments())
          throw py::index_error("function has no entry block argument " + std::to_string(i));
        BlockArgument arg = f.op.getArgument(i);
        // Printed as the argument's SSA name (see printModule); the source
        // position stays inside the NameLoc for diagnostics.
        arg.setLoc(NameLoc::get(StringAttr::get(f.op.getContext(), name), arg.getLoc()));
      }, py::arg("index"), py::arg("name"),
         "Names entry block argument `index` after a source parameter (a NameLoc)")
      .def("set_unit_attr", [](const PyFunction &f, const std::string &name) {
        f.op->setAttr(name, UnitAttr::get(f.op.getContext()));
      })
      .def("set_result_types", [](const PyFunction &f, const std::vector<PyType> &results) {
        SmallVector<Type> types;
        for (const PyType &t : results) {
          if (t.type.getContext() != f.op.getContext())
            throw py::value_error("the type belongs to another context");
          types.push_back(t.type);
        }
        f.op.setType(FunctionType::get(f.op.getContext(), f.op.getArgumentTypes(), types));
      }, "Sets the result types once the body (and its returns) is known");

  py::class_<PyIfOp>(m, "IfOp", "An scf.if operation")
      .def_property_readonly("then_block", [](const PyIfOp &o) {
        checkLive(o);
        return PyBlock{o.op.thenBlock(), o.owner};
      })
      .def_property_readonly("else_block", [](const PyIfOp &o) -> std::optional<PyBlock> {
        checkLive(o);
        if (o.op.getElseRegion().empty())
          return std::nullopt;
        return PyBlock{o.op.elseBlock(), o.owner};
      })
      .def_property_readonly("results", [](const PyIfOp &o) {
        checkLive(o);
        return wrapValues(o.op.getResults(), o.owner);
      });

  py::class_<PyForOp>(m, "ForOp", "An scf.for operation")
      .def_property_readonly("body", [](const PyForOp &o) { return PyBlock{o.op.getBody(), o.owner}; })
      .def_property_readonly("induction_var", [](const PyForOp &o) {
        return PyValue{o.op.getInductionVar(), o.owner};
      })
      .def_property_readonly("iter_args", [](const PyForOp &o) {
        return wrapValues(o.op.getRegionIterArgs(), o.owner);
      })
      .def_property_readonly("results", [](const PyForOp &o) {
        return wrapValues(o.op.getResults(), o.owner);
      })
      .def("set_num_stages", [](const PyForOp &o, int64_t stages) {
        Builder b(o.op.getContext());
        o.op->setAttr("kiln.num_stages", b.getI32IntegerAttr(static_cast<int32_t>(stages)));
      }, py::arg("stages"), "The loop's own software-pipelining depth (kl.range's num_stages)")
      .def("set_warp_specialize", [](const PyForOp &o, bool wanted) {
        o.op->setAttr("kiln.warp_specialize", BoolAttr::get(o.op.getContext(), wanted));
      }, py::arg("wanted"),
      "Asks for, or declines, a producer warpgroup issuing the loop's copies (kl.range's warp_specialize)");

  py::class_<PyWhileOp>(m, "WhileOp", "An scf.while operation")
      .def_property_readonly("before", [](const PyWhileOp &o) {
        return PyBlock{&o.op.getBefore().front(), o.owner};
      })
      .def_property_readonly("after", [](const PyWhileOp &o) {
        return PyBlock{&o.op.getAfter().front(), o.owner};
      })
      .def_property_readonly("results", [](const PyWhileOp &o) {
        return wrapValues(o.op.getResults(), o.owner);
      });

  py::class_<PyCombineOp>(m, "CombineOp", "A kiln.reduce or kiln.scan")
      .def_property_readonly("block", [](const PyCombineOp &o) {
        return PyBlock{&o.op->getRegion(0).front(), o.owner};
      })
      .def_property_readonly("results", [](const PyCombineOp &o) {
        return wrapValues(o.op->getResults(), o.owner);
      });

  py::class_<PyModule, std::shared_ptr<PyModule>>(m, "Module", "A builtin.module")
      .def_static("create", &createModule, py::arg("context"))
      .def_static("parse", &parseModule, py::arg("context"), py::arg("text"))
      .def("str", &printModule, py::arg("debug_info") = false)
      .def("__str__", [](const PyModule &mod) { return printModule(mod, false); })
      .def("verify", &verifyModule)
      .def("int_attr", [](const PyModule &mod, const std::string &name) -> std::optional<int64_t> {
        auto attr = mod.get()->getAttrOfType<IntegerAttr>(name);
        if (!attr)
          return std::nullopt;
        return attr.getInt();
      }, py::arg("name"), "The module's integer attribute `name`, or None")
      .def("dict_array_attr", [](const PyModule &mod, const std::string &name) -> py::object {
        // A table the lowering leaves for the runtime (checked mode's
        // access sites, the recipes of tensor maps): a list of dicts of
        // strings, bools, integers and lists of these.
        auto array = mod.get()->getAttrOfType<ArrayAttr>(name);
        if (!array)
          return py::none();
        std::function<py::object(Attribute)> convert = [&](Attribute value) -> py::object {
          if (auto text = dyn_cast<StringAttr>(value))
            return py::str(text.str());
          if (auto flag = dyn_cast<BoolAttr>(value))
            return py::bool_(flag.getValue());
          if (auto number = dyn_cast<IntegerAttr>(value))
            return py::int_(number.getInt());
          if (auto items = dyn_cast<ArrayAttr>(value)) {
            py::list list;
            for (Attribute item : items)
              list.append(convert(item));
            return list;
          }
          return py::none();
        };
        py::list result;
        for (Attribute entry : array) {
          py::dict row;
          if (auto dict = dyn_cast<DictionaryAttr>(entry))
            for (NamedAttribute field : dict)
              row[py::str(field.getName().str())] = convert(field.getValue());
          result.append(row);
        }
        return result;
      }, py::arg("name"),
         "The module's array-of-dictionaries attribute `name` as a list of dicts, or None")
      .def("kernel_arg_arrays", [](const PyModule &mod, const std::string &name) {
        // By argument index: the integer-array attribute `name` of the
        // kernel's arguments that have one.
        py::dict result;
        mod.get()->walk([&](FunctionOpInterface function) {
          if (!function->hasAttr("kiln.kernel"))
            return;
          for (unsigned i = 0; i < function.getNumArguments(); ++i)
            if (auto attr = function.getArgAttrOfType<DenseI64ArrayAttr>(i, name))
              result[py::int_(i)] = py::cast(std::vector<int64_t>(attr.asArrayRef()));
        });
        return result;
      }, py::arg("name"),
         "The kernel's arguments' integer-array attributes `name`, by argument index")
      .def("written_kernel_arguments", [](const PyModule &mod) {
        std::vector<unsigned> result;
        mod.get()->walk([&](FunctionOpInterface function) {
          if (function->hasAttr("kiln.kernel")) {
            auto indices = mlir::kiln::writtenKernelArguments(mod.get(), function);
            result.assign(indices.begin(), indices.end());
          }
        });
        return result;
      }, "The indices of the kernel's arguments it may write through (stores, atomics)")
      .def("get_function", &getFunction, py::arg("name"))
      .def_property_readonly("context", [](const PyModule &mod) { return mod.context; });

  py::class_<PyBuilder>(m, "Builder", "Creates ops at an insertion point and location")
      .def(py::init<ContextRef>(), py::arg("context"))
      .def("set_loc", &PyBuilder::setLoc, py::arg("filename"), py::arg("line"), py::arg("col"))
      .def("set_unknown_loc", &PyBuilder::setUnknownLoc)
      .def("get_loc", &PyBuilder::getLoc)
      .def("set_insertion_point_to_start", &PyBuilder::setInsertionPointToStart)
      .def("set_insertion_point_to_end", &PyBuilder::setInsertionPointToEnd)
      .def("get_insertion_point", &PyBuilder::getInsertionPoint)
      .def("restore_insertion_point", &PyBuilder::restoreInsertionPoint)
      .def("get_insertion_block", &PyBuilder::getInsertionBlock)
      // Types.
      .def("i1_type", [](const PyBuilder &b) { return b.intType(1); })
      .def("i8_type", [](const PyBuilder &b) { return b.intType(8); })
      .def("i16_type", [](const PyBuilder &b) { return b.intType(16); })
      .def("i32_type", [](const PyBuilder &b) { return b.intType(32); })
      .def("i64_type", [](const PyBuilder &b) { return b.intType(64); })
      .def("f16_type", &PyBuilder::f16)
      .def("bf16_type", &PyBuilder::bf16)
      .def("f32_type", &PyBuilder::f32)
      .def("f64_type", &PyBuilder::f64)
      .def("ptr_type", &PyBuilder::ptrType, py::arg("pointee"), py::arg("addr_space") = 1)
      .def("block_type", &PyBuilder::blockType, py::arg("element"), py::arg("shape"))
      .def("function_type", &PyBuilder::functionType, py::arg("inputs"), py::arg("results"))
      // func.
      .def("create_function", &PyBuilder::createFunction, py::arg("module"), py::arg("name"),
           py::arg("arg_types"), py::arg("result_types"), py::arg("public"))
      .def("create_return", &PyBuilder::createReturn, py::arg("values"))
      .def("create_call", &PyBuilder::createCall, py::arg("function"), py::arg("args"))
      // Constants.
      .def("int_const", &PyBuilder::intConst, py::arg("value"), py::arg("type"))
      .def("float_const", &PyBuilder::floatConst, py::arg("value"), py::arg("type"))
      // kiln.
      .def("program_id", &PyBuilder::programId, py::arg("axis"))
      .def("num_programs", &PyBuilder::numPrograms, py::arg("axis"))
      .def("make_range", &PyBuilder::makeRange, py::arg("start"), py::arg("end"))
      .def("splat", &PyBuilder::splat, py::arg("value"), py::arg("shape"))
      .def("broadcast", &PyBuilder::broadcast, py::arg("value"), py::arg("shape"))
      .def("expand_dims", &PyBuilder::expandDims, py::arg("value"), py::arg("axis"))
      .def("addptr", &PyBuilder::addptr, py::arg("ptr"), py::arg("offset"))
      .def("ptr_to_int", &PyBuilder::ptrToInt, py::arg("ptr"), py::arg("type"))
      .def("int_to_ptr", &PyBuilder::intToPtr, py::arg("address"), py::arg("type"))
      .def("ptr_bitcast", &PyBuilder::ptrBitcast, py::arg("ptr"), py::arg("type"))
      .def("load", &PyBuilder::load, py::arg("ptr"), py::arg("mask"), py::arg("other"),
           py::arg("cache") = "", py::arg("evict") = "", py::arg("is_volatile") = false,
           py::arg("tensor_map") = std::nullopt,
           py::arg("tensor_coords") = std::vector<PyValue>{})
      .def("make_tensor_map", &PyBuilder::makeTensorMap, py::arg("base"), py::arg("shape"),
           py::arg("strides"), py::arg("nan_padding") = false)
      .def("store", &PyBuilder::store, py::arg("ptr"), py::arg("value"), py::arg("mask"),
           py::arg("cache") = "", py::arg("evict") = "")
      // Atomics, hints and debugging.
      .def("atomic_rmw", &PyBuilder::atomicRMW, py::arg("kind"), py::arg("ptr"), py::arg("val"),
           py::arg("mask"), py::arg("sem") = "acq_rel", py::arg("scope") = "gpu")
      .def("atomic_cas", &PyBuilder::atomicCAS, py::arg("ptr"), py::arg("cmp"), py::arg("val"),
           py::arg("sem") = "acq_rel", py::arg("scope") = "gpu")
      .def("axis_hint", &PyBuilder::axisHint, py::arg("value"), py::arg("divisibility"),
           py::arg("contiguity"), py::arg("constancy"))
      .def("debug_barrier", &PyBuilder::debugBarrier)
      .def("assume", &PyBuilder::assume, py::arg("cond"))
      .def("print", &PyBuilder::print, py::arg("prefix"), py::arg("args"), py::arg("is_signed"),
           py::arg("hex"))
      .def("device_assert", &PyBuilder::deviceAssert, py::arg("cond"), py::arg("message"),
           py::arg("file"), py::arg("line"), py::arg("function"))
      // arith and math, by name.
      .def("binary", &PyBuilder::binary, py::arg("name"), py::arg("lhs"), py::arg("rhs"))
      .def("unary", &PyBuilder::unary, py::arg("name"), py::arg("operand"))
      .def("cmpi", &PyBuilder::cmpi, py::arg("predicate"), py::arg("lhs"), py::arg("rhs"))
      .def("cmpf", &PyBuilder::cmpf, py::arg("predicate"), py::arg("lhs"), py::arg("rhs"))
      .def("select", &PyBuilder::select, py::arg("cond"), py::arg("lhs"), py::arg("rhs"))
      .def("cast", &PyBuilder::cast, py::arg("name"), py::arg("value"), py::arg("type"))
      .def("fma", &PyBuilder::fma, py::arg("x"), py::arg("y"), py::arg("z"))
      .def("extern_elementwise", &PyBuilder::externElementwise, py::arg("symbol"),
           py::arg("args"), py::arg("result_type"))
      .def("elementwise_inline_asm", &PyBuilder::elementwiseInlineAsm, py::arg("asm"),
           py::arg("constraints"), py::arg("pure"), py::arg("pack"), py::arg("args"),
           py::arg("result_types"))
      // scf.
      .def("create_if", &PyBuilder::createIf, py::arg("cond"), py::arg("result_types"),
           py::arg("with_else"))
      .def("create_for", &PyBuilder::createFor, py::arg("lb"), py::arg("ub"), py::arg("step"),
           py::arg("init_values"))
      .def("create_while", &PyBuilder::createWhile, py::arg("init_values"))
      .def("set_if_results", &PyBuilder::setIfResults, py::arg("if_op"), py::arg("result_types"))
      .def("create_yield", &PyBuilder::createYield, py::arg("values"))
      .def("create_condition", &PyBuilder::createCondition, py::arg("cond"), py::arg("values"))
      .def("create_reduce", &PyBuilder::createReduce, py::arg("srcs"), py::arg("axis"))
      .def("create_scan", &PyBuilder::createScan, py::arg("srcs"), py::arg("axis"), py::arg("reverse"))
      .def("create_combine_return", &PyBuilder::createCombineReturn, py::arg("values"))
      // Shape ops.
      .def("reshape", &PyBuilder::reshape, py::arg("value"), py::arg("shape"))
      .def("trans", &PyBuilder::trans, py::arg("value"), py::arg("order"))
      .def("join", &PyBuilder::join, py::arg("lhs"), py::arg("rhs"))
      .def("split", &PyBuilder::split, py::arg("value"))
      .def("cat", &PyBuilder::cat, py::arg("lhs"), py::arg("rhs"))
      .def("flip", &PyBuilder::flip, py::arg("value"), py::arg("axis"))
      .def("gather", &PyBuilder::gather, py::arg("src"), py::arg("index"), py::arg("axis"))
      .def("histogram", &PyBuilder::histogram, py::arg("src"), py::arg("mask"),
           py::arg("num_bins"))
      // Matrix products.
      .def("dot", &PyBuilder::dot, py::arg("a"), py::arg("b"), py::arg("acc"),
           py::arg("input_precision"), py::arg("max_num_imprecise_acc"), py::arg("a_fp8") = "",
           py::arg("b_fp8") = "")
      .def("fp8_to_f32", &PyBuilder::float8ToF32, py::arg("bytes"), py::arg("format"))
      .def("f32_to_fp8", &PyBuilder::f32ToFloat8, py::arg("value"), py::arg("format"));

  m.attr("BINARY_OPS") = py::cast(binaryOpNames());
  m.attr("UNARY_OPS") = py::cast(unaryOpNames());
  m.attr("CAST_OPS") = py::cast(castOpNames());
}
