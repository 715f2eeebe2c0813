// popsim's flat tensor inputs and outputs, nested as TorchScript values.
#include "api/nested_tensors.h"

#include "common/check.h"
#include "common/error.h"

#include <algorithm>
#include <map>

namespace popsim::api {

const char* const kOneProgramPerSignature =
    "popsim compiles one program per input signature: build another session for the new "
    "inputs.";

namespace {

using Kind = frontend::ValueStructure::Kind;

const char* kindName(Kind kind) {
  switch (kind) {
  case Kind::Tensor: return "a tensor";
  case Kind::Tuple: return "a tuple";
  case Kind::List: return "a list";
  case Kind::Dict: return "a dict";
  }
  return "a value";
}

std::string describe(const frontend::ValueStructure& structure) {
  std::string text = kindName(structure.kind);
  if (structure.kind == Kind::Dict) {
    std::string keys;
    for (const std::string& key : structure.keys)
      keys += (keys.empty() ? "'" : ", '") + key + "'";
    return text + " with keys [" + keys + "]";
  }
  if (structure.kind != Kind::Tensor) {
    text += " of " + std::to_string(structure.elements.size());
  }
  return text;
}

// The flat tensors of `value`, named after `name`, and its structure.
frontend::ValueStructure flatten(const c10::IValue& value, const std::string& name,
                                 FlatInputs& flat) {
  frontend::ValueStructure structure;
  if (value.isTensor()) {
    flat.tensors.push_back(value.toTensor());
    flat.names.push_back(name);
    return structure;
  }
  if (value.isTuple() || value.isList()) {
    structure.kind = value.isTuple() ? Kind::Tuple : Kind::List;
    const std::vector<c10::IValue> elements =
        value.isTuple() ? value.toTupleRef().elements().vec() : value.toListRef().vec();
    for (size_t i = 0; i < elements.size(); ++i)
      structure.elements.push_back(
          flatten(elements[i], name + "[" + std::to_string(i) + "]", flat));
    return structure;
  }
  if (value.isGenericDict() &&
      value.toGenericDict().keyType()->kind() == c10::TypeKind::StringType) {
    structure.kind = Kind::Dict;
    for (const auto& entry : value.toGenericDict()) {
      const std::string& key = entry.key().toStringRef();
      structure.keys.push_back(key);
      structure.elements.push_back(flatten(entry.value(), name + "['" + key + "']", flat));
    }
    return structure;
  }
  throwError(ErrorKind::InvalidInput,
             "Input '" + name + "' is " +
                 (value.isGenericDict() ? "a dict whose keys are not strings"
                                        : std::string("a ") + value.tagKind()) +
                 "; a session's inputs are tensors, or tuples, lists and dicts (string keys) of "
                 "tensors, as forward() takes them.");
}

std::string parameterName(const std::vector<std::string>& parameters, size_t index) {
  return index < parameters.size() ? parameters[index] : "input" + std::to_string(index);
}

// Where a call's nested input is: spelled ("y[1]['mask']") only when an error
// names it, since every run checks its inputs against the compiled structure.
struct InputPath {
  const InputPath* parent = nullptr;                    // null at a positional input
  size_t index = 0;                                     // the input's or the element's
  const std::string* key = nullptr;                     // a dict element's key
  const std::vector<std::string>* parameters = nullptr; // forward()'s names, at the root

