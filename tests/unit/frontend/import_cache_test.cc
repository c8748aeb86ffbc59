// frontend::ImportCache: while one lives, a file is read and imported once and every load gets its own
// copy; looser loads (inspect's, check's) use a stricter import;
// without a cache every load reads the file.
#include <gtest/gtest.h>

#include <fstream>

#include "frontend/onnx/import.h"
#include "unit/format/format_test_util.h"

namespace ferry::frontend {
namespace {

using format::testing::TempDir;

std::string write_model(TempDir& tmp, const std::string& name) {
  const std::string path = tmp.file(name);
  std::ofstream f(path, std::ios::binary);
  f << format::testing::runnable_onnx_model(false);
  return path;
}

TEST(ImportCache, ReadsAFileOnceAndHandsOutCopies) {
  TempDir tmp;
  const std::string path = write_model(tmp, "m.onnx");
  const int64_t before = onnx_files_imported();
  {
    ImportCache cache;
    auto a = load_onnx(path);
    auto b = load_onnx(path);
    ImportOptions loose;
    loose.check_ops = false;
    auto c = load_onnx(path, loose);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ(onnx_files_imported() - before, 1);
    EXPECT_NE((*a)->graph.get(), (*b)->graph.get());
    EXPECT_EQ(ir::print_model(**a), ir::print_model(**b));
    (*a)->graph->nodes[0]->op_type = "Changed";  // a copy: the next load does not see it
    auto d = load_onnx(path);
    ASSERT_TRUE(d.ok());
    EXPECT_NE((*d)->graph->nodes[0]->op_type, "Changed");
    EXPECT_EQ(onnx_files_imported() - before, 1);
  }
  auto e = load_onnx(path);  // the cache is gone: read again
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(onnx_files_imported() - before, 2);
}

TEST(ImportCache, AStricterLoadAfterALooserOneImportsAgain) {
  TempDir tmp;
  const std::string path = write_model(tmp, "m.onnx");
  ImportCache cache;
  const int64_t before = onnx_files_imported();
  ImportOptions loose;
  loose.check_ops = false;
  ASSERT_TRUE(load_onnx(path, loose).ok());
  ASSERT_TRUE(load_onnx(path).ok());  // must check the ops, which the loose import did not
  EXPECT_EQ(onnx_files_imported() - before, 2);
  ASSERT_TRUE(load_onnx(path, loose).ok());
  EXPECT_EQ(onnx_files_imported() - before, 2);
}

}  // namespace
}  // namespace ferry::frontend
