// Target profiles: every built-in loads with what its file promises; malformed profiles get errors
// naming the line and key; base profiles inherit and override.
#include <gtest/gtest.h>

#include "ops/op.h"
#include "targets/placement.h"
#include "targets/target.h"

namespace ferry::targets {
namespace {

TEST(Targets, EveryBuiltinLoads) {
  std::vector<std::string> names = builtin_target_names();
  for (const char* want : {"cpu", "reference", "ascend310p", "ascend910b"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const std::string& n : names) {
    auto t = load_target(n);
    ASSERT_TRUE(t.ok()) << n << ": " << t.status().to_string();
    EXPECT_EQ(t->name, n);
    EXPECT_FALSE(t->source.empty()) << n;
    EXPECT_TRUE(t->has_precision(t->default_precision)) << n;
  }
}

TEST(Targets, AscendProfilesSayWhatCannSays) {
  auto t = load_target("ascend310p");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->emulated);
  EXPECT_EQ(t->host, "cpu");
  EXPECT_EQ(t->default_precision, "fp16");  // ATC's force_fp16
  EXPECT_NE(t->source.find("CANN 8.0.0"), std::string::npos);
  EXPECT_NE(t->rule("", "Conv"), nullptr);
  for (const char* absent : {"Loop", "Unique", "GroupNormalization", "Mish", "Gelu", "CastLike", "Upsample"})
    EXPECT_EQ(t->rule("", absent), nullptr) << absent;
  EXPECT_TRUE(t->rule("", "NonZero")->data_dependent);
  EXPECT_FALSE(t->allows_control_flow("Loop"));
  EXPECT_TRUE(t->allows_control_flow("If"));
  auto b = load_target("ascend910b");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->has_precision("bf16"));
  EXPECT_FALSE(t->has_precision("bf16"));
  EXPECT_EQ(b->ops.size(), t->ops.size());  // inherited from ascend310p
}

TEST(Targets, MalformedProfilesNameLineAndKey) {
  auto syntax = parse_target("{\n \"name\": \"x\",\n \"ops\": {\n", "p.json");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().to_string().find("p.json:4"), std::string::npos) << syntax.status().to_string();
  auto key = parse_target("{\n \"name\": \"x\",\n \"all_ops\": true,\n \"emulate\": true\n}", "p.json");
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().to_string().find("p.json:4: key 'emulate'"), std::string::npos) << key.status().to_string();
  auto type = parse_target("{\"name\": \"x\", \"all_ops\": true, \"opset\": [18, 9]}", "p.json");
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.status().to_string().find("key 'opset'"), std::string::npos);
  auto attr = parse_target("{\"name\": \"x\", \"ops\": {\"Resize\": {\"attrs\": {\"mode\": 3}}}}", "p.json");
  ASSERT_FALSE(attr.ok());
  EXPECT_NE(attr.status().to_string().find("ops.Resize.attrs.mode"), std::string::npos) << attr.status().to_string();
  auto none = parse_target("{\"name\": \"x\"}", "p.json");
  EXPECT_FALSE(none.ok());
  auto unnamed = parse_target("{\"all_ops\": true}", "p.json");
  EXPECT_FALSE(unnamed.ok());
  EXPECT_FALSE(load_target("no-such-target").ok());
}

TEST(Targets, PlacementReasons) {
  auto t = parse_target(R"({"name": "dev", "host": "cpu", "opset": [11, 13], "dtypes": ["float32", "int64"],
    "ops": {"Relu": {}, "Resize": {"const_inputs": [2], "attrs": {"mode": {"values": ["nearest"], "default": "nearest"}}},
            "Cast": {"dtypes": {"out:0": ["float32"]}}}})", "dev.json");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  auto host = load_target("cpu");
  ASSERT_TRUE(host.ok());
  auto m = ir::parse_model(R"(opset "" 13
graph g (%x: float32[1,2,4,4], %s: float32[4])
  %a = Relu(%x)  # relu
  %b = Resize(%a, _, %s) {mode="linear"}  # rs_mode
  %c = Resize(%a, _, %s)  # rs_scales
  %d = Cast(%a) {to=7}  # cast
  %e = Sigmoid(%a)  # sig
  return %b, %c, %d, %e
)");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ASSERT_TRUE(ops::infer_graph(*(*m)->graph).ok());
  auto p = place_graph(*t, &*host, *(*m)->graph);
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0].placement, Placement::kDevice);
  EXPECT_EQ(p[1].placement, Placement::kHost);
  EXPECT_NE(p[1].reason.find("attribute mode = linear"), std::string::npos) << p[1].reason;
  EXPECT_NE(p[2].reason.find("must be a constant"), std::string::npos) << p[2].reason;
  EXPECT_NE(p[3].reason.find("int64"), std::string::npos) << p[3].reason;
  EXPECT_NE(p[4].reason.find("not in dev's operator list"), std::string::npos) << p[4].reason;
  // Without a host, the same nodes are unsupported.
  auto alone = place_graph(*t, nullptr, *(*m)->graph);
  EXPECT_EQ(alone[4].placement, Placement::kUnsupported);
}

}  // namespace
}  // namespace ferry::targets
