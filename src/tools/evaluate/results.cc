#include "tools/evaluate/results.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace ferry::tools::evaluate {

namespace {

template <class T>
void put_opt(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}
template <class T>
std::optional<T> get_opt(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<T>();
}

// Cosine ranks as a distance; NaN (a non-finite output) ranks worst.
double cosine_key(double c) { return std::isnan(c) ? -INFINITY : c; }

}  // namespace

bool SampleResult::flipped() const {
  for (auto& o : outputs)
    if (o.golden_class && o.target_class && *o.golden_class != *o.target_class) return true;
  return false;
}

double SampleResult::worst_cosine() const {
  double w = 1;
  for (auto& o : outputs) w = std::min(w, cosine_key(o.cosine));
  return w;
}

double SampleResult::worst_rel_euclid() const {
  double w = 0;
  for (auto& o : outputs) w = std::max(w, std::isnan(o.rel_euclid) ? INFINITY : o.rel_euclid);
  return w;
}

bool worse(const SampleResult& a, const SampleResult& b) {
  return std::make_tuple(!a.flipped(), a.worst_cosine(), -a.worst_rel_euclid(), a.id) <
         std::make_tuple(!b.flipped(), b.worst_cosine(), -b.worst_rel_euclid(), b.id);
}

nlohmann::json to_json(const SampleResult& s) {
  nlohmann::json outs = nlohmann::json::array();
  for (auto& o : s.outputs) {
    nlohmann::json j = {{"name", o.name},         {"cosine", json_number(o.cosine)},        {"max_abs", json_number(o.max_abs)},
                        {"max_rel", json_number(o.max_rel)}, {"rel_euclid", json_number(o.rel_euclid)}, {"pass", o.pass},
                        {"nonfinite", o.nonfinite}};
    put_opt(j, "golden_class", o.golden_class);
    put_opt(j, "target_class", o.target_class);
    put_opt(j, "top5_agree", o.top5_agree);
    if (!o.golden_top5.empty()) j["golden_top5"] = o.golden_top5;
    if (!o.target_top5.empty()) j["target_top5"] = o.target_top5;
    outs.push_back(std::move(j));
  }
  nlohmann::json j = {{"index", s.index}, {"id", s.id}, {"outputs", outs}, {"flipped", s.flipped()}};
  if (!s.path.empty()) j["path"] = s.path;
  put_opt(j, "label", s.label);
  put_opt(j, "golden_top1_correct", s.golden_top1_correct);
  put_opt(j, "target_top1_correct", s.target_top1_correct);
  put_opt(j, "golden_top5_correct", s.golden_top5_correct);
  put_opt(j, "target_top5_correct", s.target_top5_correct);
  if (!s.replay.empty()) j["replay"] = s.replay;
  return j;
}

