// Attributes: a sorted name -> value map with typed getters, and the printer
// form of each value type.

#include "common/error.h"
#include "ir/attributes.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace popsim {
namespace {

using ir::Attributes;
using ir::AttrType;
using ir::AttrValue;

std::vector<std::string> namesOf(const Attributes& attrs) {
  std::vector<std::string> names;
  for (const auto& entry : attrs.entries()) {
    names.push_back(entry.first);
  }
  return names;
}

TEST(AttributesTest, SetThenGetEachType) {
  Attributes attrs;
  attrs.set("groups", int64_t{2})
      .set("eps", 1e-5)
      .set("ceil_mode", true)
      .set("approximate", std::string("tanh"))
      .set("stride", std::vector<int64_t>{2, 1});
  EXPECT_EQ(attrs.getInt("groups"), 2);
  EXPECT_EQ(attrs.getFloat("eps"), 1e-5);
  EXPECT_TRUE(attrs.getBool("ceil_mode"));
  EXPECT_EQ(attrs.getString("approximate"), "tanh");
  EXPECT_EQ(attrs.getInts("stride"), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(attrs.entries().size(), 5u);
}

TEST(AttributesTest, HasAndFind) {
  const Attributes attrs = {{"dim", int64_t{1}}};
  EXPECT_TRUE(attrs.has("dim"));
  EXPECT_FALSE(attrs.has("dims"));
  EXPECT_FALSE(attrs.has("di"));
  ASSERT_NE(attrs.find("dim"), nullptr);
  EXPECT_EQ(std::get<int64_t>(*attrs.find("dim")), 1);
  EXPECT_EQ(attrs.find("keepdim"), nullptr);
  EXPECT_EQ(Attributes().find("dim"), nullptr);
}

TEST(AttributesTest, SetOverwritesAndMayChangeTheType) {
  Attributes attrs = {{"dim", int64_t{1}}, {"keepdim", false}};
  attrs.set("dim", int64_t{3});
  EXPECT_EQ(attrs.getInt("dim"), 3);
  EXPECT_EQ(attrs.entries().size(), 2u);
  attrs.set("dim", std::vector<int64_t>{0, 2});
  EXPECT_EQ(attrs.getInts("dim"), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(attrs.entries().size(), 2u);
  EXPECT_EQ(namesOf(attrs), (std::vector<std::string>{"dim", "keepdim"}));
}

TEST(AttributesTest, EntriesAreSortedByNameWhateverTheInsertionOrder) {
  Attributes attrs = {{"stride", std::vector<int64_t>{1, 1}},
                      {"dilation", std::vector<int64_t>{1, 1}},
                      {"padding", std::vector<int64_t>{0, 0}}};
  attrs.set("groups", int64_t{1}).set("a", 0.5).set("zz", true).set("padding2", int64_t{0});
  EXPECT_EQ(namesOf(attrs), (std::vector<std::string>{"a", "dilation", "groups", "padding",
                                                      "padding2", "stride", "zz"}));
}

TEST(AttributesTest, EqualityIgnoresInsertionOrder) {
  const Attributes first = {{"scale", 2.0}, {"shift", 0.5}};
  Attributes second;
  second.set("shift", 0.5).set("scale", 2.0);
  EXPECT_TRUE(first == second);
  second.set("shift", 0.25);
  EXPECT_FALSE(first == second);
  // Same number with another type is a different attribute value.
  EXPECT_FALSE((Attributes{{"dim", int64_t{1}}} == Attributes{{"dim", 1.0}}));
}

TEST(AttributesTest, MissingAttributeIsAnInternalErrorNamingIt) {
  const Attributes attrs = {{"dim", int64_t{1}}};
  const CoreError error = testing::captureError([&] { attrs.getInt("keepdim"); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(error.what(), "attribute 'keepdim' is missing."));
}

TEST(AttributesTest, WrongTypeIsAnInternalErrorNamingBothTypes) {
  const Attributes attrs = {{"dim", int64_t{1}},
                            {"eps", 1e-5},
                            {"keepdim", true},
                            {"mode", std::string("none")},
                            {"perm", std::vector<int64_t>{1, 0}}};
  struct Case {
    std::function<void()> get;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[&] { attrs.getFloat("dim"); }, "attribute 'dim' is a int, expected float."},
      {[&] { attrs.getInt("eps"); }, "attribute 'eps' is a float, expected int."},
      {[&] { attrs.getInt("keepdim"); }, "attribute 'keepdim' is a bool, expected int."},
      {[&] { attrs.getBool("mode"); }, "attribute 'mode' is a string, expected bool."},
      {[&] { attrs.getString("perm"); }, "attribute 'perm' is a int list, expected string."},
      {[&] { attrs.getInts("dim"); }, "attribute 'dim' is a int, expected int list."},
  };
  for (const Case& c : cases) {
    const CoreError error = testing::captureError(c.get);
    EXPECT_EQ(error.kind(), ErrorKind::Internal) << c.message;
    EXPECT_TRUE(testing::contains(error.what(), c.message));
  }
}

TEST(AttributesTest, TypeOfEachAlternative) {
  EXPECT_EQ(ir::attrTypeOf(AttrValue(int64_t{3})), AttrType::Int);
  EXPECT_EQ(ir::attrTypeOf(AttrValue(0.5)), AttrType::Float);
  EXPECT_EQ(ir::attrTypeOf(AttrValue(false)), AttrType::Bool);
  EXPECT_EQ(ir::attrTypeOf(AttrValue(std::string("x"))), AttrType::String);
  EXPECT_EQ(ir::attrTypeOf(AttrValue(std::vector<int64_t>{})), AttrType::Ints);
  EXPECT_STREQ(ir::attrTypeName(AttrType::Ints), "int list");
  EXPECT_STREQ(ir::attrTypeName(AttrType::Float), "float");
}

TEST(AttributesTest, ValueToStringForms) {
  EXPECT_EQ(ir::attrValueToString(int64_t{3}), "3");
  EXPECT_EQ(ir::attrValueToString(int64_t{-1}), "-1");
  EXPECT_EQ(ir::attrValueToString(0.5), "0.5");
  EXPECT_EQ(ir::attrValueToString(1.0), "1");
  EXPECT_EQ(ir::attrValueToString(-1.25), "-1.25");
  EXPECT_EQ(ir::attrValueToString(1e-5), "1e-05");
  EXPECT_EQ(ir::attrValueToString(1.0 / 3.0), "0.333333333"); // 9 significant digits
  EXPECT_EQ(ir::attrValueToString(true), "true");
  EXPECT_EQ(ir::attrValueToString(false), "false");
  EXPECT_EQ(ir::attrValueToString(std::string("tanh")), "\"tanh\"");
  EXPECT_EQ(ir::attrValueToString(std::string()), "\"\"");
  EXPECT_EQ(ir::attrValueToString(std::vector<int64_t>{1, 1}), "[1,1]");
  EXPECT_EQ(ir::attrValueToString(std::vector<int64_t>{2, -1, 30}), "[2,-1,30]");
  EXPECT_EQ(ir::attrValueToString(std::vector<int64_t>{}), "[]");
}

} // namespace
} // namespace popsim
