#pragma once

#include "ir/value.h"

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace popsim::frontend {

// What a TorchScript value is during import.
struct FrontendValue {
  enum class Kind {
    Static,   // known at compile time: numbers, lists, strings, None, constant tensors, modules
    Tensor,   // computed at runtime: an IR value
    List,     // a list or tuple with runtime elements (e.g. the inputs of cat)
    Poisoned, // depends on an unsupported op; only its support is checked further
  };
  Kind kind = Kind::Poisoned;
  c10::IValue constant;
  ir::Value* tensor = nullptr;
  std::vector<FrontendValue> elements;
  std::string modulePath; // attribute path of a module object ("layer1.conv")

  static FrontendValue ofStatic(c10::IValue value, std::string path = "") {
    FrontendValue v;
    v.kind = Kind::Static;
    v.constant = std::move(value);
    v.modulePath = std::move(path);
    return v;
  }
  static FrontendValue ofTensor(ir::Value* value) {
    FrontendValue v;
    v.kind = Kind::Tensor;
    v.tensor = value;
    return v;
  }
  static FrontendValue ofList(std::vector<FrontendValue> elements) {
    FrontendValue v;
    v.kind = Kind::List;
    v.elements = std::move(elements);
    return v;
  }
  bool isStatic() const { return kind == Kind::Static; }
};

} // namespace popsim::frontend
