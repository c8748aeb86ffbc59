// Runs every tests/passes/*.ir fixture. A fixture is IR text (docs/ir.md) with directives in '//'
// comments (docs/passes.md):
//   // pass: NAME            passes to run, in order (or  // level: N  for the whole pipeline)
//   // input_shape: x=1,3,8,8
//   // expect: count OP N     number of nodes of op type OP after the passes
//   // expect: unchanged      the printed graph is the same before and after
//   // expect: changes N      total rewrites the passes reported
//   // expect: provenance OP a b c    the (first) OP node's provenance, in order
//   // expect: attr OP KEY TEXT       the (first) OP node's attribute KEY prints as TEXT
//   // expect: outputs a b    the graph output names after the passes
// Every fixture is also run before and after on the reference backend with random inputs and must
// agree within 1e-5 relative.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "pass_test_util.h"
#include "passes/passes.h"

namespace ferry::passes::testing {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

std::string attr_text(const ir::Node& n, const std::string& key) {
  // Print just this node to reuse the printer's attribute text: "{key=value, ...}".
  ir::Graph tmp;
  ir::Node* c = tmp.add_node(n.op_type, n.name);
  c->domain = n.domain;
  c->attrs = {{key, n.attrs.at(key)}};
  std::string text = ir::print_graph(tmp);
  size_t b = text.find(key + "=");
  size_t e = text.find("}", b);
  return text.substr(b + key.size() + 1, e - b - key.size() - 1);
}

class Fixture : public ::testing::TestWithParam<std::string> {};

TEST_P(Fixture, Passes) {
  const std::string path = GetParam();
  std::ifstream f(path);
  std::stringstream buf;
  buf << f.rdbuf();
  const std::string text = buf.str();
  std::vector<std::string> passes, expects;
  int level = -1;
  OptimizeOptions opts;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto w = split(line);
    if (w.size() < 2 || w[0] != "//") continue;
    if (w[1] == "pass:") passes.insert(passes.end(), w.begin() + 2, w.end());
    else if (w[1] == "level:" && w.size() > 2) level = std::stoi(w[2]);
    else if (w[1] == "expect:") expects.push_back(line.substr(line.find("expect:") + 8));
    else if (w[1] == "input_shape:" && w.size() > 2) {
      auto eq = w[2].find('=');
      std::vector<int64_t> dims;
      std::stringstream ds(w[2].substr(eq + 1));
      std::string d;
      while (std::getline(ds, d, ',')) dims.push_back(std::stoll(d));
      opts.input_shapes[w[2].substr(0, eq)] = dims;
    }
  }
  ASSERT_TRUE(!passes.empty() || level >= 0) << path << ": no '// pass:' or '// level:' line";
  auto before = parse(text);
  auto after = parse(text);
  ASSERT_TRUE(before && after);
  // Both copies get the fixed input shapes; only `after` gets the passes.
  OptimizeOptions fix = opts;
  fix.opt_level = 0;
  ASSERT_TRUE(optimize(*before, fix).ok());
  ASSERT_TRUE(optimize(*after, fix).ok());
  const std::string printed_before = ir::print_model(*after);
  int changes = 0;
  if (level >= 0) {
    opts.opt_level = level;
    std::vector<PassReport> report;
    Status st = optimize(*after, opts, &report);
    ASSERT_TRUE(st.ok()) << st.to_string();
    for (const auto& r : report) changes += r.changes;
  }
  PassContext ctx{&opts, after.get()};
  for (const auto& name : passes) {
    PassFn fn = pass_by_name(name);
    ASSERT_NE(fn, nullptr) << "unknown pass " << name;
    auto r = fn(*after->graph, ctx);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().to_string();
    changes += *r;
    Status st = ir::verify(*after->graph);
    ASSERT_TRUE(st.ok()) << name << ": " << st.to_string();
    st = ops::infer_graph(*after->graph);
    ASSERT_TRUE(st.ok()) << name << ": " << st.to_string();
  }
  const std::string printed_after = ir::print_model(*after);
  SCOPED_TRACE(path + "\nafter:\n" + printed_after);
  // The printed result parses back (the text form keeps up with what passes produce).
  ASSERT_TRUE(ir::parse_model(printed_after).ok()) << ir::parse_model(printed_after).status().to_string();
  const ir::Graph& g = *after->graph;
  for (const std::string& e : expects) {
    auto w = split(e);
    ASSERT_FALSE(w.empty());
    if (w[0] == "count" && w.size() == 3) {
      EXPECT_EQ(count_op(g, w[1]), std::stoi(w[2])) << e;
    } else if (w[0] == "unchanged") {
      EXPECT_EQ(printed_after, printed_before);
      EXPECT_EQ(changes, 0);
    } else if (w[0] == "changes" && w.size() == 2) {
      EXPECT_EQ(changes, std::stoi(w[1]));
    } else if (w[0] == "provenance" && w.size() >= 2) {
      const ir::Node* n = find_op(g, w[1]);
      ASSERT_NE(n, nullptr) << e;
      EXPECT_EQ(n->provenance, std::vector<std::string>(w.begin() + 2, w.end())) << e;
    } else if (w[0] == "attr" && w.size() >= 4) {
      const ir::Node* n = find_op(g, w[1]);
      ASSERT_NE(n, nullptr) << e;
      ASSERT_TRUE(n->has_attr(w[2])) << e;
      std::string want = e.substr(e.find(w[2], e.find(w[1]) + w[1].size()) + w[2].size() + 1);
      EXPECT_EQ(attr_text(*n, w[2]), want) << e;
    } else if (w[0] == "outputs") {
      std::vector<std::string> names;
      for (const ir::Value* v : g.outputs) names.push_back(v->name);
      EXPECT_EQ(names, std::vector<std::string>(w.begin() + 1, w.end())) << e;
    } else {
      ADD_FAILURE() << "unknown expectation: " << e;
    }
  }
  // Numerics: same outputs on the reference backend.
  auto inputs = random_inputs(*before->graph);
  expect_close(run_reference(std::move(after), inputs), run_reference(std::move(before), inputs), 1e-5);
}

std::vector<std::string> fixture_files() {
  std::vector<std::string> out;
  const std::filesystem::path dir = std::filesystem::path(FERRY_SOURCE_DIR) / "tests" / "passes";
  if (std::filesystem::exists(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".ir") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ir, Fixture, ::testing::ValuesIn(fixture_files()), [](const auto& info) {
  std::string n = std::filesystem::path(info.param).stem().string();
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

TEST(Fixture, DirectoryHasFixtures) { EXPECT_GE(fixture_files().size(), 10u); }

}  // namespace
}  // namespace ferry::passes::testing
