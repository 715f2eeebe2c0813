#include "ir/node.h"

#include "common/check.h"
#include "ir/op_schema.h"

#include <algorithm>

namespace popsim::ir {

const OpSchema& Node::schema() const { return opSchema(kind_); }

bool Node::hasSideEffects() const { return schema().hasSideEffects(); }

void Node::setOptionalAttribute(const std::string& name, AttrValue value) {
  const std::vector<AttrSpec>& specs = schema().attrs;
  const auto spec =
      std::find_if(specs.begin(), specs.end(), [&](const AttrSpec& s) { return s.name == name; });
  POPSIM_ASSERT(spec != specs.end() && spec->optional && spec->type == attrTypeOf(value), name,
                " is not an optional ", attrTypeName(attrTypeOf(value)), " attribute of ",
                schema().name(), ".");
  attrs_.set(name, std::move(value));
}

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
