// One session shared by 8 threads: every run, with its own inputs, gives what the same input gives in a
// serial run (runs take turns on the session's arena; nothing else is shared unguarded). Built with
// -DFERRY_SANITIZE=thread, ThreadSanitizer checks the same run for data races (scripts/sanitize.sh).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "tiny_model.h"

namespace ferry::runtime {
namespace {

using testing::TinyModel;

// A conv net with a dynamic batch (x: [batch, 3, 8, 8]): conv, relu, pool, flatten, gemm, softmax.
TinyModel conv_net() {
  TinyModel m;
  std::vector<float> w(4 * 3 * 3 * 3), fc(4 * 16 * 10);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 37) % 17) / 17.0f - 0.5f;
  for (size_t i = 0; i < fc.size(); ++i) fc[i] = static_cast<float>((i * 53) % 29) / 29.0f - 0.5f;
  m.input("x", {-1, 3, 8, 8}).initializer("w", w, {4, 3, 3, 3}).initializer("fc", fc, {64, 10});
  auto& conv = m.node("Conv", {"x", "w"}, {"c"}, "conv");
  auto* pads = conv.add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  m.node("Relu", {"c"}, {"r"}, "relu");
  auto& pool = m.node("MaxPool", {"r"}, {"p"}, "pool");
  for (const char* name : {"kernel_shape", "strides"}) {
    auto* a = pool.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(2);
    a->add_ints(2);
  }
  m.node("Flatten", {"p"}, {"f"}, "flatten");
  m.node("MatMul", {"f", "fc"}, {"logits"}, "fc");
  m.node("Softmax", {"logits"}, {"y"}, "softmax");
  m.output("y");
  return m;
}

Tensor input_for(int thread, int run) {
  const int64_t batch = 1 + (thread + run) % 3;  // shapes vary between concurrent runs too
  Tensor t = Tensor::create(DType::kFloat32, {batch, 3, 8, 8}).value();
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(((i + 1) * (thread * 31 + run * 7 + 3)) % 101) / 50.0f - 1;
  return t;
}

// Thread t's `runs` runs on `session`, their outputs appended to `out`; the first error's text, or "".
std::string run_thread(Session& session, int t, int runs, std::vector<Tensor>& out) {
  for (int r = 0; r < runs; ++r) {
    auto result = session.run_tensors({{"x", input_for(t, r)}});
    if (!result.ok()) return result.status().to_string();
    out.push_back(result->at(0).second);
  }
  return "";
}

TEST(SessionThreads, EightThreadsOnOneSessionGiveTheSerialOutputs) {
  constexpr int kThreads = 8, kRuns = 12;
  for (const char* backend : {"cpu", "reference"}) {
    SessionOptions so;
    so.backend = backend;
    so.opt_level = 2;
    so.backend_options.threads = 1;  // the threads here are the callers'; libgomp is not TSan-instrumented
    auto s = conv_net().session(so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    Session& session = **s;
    std::vector<std::vector<Tensor>> serial(kThreads);
    for (int t = 0; t < kThreads; ++t) ASSERT_EQ(run_thread(session, t, kRuns, serial[t]), "");
    std::vector<std::vector<Tensor>> concurrent(kThreads);
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] { errors[t] = run_thread(session, t, kRuns, concurrent[t]); });
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_TRUE(errors[t].empty()) << backend << " thread " << t << ": " << errors[t];
      ASSERT_EQ(concurrent[t].size(), static_cast<size_t>(kRuns));
      for (int r = 0; r < kRuns; ++r) {
        const Tensor& a = serial[t][r];
        const Tensor& b = concurrent[t][r];
        ASSERT_EQ(a.dims(), b.dims());
        EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << backend << " thread " << t << " run " << r;
      }
    }
  }
}

// The advice for parallel runs: one session per thread. Sessions made and run at once on 4 threads
// (process-wide state: op and kernel tables, the import cache, oneDNN's engine) give the serial outputs.
TEST(SessionThreads, OneSessionPerThreadGivesTheSerialOutputs) {
  constexpr int kThreads = 4, kRuns = 6;
  SessionOptions so;
  so.opt_level = 2;
  so.backend_options.threads = 1;
  auto reference = conv_net().session(so);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  std::vector<std::vector<Tensor>> serial(kThreads), concurrent(kThreads);
  for (int t = 0; t < kThreads; ++t) ASSERT_EQ(run_thread(**reference, t, kRuns, serial[t]), "");
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto s = conv_net().session(so);
      errors[t] = s.ok() ? run_thread(**s, t, kRuns, concurrent[t]) : s.status().to_string();
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
    ASSERT_EQ(concurrent[t].size(), static_cast<size_t>(kRuns));
    for (int r = 0; r < kRuns; ++r)
      EXPECT_EQ(std::memcmp(serial[t][r].raw(), concurrent[t][r].raw(), serial[t][r].nbytes()), 0)
          << "thread " << t << " run " << r;
  }
}

}  // namespace
}  // namespace ferry::runtime
