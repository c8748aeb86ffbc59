// External data must resolve only inside the model's folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "frontend/onnx/import.h"
#include "onnx/onnx_pb.h"

namespace fs = std::filesystem;

namespace ferry::frontend {
namespace {

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ferry_ext_" + std::to_string(getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "model");
    std::ofstream(root_ / "model" / "weights.bin", std::ios::binary).write("\0\0\x80?\0\0\0@", 8);  // 1.0f, 2.0f
    std::ofstream(root_ / "secret.bin", std::ios::binary).write("\0\0\x80?\0\0\0@", 8);
  }
  void TearDown() override { fs::remove_all(root_); }

  onnx::TensorProto external(const std::string& location, int64_t offset = 0, int64_t length = 8) {
    onnx::TensorProto t;
    t.set_name("w");
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(2);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t.add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    kv = t.add_external_data();
    kv->set_key("offset");
    kv->set_value(std::to_string(offset));
    kv = t.add_external_data();
    kv->set_key("length");
    kv->set_value(std::to_string(length));
    return t;
  }
  std::string base() const { return (root_ / "model").string(); }
  fs::path root_;
};

TEST_F(ExternalData, ReadsAFileInsideTheFolder) {
  auto t = tensor_from_proto(external("weights.bin"), base());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->data<float>()[0], 1.0f);
  EXPECT_EQ(t->data<float>()[1], 2.0f);
}

TEST_F(ExternalData, RejectsAbsolutePaths) {
  auto t = tensor_from_proto(external((root_ / "secret.bin").string()), base());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().to_string().find("absolute"), std::string::npos) << t.status().to_string();
}

TEST_F(ExternalData, RejectsDotDot) {
  auto t = tensor_from_proto(external("../secret.bin"), base());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().to_string().find(".."), std::string::npos);
}

TEST_F(ExternalData, RejectsSymlinks) {
  fs::create_symlink(root_ / "secret.bin", root_ / "model" / "link.bin");
  auto t = tensor_from_proto(external("link.bin"), base());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().to_string().find("symlink"), std::string::npos);
}

TEST_F(ExternalData, RejectsRangesPastTheEnd) {
  auto t = tensor_from_proto(external("weights.bin", 4, 8), base());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().to_string().find("past the end"), std::string::npos) << t.status().to_string();
  auto big = tensor_from_proto(external("weights.bin", int64_t{1} << 40, 8), base());
  ASSERT_FALSE(big.ok());
}

TEST_F(ExternalData, RejectsLengthMismatch) {
  auto t = tensor_from_proto(external("weights.bin", 0, 4), base());
  ASSERT_FALSE(t.ok());
}

TEST(TensorProto, RejectsStringsAndShortRawData) {
  onnx::TensorProto s;
  s.set_data_type(onnx::TensorProto::STRING);
  auto r = tensor_from_proto(s, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("string"), std::string::npos);

  onnx::TensorProto t;
  t.set_name("x");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(4);
  t.set_raw_data(std::string(8, '\0'));
  auto r2 = tensor_from_proto(t, "");
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().to_string().find("raw_data"), std::string::npos);
}

TEST(TensorProto, AbsurdDimsAreAnError) {
  onnx::TensorProto t;
  t.set_name("huge");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(int64_t{1} << 40);
  auto r = tensor_from_proto(t, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("huge"), std::string::npos);
}

}  // namespace
}  // namespace ferry::frontend
