#include "ir/node.h"

#include "ir/op_schema.h"

namespace popsim::ir {

const OpSchema& Node::schema() const { return opSchema(kind_); }

bool Node::hasSideEffects() const { return schema().hasSideEffects(); }

std::string Node::scopedName() const {
  return location_.nameScope.empty() ? std::string(name())
                                     : location_.nameScope + "/" + std::string(name());
}

std::string Node::describe() const {
  std::string text = scopedName();
  if (location_.known()) {
    text += " at " + location_.str();
  }
  return text;
}

} // namespace popsim::ir
