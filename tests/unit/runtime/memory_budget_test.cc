// The memory budget: sizes parsed and printed, a model whose declared shapes or plan exceed the budget
// refused at load with the figure, and a run-time tensor past it refused by name.
#include <gtest/gtest.h>

#include "core/byte_size.h"
#include "runtime/memory_budget.h"
#include "tiny_model.h"

namespace ferry::runtime {
namespace {

using testing::TinyModel;

TEST(ByteSize, ParsesUnitsBinaryAndDecimal) {
  EXPECT_EQ(parse_byte_size("2000000000").value(), 2000000000);
  EXPECT_EQ(parse_byte_size("8G").value(), int64_t{8} << 30);
  EXPECT_EQ(parse_byte_size("8GiB").value(), int64_t{8} << 30);
  EXPECT_EQ(parse_byte_size("8 gb").value(), 8000000000);
  EXPECT_EQ(parse_byte_size("512M").value(), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("1.5K").value(), 1536);
  EXPECT_EQ(parse_byte_size("3t").value(), int64_t{3} << 40);
  EXPECT_EQ(parse_byte_size("100B").value(), 100);
  for (const char* bad : {"", "G", "-1G", "0", "8X", "8GiBs", "1e30", "nan"}) {
    auto r = parse_byte_size(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos);
  }
}

TEST(ByteSize, PrintsBinaryUnits) {
  EXPECT_EQ(byte_size_text(17), "17 B");
  EXPECT_EQ(byte_size_text(1536), "1.50 KiB");
  EXPECT_EQ(byte_size_text(double(int64_t{1} << 42)), "4.00 TiB");
  EXPECT_EQ(byte_size_text(200.0 * (1 << 20)), "200 MiB");
}

TEST(MemoryBudget, DefaultIsPhysicalMemory) {
  EXPECT_EQ(memory_budget(0), physical_memory_bytes());
  EXPECT_EQ(memory_budget(12345), 12345);
}

// x[1] -> Expand to [2^40] -> ReduceSum: a 4 TiB intermediate declared by shape inference.
TinyModel huge_intermediate() {
  TinyModel m;
  m.input("x", {1}).initializer_i64("shape", {int64_t{1} << 40});
  m.node("Expand", {"x", "shape"}, {"big"}, "expand");
  m.node("ReduceSum", {"big"}, {"y"}, "sum");
  m.output("y");
  return m;
}

TEST(MemoryBudget, RefusesA2To40ElementIntermediateAtLoadWithTheFigure) {
  auto s = huge_intermediate().session();
  ASSERT_FALSE(s.ok());
  const std::string msg = s.status().to_string();
  EXPECT_NE(msg.find("value 'big' (output of Expand 'expand')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32[1099511627776]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4.00 TiB (4398046511104 bytes)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("memory budget"), std::string::npos) << msg;
}

// x[1, 1024] -> Relu -> Relu -> y: 4 KiB intermediates, 8 KiB with both.
TinyModel two_relus(int64_t width) {
  TinyModel m;
  m.input("x", {1, width});
  m.node("Relu", {"x"}, {"a"}, "relu0");
  m.node("Relu", {"a"}, {"b"}, "relu1");
  m.node("Relu", {"b"}, {"y"}, "relu2");
  m.output("y");
  return m;
}

TEST(MemoryBudget, ExplicitBudgetRefusesADeclaredValueAndAcceptsWhatFits) {
  SessionOptions so;
  so.max_memory = 1000;  // less than one 4 KiB tensor
  auto s = two_relus(1024).session(so);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().to_string().find("4.00 KiB (4096 bytes), more than the memory budget of 1000 B (--max-memory)"),
            std::string::npos)
      << s.status().to_string();
  so.max_memory = 1 << 20;
  EXPECT_TRUE(two_relus(1024).session(so).ok());
}

TEST(MemoryBudget, PlannedArenaPlusWeightsAgainstTheBudget) {
  EXPECT_TRUE(check_planned_memory(600, 300, 1000).ok());
  Status st = check_planned_memory(600, 500, 1000);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("the memory plan needs 1.07 KiB (1100 bytes) (intermediates 600 B, weights 500 B)"),
            std::string::npos)
      << st.message();
}

TEST(MemoryBudget, RunTimeTensorsOfDynamicShapesStayWithinTheBudget) {
  SessionOptions so;
  so.max_memory = 64 << 10;
  auto s = two_relus(-1).session(so);  // [1, batch]: nothing to refuse at load
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto small = Tensor::create(DType::kFloat32, {1, 1024});
  ASSERT_TRUE((*s)->run_tensors({{"x", *small}}).ok());
  auto big = Tensor::create(DType::kFloat32, {1, 32768});  // 128 KiB per intermediate
  auto r = (*s)->run_tensors({{"x", *big}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("memory budget"), std::string::npos) << r.status().to_string();
  // The budget is the session's: outside its run, tensors are limited only per tensor.
  EXPECT_TRUE(Tensor::create(DType::kFloat32, {1, 32768}).ok());
}

}  // namespace
}  // namespace ferry::runtime
