#pragma once

#include "frontend/view_path.h"
#include "ir/value.h"

#include <ATen/core/ivalue.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace popsim::frontend {

// The memory of one eager tensor that several TorchScript values may view: a
// model input, a weight, or an intermediate result that a view was taken of.
// popsim's IR has value semantics, so an in-place write through any view
// makes new `contents` and bumps `version`; views read after it are read
// again from the new contents.
struct Storage {
  ir::Value* contents = nullptr;
  uint64_t version = 0;
  ir::Value* root = nullptr; // the graph input or weight it holds, if any
};

// How a TorchScript value views a storage.
struct Alias {
  std::shared_ptr<Storage> storage;
  ViewPath path;          // from the storage's contents to this value
  std::string opaqueView; // set when `path` is unknown: the op that made the view
  uint64_t version = 0;   // the storage version this value was read at
};

// What a TorchScript value is during import.
struct FrontendValue {
  enum class Kind {
    Static,   // known at compile time: numbers, lists, strings, None, constant tensors, modules
    Tensor,   // computed at runtime: an IR value
    List,     // a list or tuple with runtime elements (e.g. the inputs of cat)
    Dict,     // a dict with string keys and runtime elements (a model's input or output)
    Poisoned, // depends on an unsupported op; only its support is checked further
  };
  Kind kind = Kind::Poisoned;
  c10::IValue constant;
  ir::Value* tensor = nullptr;
  std::vector<FrontendValue> elements;
  std::vector<std::string> keys; // a Dict's, one per element
  std::string modulePath;        // attribute path of a module object ("layer1.conv")
  std::optional<Alias> alias;    // for tensors that share memory with other values

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
  static FrontendValue ofDict(std::vector<std::string> keys, std::vector<FrontendValue> elements) {
    FrontendValue v = ofList(std::move(elements));
    v.kind = Kind::Dict;
    v.keys = std::move(keys);
    return v;
  }
  bool isStatic() const { return kind == Kind::Static; }
};

} // namespace popsim::frontend
