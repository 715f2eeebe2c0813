#include "ir/op_kind.h"

#include <array>

namespace popsim::ir {
namespace {
constexpr std::array<std::string_view, kNumOpKinds> kNames = {
#define POPSIM_OP_NAME(kind, name, family) name,
    POPSIM_FOR_EACH_OP(POPSIM_OP_NAME)
#undef POPSIM_OP_NAME
};
constexpr std::array<OpFamily, kNumOpKinds> kFamilies = {
#define POPSIM_OP_FAMILY(kind, name, family) OpFamily::family,
    POPSIM_FOR_EACH_OP(POPSIM_OP_FAMILY)
#undef POPSIM_OP_FAMILY
};
} // namespace

std::string_view opKindName(OpKind kind) { return kNames.at(static_cast<size_t>(kind)); }

OpFamily opFamily(OpKind kind) { return kFamilies.at(static_cast<size_t>(kind)); }

std::optional<OpKind> opKindFromName(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) {
      return static_cast<OpKind>(i);
    }
  }
  return std::nullopt;
}

} // namespace popsim::ir
