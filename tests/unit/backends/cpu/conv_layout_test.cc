// DnnlLayout: blocked tensors keep logical dims, describe themselves and convert back to plain exactly.
#include <gtest/gtest.h>

#include "backends/cpu/layout.h"

namespace ferry::backends::cpu {
namespace {

using tag = dnnl::memory::format_tag;

Tensor iota_tensor(std::vector<int64_t> dims) {
  Tensor t(DType::kFloat32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i) * 0.5f - 3;
  return t;
}

TEST(CpuLayout, PlainDescIsPlain) {
  auto md = plain_desc(DType::kFloat32, {2, 3, 4, 5});
  EXPECT_TRUE(is_plain_desc(md));
  EXPECT_EQ(describe_desc(md), "nchw");
  EXPECT_EQ(md.get_size(), 2u * 3 * 4 * 5 * 4);
  EXPECT_TRUE(is_plain_desc(plain_desc(DType::kFloat32, {})));  // scalars become [1]
  dnnl::memory::desc nhwc({2, 3, 4, 5}, dnnl::memory::data_type::f32, tag::nhwc);
  EXPECT_FALSE(is_plain_desc(nhwc));
  EXPECT_EQ(describe_desc(nhwc), "nhwc");
}

TEST(CpuLayout, BlockedRoundTripWithChannelPadding) {
  // C=13 pads to 16 in nChw16c; the round trip must give back exactly the plain values.
  Tensor x = iota_tensor({2, 13, 3, 5});
  dnnl::memory::desc blocked({2, 13, 3, 5}, dnnl::memory::data_type::f32, tag::nChw16c);
  auto b = reorder_to(x, blocked);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  ASSERT_FALSE(b->is_plain());
  EXPECT_EQ(b->layout()->describe(), "nChw16c");
  EXPECT_EQ(b->dims(), x.dims());
  EXPECT_EQ(blocked.get_size(), 2u * 16 * 3 * 5 * 4);
  // Element (n=0, c=1, h=0, w=0) sits at offset 1 in nChw16c.
  EXPECT_EQ(b->data<float>()[1], x.data<float>()[15]);
  auto back = b->plain();
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->is_plain());
  EXPECT_TRUE(back->same_as(x));
  // Already in the wanted layout: no copy.
  auto same = reorder_to(*b, blocked);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->raw(), b->raw());
}

TEST(CpuLayout, MakeTensorIsAlignedAndSized) {
  dnnl::memory::desc blocked({1, 3, 7, 7}, dnnl::memory::data_type::f32, tag::nChw8c);
  auto t = make_tensor_zeroed(DType::kFloat32, {1, 3, 7, 7}, blocked);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw()) % 64, 0u);
  EXPECT_EQ(t->layout()->describe(), "nChw8c");
  EXPECT_EQ(desc_of(*t), blocked);
  auto p = make_tensor(DType::kFloat32, {4, 4}, plain_desc(DType::kFloat32, {4, 4}));
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->is_plain());
}

TEST(CpuLayout, TooLargeIsAnError) {
  const int64_t old = max_tensor_bytes();
  set_max_tensor_bytes(1024);
  auto t = make_tensor(DType::kFloat32, {1, 16, 16, 16}, plain_desc(DType::kFloat32, {1, 16, 16, 16}));
  set_max_tensor_bytes(old);
  EXPECT_FALSE(t.ok());
}

TEST(CpuLayout, DescribesWeightsFormats) {
  dnnl::memory::desc w({32, 16, 3, 3}, dnnl::memory::data_type::f32, tag::OIhw16i16o);
  EXPECT_EQ(describe_desc(w), "NChw16c16n");
  Tensor x = iota_tensor({32, 16, 3, 3});
  auto b = reorder_to(x, w);
  ASSERT_TRUE(b.ok());
  auto back = b->plain();
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->same_as(x));
}

}  // namespace
}  // namespace ferry::backends::cpu
