#include "ir/node.h"

#include "ir/op_schema.h"

namespace popsim::ir {

const OpSchema& Node::schema() const { return opSchema(kind_); }

bool Node::hasSideEffects() const { return schema().hasSideEffects(); }

std::string Node::describe() const {
  std::string text(name());
  if (location_.known()) {
    text += " at " + location_.str();
  }
  return text;
}

} // namespace popsim::ir