Result<SampleResult> sample_from_json(const nlohmann::json& j, const std::string& where) {
  try {
    SampleResult s;
    s.index = j.at("index").get<int64_t>();
    s.id = j.at("id").get<std::string>();
    s.path = j.value("path", "");
    s.replay = j.value("replay", "");
    s.label = get_opt<int64_t>(j, "label");
    s.golden_top1_correct = get_opt<bool>(j, "golden_top1_correct");
    s.target_top1_correct = get_opt<bool>(j, "target_top1_correct");
    s.golden_top5_correct = get_opt<bool>(j, "golden_top5_correct");
    s.target_top5_correct = get_opt<bool>(j, "target_top5_correct");
    for (auto& o : j.at("outputs")) {
      OutputResult r;
      r.name = o.at("name").get<std::string>();
      r.cosine = number_from_json(o.at("cosine"));
      r.max_abs = number_from_json(o.at("max_abs"));
      r.max_rel = number_from_json(o.at("max_rel"));
      r.rel_euclid = number_from_json(o.at("rel_euclid"));
      r.pass = o.at("pass").get<bool>();
      r.nonfinite = o.value("nonfinite", false);
      r.golden_class = get_opt<int64_t>(o, "golden_class");
      r.target_class = get_opt<int64_t>(o, "target_class");
      r.top5_agree = get_opt<bool>(o, "top5_agree");
      r.golden_top5 = o.value("golden_top5", std::vector<int64_t>{});
      r.target_top5 = o.value("target_top5", std::vector<int64_t>{});
      s.outputs.push_back(std::move(r));
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid(where + ": not a ferry evaluate sample (" + e.what() + ")");
  }
}

void Aggregate::add(const SampleResult& s) {
  if (outputs_.empty())
    for (auto& o : s.outputs) outputs_.push_back(OutputStats{o.name});
  ++samples_;
  for (size_t i = 0; i < s.outputs.size() && i < outputs_.size(); ++i) {
    const OutputResult& o = s.outputs[i];
    OutputStats& st = outputs_[i];
    ++st.samples;
    st.passed += o.pass;
    st.nonfinite += o.nonfinite;
    st.cosine_distance.add(std::isnan(o.cosine) ? NAN : 1.0 - o.cosine);
    st.max_abs.add(o.max_abs);
    st.max_rel.add(o.max_rel);
    st.rel_euclid.add(o.rel_euclid);
    if (o.golden_class && o.target_class) {
      ++st.classifier_samples;
      st.top1_agree += *o.golden_class == *o.target_class;
    }
    if (o.top5_agree) {
      ++st.top5_samples;
      st.top5_agree += *o.top5_agree;
    }
  }
  if (s.golden_top1_correct) {
    ++labels_.labelled;
    labels_.golden_top1 += *s.golden_top1_correct;
    labels_.target_top1 += s.target_top1_correct.value_or(false);
    labels_.golden_top5 += s.golden_top5_correct.value_or(false);
    labels_.target_top5 += s.target_top5_correct.value_or(false);
  }
  keep_worst(s);
}

bool Aggregate::would_keep(const SampleResult& s) const {
  return worst_n_ > 0 && (static_cast<int>(worst_.size()) < worst_n_ || worse(s, worst_.back()));
}

void Aggregate::keep_worst(const SampleResult& s) {
  if (!would_keep(s)) return;
  worst_.insert(std::upper_bound(worst_.begin(), worst_.end(), s, worse), s);
  if (static_cast<int>(worst_.size()) > worst_n_) worst_.pop_back();
}

Status Aggregate::merge(const Aggregate& o, const std::string& where) {
  if (o.samples_ == 0) return Status();
  if (samples_ == 0 && outputs_.empty()) {
    for (auto& st : o.outputs_) outputs_.push_back(OutputStats{st.name});
  }
  if (o.outputs_.size() != outputs_.size())
    return Status::invalid(where + ": its model has other outputs than the rest (" + std::to_string(o.outputs_.size()) +
                           " vs " + std::to_string(outputs_.size()) + ")");
  for (size_t i = 0; i < outputs_.size(); ++i) {
    OutputStats& a = outputs_[i];
    const OutputStats& b = o.outputs_[i];
    if (a.name != b.name)
      return Status::invalid(where + ": output " + std::to_string(i) + " is '" + b.name + "', not '" + a.name + "'");
    a.samples += b.samples;
    a.passed += b.passed;
    a.nonfinite += b.nonfinite;
    a.classifier_samples += b.classifier_samples;
    a.top1_agree += b.top1_agree;
    a.top5_samples += b.top5_samples;
    a.top5_agree += b.top5_agree;
    a.cosine_distance.merge(b.cosine_distance);
    a.max_abs.merge(b.max_abs);
    a.max_rel.merge(b.max_rel);
    a.rel_euclid.merge(b.rel_euclid);
  }
  labels_.labelled += o.labels_.labelled;
  labels_.golden_top1 += o.labels_.golden_top1;
  labels_.target_top1 += o.labels_.target_top1;
  labels_.golden_top5 += o.labels_.golden_top5;
  labels_.target_top5 += o.labels_.target_top5;
  samples_ += o.samples_;
  worst_n_ = std::max(worst_n_, o.worst_n_);
  for (auto& s : o.worst_) keep_worst(s);
  return Status();
}

namespace {

nlohmann::json fraction(int64_t num_, int64_t den) {
  return den ? nlohmann::json(static_cast<double>(num_) / static_cast<double>(den)) : nlohmann::json(nullptr);
}

nlohmann::json error_percentiles(const QuantileSketch& s) {
  return {{"p50", json_number(s.quantile(0.5))}, {"p90", json_number(s.quantile(0.9))}, {"p99", json_number(s.quantile(0.99))},
          {"p99.9", json_number(s.quantile(0.999))}, {"max", json_number(s.max())}};
}

nlohmann::json cosine_percentiles(const QuantileSketch& d) {
  // Low cosine is bad: the low percentiles of cosine are the high ones of the distance.
  return {{"min", json_number(1 - d.max())},         {"p0.1", json_number(1 - d.quantile(0.999))}, {"p1", json_number(1 - d.quantile(0.99))},
          {"p10", json_number(1 - d.quantile(0.9))}, {"p50", json_number(1 - d.quantile(0.5))},    {"max", json_number(1 - d.min())}};
}

}  // namespace

nlohmann::json Aggregate::to_json() const {
  nlohmann::json outs = nlohmann::json::array();
  for (auto& st : outputs_) {
    nlohmann::json j = {{"name", st.name},
                        {"samples", st.samples},
                        {"passed", st.passed},
                        {"nonfinite_samples", st.nonfinite},
                        {"cosine", cosine_percentiles(st.cosine_distance)},
                        {"max_abs", error_percentiles(st.max_abs)},
                        {"max_rel", error_percentiles(st.max_rel)},
                        {"rel_euclid", error_percentiles(st.rel_euclid)},
                        {"sketches",
                         {{"cosine_distance", st.cosine_distance.to_json()},
                          {"max_abs", st.max_abs.to_json()},
                          {"max_rel", st.max_rel.to_json()},
                          {"rel_euclid", st.rel_euclid.to_json()}}}};
    if (st.classifier_samples) {
      j["classifier_samples"] = st.classifier_samples;
      j["top1_agree"] = st.top1_agree;
      j["top1_agreement"] = fraction(st.top1_agree, st.classifier_samples);
      j["top5_samples"] = st.top5_samples;
      j["top5_agree"] = st.top5_agree;
      j["top5_agreement"] = fraction(st.top5_agree, st.top5_samples);
    }
    outs.push_back(std::move(j));
  }
  nlohmann::json worst = nlohmann::json::array();
  for (auto& s : worst_) worst.push_back(evaluate::to_json(s));
  nlohmann::json j = {{"samples", samples_}, {"outputs", outs}, {"worst_n", worst_n_}, {"worst", worst}};
  if (labels_.labelled)
    j["labels"] = {{"labelled", labels_.labelled},
                   {"golden_top1", labels_.golden_top1},
                   {"target_top1", labels_.target_top1},
                   {"golden_top5", labels_.golden_top5},
                   {"target_top5", labels_.target_top5},
                   {"golden_top1_accuracy", fraction(labels_.golden_top1, labels_.labelled)},
                   {"target_top1_accuracy", fraction(labels_.target_top1, labels_.labelled)},
                   {"golden_top5_accuracy", fraction(labels_.golden_top5, labels_.labelled)},
                   {"target_top5_accuracy", fraction(labels_.target_top5, labels_.labelled)}};
  return j;
}

Result<Aggregate> Aggregate::from_json(const nlohmann::json& j, const std::string& where) {
  try {
    Aggregate a(j.at("worst_n").get<int>());
    a.samples_ = j.at("samples").get<int64_t>();
    for (auto& o : j.at("outputs")) {
      OutputStats st{o.at("name").get<std::string>()};
      st.samples = o.at("samples").get<int64_t>();
      st.passed = o.at("passed").get<int64_t>();
      st.nonfinite = o.at("nonfinite_samples").get<int64_t>();
      st.classifier_samples = o.value("classifier_samples", int64_t{0});
      st.top1_agree = o.value("top1_agree", int64_t{0});
      st.top5_samples = o.value("top5_samples", int64_t{0});
      st.top5_agree = o.value("top5_agree", int64_t{0});
      auto& sk = o.at("sketches");
      const std::string w = where + ": output " + st.name;
      struct Slot {
        const char* key;
        QuantileSketch* dst;
      };
      for (Slot slot : {Slot{"cosine_distance", &st.cosine_distance}, Slot{"max_abs", &st.max_abs},
                        Slot{"max_rel", &st.max_rel}, Slot{"rel_euclid", &st.rel_euclid}}) {
        auto s = QuantileSketch::from_json(sk.at(slot.key), w + " " + slot.key);
        if (!s.ok()) return s.status();
        *slot.dst = std::move(*s);
      }
      a.outputs_.push_back(std::move(st));
    }
    if (j.contains("labels")) {
      auto& l = j.at("labels");
      a.labels_ = {l.at("labelled").get<int64_t>(), l.at("golden_top1").get<int64_t>(),
                   l.at("target_top1").get<int64_t>(), l.at("golden_top5").get<int64_t>(),
                   l.at("target_top5").get<int64_t>()};
    }
    for (auto& s : j.at("worst")) {
      auto r = sample_from_json(s, where + ": worst case");
      if (!r.ok()) return r.status();
      a.worst_.push_back(std::move(*r));
    }
    std::sort(a.worst_.begin(), a.worst_.end(), worse);
    return a;
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid(where + ": not a ferry evaluate aggregate (" + e.what() + ")");
  }
}

}  // namespace ferry::tools::evaluate
