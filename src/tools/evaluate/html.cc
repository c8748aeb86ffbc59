// OUT/report.html for `ferry evaluate`: one self-contained page drawn from the report's JSON (inline CSS
// and SVG, thumbnails as data URIs, no script, no network): the verdict, each output's error
// distributions, label accuracy side by side, the worst cases with their thumbnails and replay commands,
// and where the time went.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/text_file.h"
#include "tools/evaluate/evaluate.h"
#include "tools/html.h"

namespace ferry::tools::evaluate {

using nlohmann::json;
using namespace html;  // NOLINT: the page is all html helpers

namespace {

// A histogram of a sketch's values on a log axis (quarter-decade bins), zeros in their own bar.
std::string distribution(const json& sketch, const std::string& label, const char* colour) {
  const json keys = arr(sketch, "keys"), counts = arr(sketch, "counts");
  std::map<int, int64_t> bins;  // quarter decades
  for (size_t i = 0; i < keys.size() && i < counts.size(); ++i) {
    const double v = QuantileSketch::bucket_value(keys[i].get<int>());
    bins[static_cast<int>(std::floor(std::log10(v) * 4))] += counts[i].get<int64_t>();
  }
  const int64_t zeros = static_cast<int64_t>(dbl(sketch, "zeros", 0));
  if (bins.empty() && zeros == 0) return "<p class=\"note\">no samples</p>";
  const int W = 540, H = 180, L = 40, B = 34, T = 18;
  const int lo = bins.empty() ? 0 : bins.begin()->first, hi = bins.empty() ? 0 : bins.rbegin()->first;
  const int nbins = hi - lo + 1 + (zeros ? 1 : 0);
  int64_t mx = zeros;
  for (auto& [b, c] : bins) mx = std::max(mx, c);
  const double bw = static_cast<double>(W - L - 10) / nbins;
  std::string s = fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"49%\" role=\"img\" aria-label=\"{}\">", W, H, esc(label));
  s += fmt::format("<text x=\"{}\" y=\"12\" font-size=\"12\" font-weight=\"600\">{}</text>", L, esc(label));
  auto bar = [&](int slot, int64_t c) {
    const double h = (H - B - T) * static_cast<double>(c) / static_cast<double>(std::max<int64_t>(mx, 1));
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}</title></rect>",
                     L + slot * bw, H - B - h, std::max(bw - 1, 1.0), h, colour, c);
  };
  int slot = 0;
  if (zeros) {
    bar(slot, zeros);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">0</text>", L + bw / 2, H - B + 12);
    ++slot;
  }
  for (int b = lo; b <= hi; ++b, ++slot) {
    auto it = bins.find(b);
    if (it != bins.end()) bar(slot, it->second);
    if (b % 4 == 0)
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">1e{}</text>", L + slot * bw,
                       H - B + 12, b / 4);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\">samples (max {})</text>", 2, T + 10, mx);
  s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">log scale</text>", (L + W) / 2, H - 4);
  return s + "</svg>";
}

std::string percent(const json& v) { return v.is_number() ? fmt::format("{:.2f}%", 100 * v.get<double>()) : "-"; }

// Cosine rows read from the worst end (min, low percentiles); error rows from the median up to the max.
std::string percentile_row(const char* name, const json& p) {
  static const std::vector<const char*> cosine_keys = {"min", "p0.1", "p1", "p10", "p50", "max"};
  static const std::vector<const char*> error_keys = {"p50", "p90", "p99", "p99.9", "max"};
  const bool cosine = std::string(name) == "cosine";
  std::string s = std::string("<tr><td>") + name + "</td>";
  for (const char* k : cosine ? cosine_keys : error_keys) {
    if (!p.contains(k)) continue;
    const json& v = p[k];
    s += "<td>" + esc(k) + " " + (!v.is_number() ? text(v) : cosine ? fmt::format("{:.6f}", v.get<double>()) : fmt::format("{:.4g}", v.get<double>())) + "</td>";
  }
  return s + "</tr>";
}

// A 96-pixel thumbnail of an image sample as the model saw it (after resize and crop), or "".
std::string thumbnail(const SampleResult& s, const PreprocessSpec* spec) {
  if (s.path.empty() || !is_image_path(s.path)) return "";
  auto img = decode_image(s.path);
  if (!img.ok()) return "";
  Image shown = *img;
  if (spec) {
    auto geo = apply_geometry(*img, *spec, s.path);
    if (geo.ok()) shown = std::move(*geo);
  }
  auto png = encode_png(resize_shorter(shown, 96));
  if (!png.ok()) return "";
  return "<img alt=\"" + esc(s.id) + "\" src=\"" + png_data_uri(*png) + "\">";
}

std::string timing_bars(const json& t) {
  struct Part {
    const char* name;
    double s;
    const char* colour;
  } parts[] = {{"golden", dbl(t, "golden_s", 0), "#4c78a8"},
               {"target", dbl(t, "target_s", 0), "#f58518"},
               {"data (work, all threads)", dbl(t, "data_work_s", 0), "#72b7b2"},
               {"waiting for data", dbl(t, "data_wait_s", 0), "#e45756"}};
  double mx = 1e-9;
  for (auto& p : parts) mx = std::max(mx, p.s);
  const int W = 1100, row = 22, L = 200;
  std::string s = fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"time\">", W, 4 * row + 6);
  int i = 0;
  for (auto& p : parts) {
    const double w = (W - L - 120) * p.s / mx;
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text>", L - 8, i * row + 16, p.name);
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\"/>", L, i * row + 4, std::max(w, 1.0), p.colour);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"12\">{:.2f} s</text>", L + w + 6, i * row + 16, p.s);
    ++i;
  }
  return s + "</svg>";
}

}  // namespace