  std::string text() const {
    if (parent == nullptr) return parameterName(*parameters, index);
    return parent->text() +
           (key != nullptr ? "['" + *key + "']" : "[" + std::to_string(index) + "]");
  }
};

// `value`'s own kind, length and keys (its elements left empty): what a call's
// input is compared with at each level, without flattening it again there.
frontend::ValueStructure outline(const c10::IValue& value, const InputPath& path) {
  frontend::ValueStructure structure;
  if (value.isTensor()) return structure;
  if (value.isTuple() || value.isList()) {
    structure.kind = value.isTuple() ? Kind::Tuple : Kind::List;
    structure.elements.resize(value.isTuple() ? value.toTupleRef().elements().size()
                                              : value.toListRef().size());
    return structure;
  }
  if (value.isGenericDict() &&
      value.toGenericDict().keyType()->kind() == c10::TypeKind::StringType) {
    structure.kind = Kind::Dict;
    for (const auto& entry : value.toGenericDict())
      structure.keys.push_back(entry.key().toStringRef());
    structure.elements.resize(structure.keys.size());
    return structure;
  }
  FlatInputs ignored;
  return flatten(value, path.text(), ignored); // (refuses it, naming what it is)
}

// `value`'s tensors in the order `compiled` gives them.
void flattenAs(const c10::IValue& value, const frontend::ValueStructure& compiled,
               const InputPath& path, std::vector<at::Tensor>& tensors) {
  const frontend::ValueStructure structure = outline(value, path);
  const auto refuse = [&] {
    throwError(ErrorKind::InvalidInput, "Input '" + path.text() + "' is " + describe(structure) +
                                            " but the session was compiled for " +
                                            describe(compiled) + ". " + kOneProgramPerSignature);
  };
  if (structure.kind != compiled.kind || structure.elements.size() != compiled.elements.size())
    refuse();
  if (compiled.kind == Kind::Tensor) {
    tensors.push_back(value.toTensor());
    return;
  }
  if (compiled.kind == Kind::Dict) {
    const c10::impl::GenericDict dict = value.toGenericDict();
    for (size_t i = 0; i < compiled.keys.size(); ++i) {
      const std::string& key = compiled.keys[i];
      if (!dict.contains(key)) refuse();
      flattenAs(dict.at(key), compiled.elements[i], InputPath{&path, i, &key}, tensors);
    }
    return;
  }
  const std::vector<c10::IValue> elements =
      value.isTuple() ? value.toTupleRef().elements().vec() : value.toListRef().vec();
  for (size_t i = 0; i < elements.size(); ++i)
    flattenAs(elements[i], compiled.elements[i], InputPath{&path, i}, tensors);
}

c10::IValue nestFrom(const frontend::ValueStructure& structure,
                     const std::vector<at::Tensor>& tensors, size_t& next) {
  if (structure.kind == Kind::Tensor) {
    POPSIM_ASSERT(next < tensors.size(), "fewer outputs than the model's structure holds.");
    return tensors[next++];
  }
  std::vector<c10::IValue> elements;
  for (const frontend::ValueStructure& element : structure.elements)
    elements.push_back(nestFrom(element, tensors, next));
  if (structure.kind == Kind::Tuple) return c10::ivalue::Tuple::create(std::move(elements));
  // Typed as TorchScript types them: List[Tensor], Dict[str, Tensor], ...
  const c10::TypePtr elementType =
      elements.empty() ? c10::TensorType::get() : c10::unshapedType(elements.front().type());
  if (structure.kind == Kind::List) {
    c10::impl::GenericList list(elementType);
    for (c10::IValue& element : elements)
      list.push_back(std::move(element));
    return list;
  }
  c10::impl::GenericDict dict(c10::StringType::get(), elementType);
  for (size_t i = 0; i < elements.size(); ++i)
    dict.insert(structure.keys[i], std::move(elements[i]));
  return dict;
}

} // namespace

FlatInputs flattenExamples(const std::vector<c10::IValue>& values,
                           const std::vector<std::string>& parameters) {
  FlatInputs flat;
  for (size_t i = 0; i < values.size(); ++i)
    flat.structures.push_back(flatten(values[i], parameterName(parameters, i), flat));
  return flat;
}

std::vector<at::Tensor> flattenAs(const std::vector<c10::IValue>& values,
                                  const std::vector<frontend::ValueStructure>& compiled,
                                  const std::vector<std::string>& parameters) {
  if (values.size() != compiled.size()) {
    std::string names;
    for (size_t i = 0; i < compiled.size(); ++i)
      names += (names.empty() ? "" : ", ") + parameterName(parameters, i);
    throwError(ErrorKind::InvalidInput, "Number of positional arguments mismatch: expected " +
                                            std::to_string(compiled.size()) +
                                            " arguments but got " + std::to_string(values.size()) +
                                            ". The session was compiled for " +
                                            std::to_string(compiled.size()) + " input(s) (" +
                                            names + "). " + kOneProgramPerSignature);
  }
  std::vector<at::Tensor> tensors;
  for (size_t i = 0; i < values.size(); ++i)
    flattenAs(values[i], compiled[i], InputPath{nullptr, i, nullptr, &parameters}, tensors);
  return tensors;
}

c10::IValue nest(const frontend::ValueStructure& structure,
                 const std::vector<at::Tensor>& tensors) {
  size_t next = 0;
  c10::IValue value = nestFrom(structure, tensors, next);
  POPSIM_ASSERT(next == tensors.size(), "more outputs than the model's structure holds.");
  return value;
}

} // namespace popsim::api