std::string render_evaluate_html(const EvaluateReport& r) {
  const json j = report_to_json(r);
  const json res = obj(j, "result");
  const json outs = arr(res, "outputs");
  std::string verdict = "no classifier output", vclass = "skipped";
  for (const json& o : outs)
    if (o.contains("top1_agreement") && o["top1_agreement"].is_number()) {
      const double a = o["top1_agreement"].get<double>();
      verdict = "top-1 agreement " + percent(o["top1_agreement"]);
      vclass = a >= 0.999 ? "ok" : a >= 0.99 ? "warning" : "bad";
      break;
    }
  std::string h = "<!doctype html><html><head><meta charset=\"utf-8\"><title>ferry evaluate: " + esc(r.model) +
                  "</title><style>" + kCss + "</style></head><body>";
  h += "<header><h1>ferry evaluate</h1><p>" + esc(r.model) + " on " + esc(r.data) + " &middot; target " + esc(r.target) +
       " &middot; golden " + esc(r.golden) + "</p></header><main>";
  const json t = obj(j, "timing");
  h += "<section id=\"verdict\"><div class=\"verdict " + vclass + "\">" + esc(verdict) + "</div><div class=\"cards\">";
  auto card = [&](const std::string& v, const std::string& k) { h += "<div class=\"card\"><b>" + esc(v) + "</b>" + esc(k) + "</div>"; };
  card(std::to_string(r.aggregate.samples()), "samples");
  card(fmt::format("{:.1f}", dbl(t, "samples_per_s", 0)), "samples / s");
  const json labels = obj(res, "labels");
  if (!labels.empty()) {
    card(percent(labels["golden_top1_accuracy"]) + " / " + percent(labels["target_top1_accuracy"]), "top-1 accuracy golden / target");
    card(percent(labels["golden_top5_accuracy"]) + " / " + percent(labels["target_top5_accuracy"]), "top-5 accuracy golden / target");
  }
  h += "</div>";
  if (!r.preprocess.empty()) h += "<p class=\"note\">preprocess: " + esc(r.preprocess) + "</p>";
  h += "</section>";
  for (const json& o : outs) {
    h += "<section class=\"output\"><h2>output " + esc(str(o, "name")) + "</h2><p>" + count(o, "passed") + " of " + count(o, "samples") +
         " samples pass";
    if (o.contains("top1_agreement"))
      h += "; top-1 agreement " + percent(o["top1_agreement"]) + " (" + count(o, "top1_agree") + " of " +
           count(o, "classifier_samples") + "), top-5 " + percent(o["top5_agreement"]);
    h += "</p>";
    const json sk = obj(o, "sketches");
    h += distribution(obj(sk, "cosine_distance"), "1 - cosine per sample", "#4c78a8");
    h += distribution(obj(sk, "max_abs"), "max abs error per sample", "#f58518");
    h += "<table>" + percentile_row("cosine", obj(o, "cosine")) + percentile_row("max_abs", obj(o, "max_abs")) +
         percentile_row("max_rel", obj(o, "max_rel")) + percentile_row("rel_euclid", obj(o, "rel_euclid")) + "</table>";
    h += "<p class=\"note\">percentiles within 0.5% (a mergeable sketch: the same on one machine, in shards or on Ray)</p></section>";
  }
  h += "<section id=\"worst\"><h2>worst " + std::to_string(r.aggregate.worst().size()) +
       " samples</h2><p class=\"note\">class flips first, then lowest cosine; each replays with its command</p><table>"
       "<tr><th>#</th><th>sample</th><th></th><th>classes golden &rarr; target</th><th>cosine</th><th>rel. Euclid</th><th>replay</th></tr>";
  std::optional<PreprocessSpec> spec;
  if (!r.preprocess.empty())
    if (auto parsed = parse_preprocess(r.preprocess); parsed.ok()) spec = std::move(*parsed);
  int k = 0;
  for (const SampleResult& s : r.aggregate.worst()) {
    std::string cls;
    for (auto& o : s.outputs)
      if (o.golden_class) {
        const bool flip = *o.golden_class != *o.target_class;
        cls = fmt::format("<span class=\"{}\">{} &rarr; {}</span>", flip ? "bad" : "ok", *o.golden_class, *o.target_class);
        if (s.label) cls += fmt::format(" (label {})", *s.label);
        break;
      }
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.6f}</td><td>{:.3g}</td><td><code>{}</code></td></tr>", ++k,
                     esc(s.id), thumbnail(s, spec ? &*spec : nullptr), cls, s.worst_cosine(), s.worst_rel_euclid(), esc(r.replay_command(s)));
  }
  h += "</table></section>";
  h += "<section id=\"time\"><h2>time</h2>" + timing_bars(t) + fmt::format("<p class=\"note\">{:.1f} s wall on {} decoding thread(s), batch {}</p>",
                                                               dbl(t, "wall_s", 0), r.workers, r.batch) + "</section>";
  for (auto& n : r.notes) h += "<p class=\"note\">note: " + esc(n) + "</p>";
  return h + "</main></body></html>\n";
}

Status write_report_files(const EvaluateReport& r) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(r.out_dir, ec);
  if (ec) return Status::io("cannot create " + r.out_dir + ": " + ec.message());
  for (auto [name, body] : {std::pair<std::string, std::string>{"report.json", report_to_json(r).dump(1) + "\n"},
                            {"report.html", render_evaluate_html(r)}}) {
    const fs::path p = fs::path(r.out_dir) / name;
    if (fs::is_symlink(p, ec)) return Status::invalid(p.string() + " is a symbolic link: refusing to write through it");
    FERRY_RETURN_IF_ERROR(write_text_file(p.string(), body));
  }
  return Status();
}

}  // namespace ferry::tools::evaluate
