// report.html for `ferry migrate`: one self-contained page (inline CSS and SVG, no script, no network)
// drawn from report.json, so the page and the JSON can never disagree.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tools/html.h"
#include "tools/migrate.h"

namespace ferry::tools {

using nlohmann::json;
using namespace html;  // NOLINT: the page is all html helpers

namespace {

std::string status_span(const std::string& s) { return "<span class=\"" + esc(s) + "\">" + esc(s) + "</span>"; }

// Cosine (as 1 - cosine, log scale) and max abs error along the network, first divergent layer marked.
std::string layer_plot(const json& layers, const std::string& first) {
  const int W = 1100, H = 300, L = 60, R = 60, T = 20, B = 40;
  const size_t n = layers.size();
  if (n == 0) return "<p class=\"note\">no layers were compared</p>";
  auto lg = [](double v) { return std::log10(std::max(v, 1e-12)); };
  double lo = 0, hi = -12, alo = 0, ahi = -12;
  for (const json& l : layers) {
    const double c = dbl(l, "cosine"), a = dbl(l, "max_abs");
    if (std::isfinite(c)) lo = std::min(lo, lg(1 - c)), hi = std::max(hi, lg(1 - c));
    if (std::isfinite(a)) alo = std::min(alo, lg(a)), ahi = std::max(ahi, lg(a));
  }
  lo = std::min(lo, -8.0), hi = std::max(hi, 0.0), alo = std::min(alo, -8.0), ahi = std::max(ahi, alo + 1);
  auto x = [&](size_t i) { return L + (n == 1 ? 0.5 : static_cast<double>(i) / (n - 1)) * (W - L - R); };
  auto y = [&](double v, double a, double b) { return T + (1 - (v - a) / (b - a)) * (H - T - B); };
  std::string s = fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"per-layer error\">", W, H);
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafbfc\" stroke=\"#e2e8f0\"/>", L, T, W - L - R, H - T - B);
  for (int e = static_cast<int>(std::ceil(lo)); e <= static_cast<int>(hi); e += 2)
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\" fill=\"#2b6cb0\">1e{}</text>", L - 4,
                     y(e, lo, hi) + 3, e);
  for (int e = static_cast<int>(std::ceil(alo)); e <= static_cast<int>(ahi); e += 2)
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#c05621\">1e{}</text>", W - R + 4, y(e, alo, ahi) + 3, e);
  std::string pc, pa;
  for (size_t i = 0; i < n; ++i) {
    const double c = dbl(layers[i], "cosine"), a = dbl(layers[i], "max_abs");
    const double cy = std::isfinite(c) ? y(lg(1 - c), lo, hi) : T, ay = std::isfinite(a) ? y(lg(a), alo, ahi) : T;
    pc += fmt::format("{:.1f},{:.1f} ", x(i), cy);
    pa += fmt::format("{:.1f},{:.1f} ", x(i), ay);
    if (str(layers[i], "node") == first || str(layers[i], "tensor") == first) {
      s += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#c53030\" stroke-dasharray=\"4 3\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3}\" font-size=\"11\" fill=\"#c53030\" text-anchor=\"middle\">first divergent: {4}</text>",
                       x(i), T, H - B, H - B + 28, esc(first));
    }
  }
  s += "<polyline fill=\"none\" stroke=\"#2b6cb0\" stroke-width=\"2\" points=\"" + pc + "\"/>";
  s += "<polyline fill=\"none\" stroke=\"#c05621\" stroke-width=\"1.5\" stroke-dasharray=\"5 2\" points=\"" + pa + "\"/>";
  s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#2b6cb0\">1 - cosine (left, log)</text>", L, H - B + 14);
  s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#c05621\" text-anchor=\"end\">max abs error (right, log)</text>",
                   W - R, H - B + 14);
  s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">layers in network order ({})</text>",
                   (L + W - R) / 2, H - 4, n);
  return s + "</svg>";
}

std::string bars(const json& types) {
  const int W = 1100, row = 22, L = 260;
  const size_t n = std::min<size_t>(types.size(), 12);
  if (n == 0) return "<p class=\"note\">no profile</p>";
  double mx = 1e-9;
  for (size_t i = 0; i < n; ++i) mx = std::max(mx, dbl(types[i], "ms", 0));
  std::string s = fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"time by op type\">", W, n * row + 10);
  for (size_t i = 0; i < n; ++i) {
    const double ms = dbl(types[i], "ms", 0), w = (W - L - 120) * ms / mx;
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text>", L - 8, i * row + 16,
                     esc(str(types[i], "op")));
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"16\" fill=\"#4c78a8\"/>", L, i * row + 4, std::max(w, 1.0));
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"12\">{:.3f} ms ({:.0f}%)</text>", L + w + 6, i * row + 16, ms,
                     100 * dbl(types[i], "share", 0));
  }
  return s + "</svg>";
}

std::string histogram(const json& lat) {
  std::vector<double> v;
  for (const json& x : lat)
    if (x.is_number()) v.push_back(x.get<double>());
  if (v.empty()) return "<p class=\"note\">no latencies</p>";
  const int W = 1100, H = 200, B = 30, bins = 20;
  const double lo = *std::min_element(v.begin(), v.end()), hi = std::max(*std::max_element(v.begin(), v.end()), lo + 1e-6);
  std::vector<int> c(bins, 0);
  for (double x : v) c[std::min(bins - 1, static_cast<int>((x - lo) / (hi - lo) * bins))]++;
  const int mx = *std::max_element(c.begin(), c.end());
  std::string s = fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"latency distribution\">", W, H);
  const double bw = (W - 80.0) / bins;
  for (int i = 0; i < bins; ++i) {
    const double h = (H - B - 10.0) * c[i] / mx;
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#72b7b2\"/>", 40 + i * bw, H - B - h,
                     bw - 2, h);
  }
  s += fmt::format("<text x=\"40\" y=\"{}\" font-size=\"11\">{:.3f} ms</text>", H - 10, lo);
  s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:.3f} ms</text>", W - 40, H - 10, hi);
  s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{} runs</text>", W / 2, H - 10, v.size());
  return s + "</svg>";
}

}  // namespace

std::string render_migrate_html(const json& r) {
  const json tgt = obj(r, "target");
  const bool emulated = flag(tgt, "emulated");
  const std::string verdict = str(r, "verdict", "incomplete");
  const std::string vclass = verdict.rfind("ready", 0) == 0 ? "ok" : (verdict == "blocked" ? "failed" : "warning");
  std::string h = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ferry migrate: " +
                  esc(str(r, "model")) + "</title><style>" + kCss + "</style></head><body>";
  h += "<header><h1>ferry migrate — " + esc(str(r, "model")) + "</h1><p>target " + esc(str(tgt, "name")) +
       (emulated ? " (emulated on this CPU: its numerics, CPU timings)" : "") + " · precision " +
       esc(str(obj(r, "precision"), "description")) + " · metric " + esc(str(r, "metric")) + "</p></header><main>";

  // Verdict and cards.
  h += "<section id=\"verdict\"><h2>Verdict</h2><div class=\"verdict " + vclass + "\">" + esc(verdict) + "</div><div class=\"cards\">";
  const json chk = obj(r, "check");
  const json sum = obj(chk, "summary");
  auto card = [&](const std::string& label, const std::string& value) {
    h += "<div class=\"card\">" + esc(label) + "<b>" + esc(value) + "</b></div>";
  };
  for (const char* k : {"device", "rewritten", "host", "unsupported"})
    if (sum.contains(k)) card(std::string(k) == "host" ? "host fallback" : k, sum[k].dump());
  const json cmp = obj(r, "compare");
  if (cmp.contains("first_divergent_node"))
    card("first divergent node", cmp["first_divergent_node"].is_null() ? "none" : text(cmp["first_divergent_node"]));
  const json bench = obj(r, "bench");
  if (bench.contains("median_ms")) card("median latency", fmt::format("{:.3f} ms", dbl(bench, "median_ms", 0)));
  if (bench.contains("speedup_vs_fp32")) card("vs fp32 baseline", fmt::format("{:.2f}x", dbl(bench, "speedup_vs_fp32", 0)));
  h += "</div>";
  const json failure = obj(r, "failure");
  if (!failure.empty())
    h += "<p class=\"failed\">the " + esc(str(failure, "stage")) + " stage failed: " + esc(str(failure, "error")) + "</p>";
  h += "</section>";

  // Stages.
  h += "<section id=\"stages\"><h2>Stages</h2><table><tr><th>stage</th><th>status</th><th>result</th><th>time</th></tr>";
  for (const json& s : arr(r, "stages"))
    h += "<tr><td>" + esc(str(s, "name")) + "</td><td>" + status_span(str(s, "status")) + "</td><td>" + esc(str(s, "summary")) +
         "</td><td style=\"white-space:nowrap\">" + fmt::format("{:.2f} s", dbl(s, "seconds", 0)) + "</td></tr>";
  h += "</table></section>";

  // Coverage.
  h += "<section id=\"coverage\"><h2>Operator coverage on " + esc(str(tgt, "name")) + "</h2>";
  if (chk.contains("by_op") && chk["by_op"].is_object()) {
    h += "<table><tr><th>op type</th><th>device</th><th>rewritten</th><th>host fallback</th><th>unsupported</th></tr>";
    for (auto it = chk["by_op"].begin(); it != chk["by_op"].end(); ++it) {
      const json& o = it.value();
      h += "<tr><td>" + esc(it.key()) + "</td><td>" + count(o, "device") + "</td><td>" +
           count(o, "rewritten") + "</td><td>" + count(o, "host") + "</td><td>" +
           count(o, "unsupported") + "</td></tr>";
    }
    h += "</table>";
    int shown = 0;
    std::string off;
    for (const json& n : arr(chk, "nodes"))
      if (str(n, "placement") != "device" && shown++ < 50)
        off += "<tr><td>" + esc(str(n, "name")) + "</td><td>" + esc(str(n, "op")) + "</td><td>" + esc(str(n, "placement")) +
               "</td><td>" + esc(str(n, "reason")) + "</td></tr>";
    if (!off.empty()) h += "<h3>Nodes not on the device as they are</h3><table><tr><th>node</th><th>op</th><th>placement</th><th>reason</th></tr>" + off + "</table>";
    for (const json& f : arr(chk, "findings"))
      if (f.is_string()) h += "<p class=\"note\">" + esc(f.get<std::string>()) + "</p>";
  } else {
    h += "<p class=\"note\">check did not run: " + esc(chk.dump()) + "</p>";
  }
  h += "</section>";

  // Per-layer error.
  h += "<section id=\"layers\"><h2>Per-layer error vs the fp32 golden</h2>";
  const std::string first = cmp.contains("first_divergent_node") && cmp["first_divergent_node"].is_string()
                                ? text(cmp["first_divergent_node"]) : "";
  h += layer_plot(arr(cmp, "layers"), first);
  h += "<table><tr><th>output</th><th>cosine</th><th>max abs error</th><th>verdict</th></tr>";
  for (const json& o : arr(cmp, "outputs")) {
    const json m = obj(o, "metrics");
    // A row without metrics was not measured (shapes differ, no golden tensor): its note says why.
    const std::string figures = m.empty() ? "<td colspan=\"2\">" + esc(str(o, "note", "not compared")) + "</td>"
                                          : "<td>" + fmt::format("{:.6f}", dbl(m, "cosine", NAN)) + "</td><td>" +
                                                fmt::format("{:.3g}", dbl(m, "max_abs", NAN)) + "</td>";
    h += "<tr><td>" + esc(str(o, "tensor")) + "</td>" + figures + "<td>" + status_span(flag(m, "pass") ? "ok" : "failed") +
         "</td></tr>";
  }
  h += "</table>";
  for (const json& a : arr(cmp, "advisor")) h += "<p class=\"note\">advisor: " + esc(str(a, "message")) + "</p>";
  if (r.contains("tune")) {
    h += "<p>tune-precision kept in fp32: <b>";
    for (const json& k : arr(r["tune"], "keep")) h += esc(text(k)) + " ";
    h += "</b></p>";
  }
  h += "</section>";

  // Op time.
  const json prof = obj(r, "profile");
  h += "<section id=\"optime\"><h2>Where the time goes</h2><p class=\"note\">" + esc(str(prof, "method")) +
       (emulated ? "; emulated target: CPU time of the emulation" : "") + "</p>" + bars(arr(prof, "by_type"));
  const json all_nodes = arr(prof, "nodes");
  std::vector<json> nodes(all_nodes.begin(), all_nodes.end());
  std::sort(nodes.begin(), nodes.end(), [](const json& a, const json& b) { return dbl(a, "ms", 0) > dbl(b, "ms", 0); });
  h += "<table><tr><th>node</th><th>op</th><th>kernel</th><th>covers (ONNX nodes)</th><th>ms</th></tr>";
  for (size_t i = 0; i < nodes.size() && i < 15; ++i) {
    std::string covers;
    for (const json& c : arr(nodes[i], "covers")) covers += esc(text(c)) + " ";
    h += "<tr><td>" + esc(str(nodes[i], "node")) + "</td><td>" + esc(str(nodes[i], "op")) + "</td><td>" +
         esc(str(nodes[i], "kernel")) + "</td><td>" + covers + "</td><td>" + fmt::format("{:.3f}", dbl(nodes[i], "ms", 0)) + "</td></tr>";
  }
  h += "</table></section>";

  // Latency.
  h += "<section id=\"latency\"><h2>Latency distribution</h2>" + histogram(arr(bench, "latencies_ms"));
  if (bench.contains("median_ms"))
    h += fmt::format("<p class=\"note\">median {:.3f} ms, p90 {:.3f} ms, batch {}, {} thread(s){}</p>", dbl(bench, "median_ms", 0),
                     dbl(bench, "p90_ms", 0), count(bench, "batch"), count(bench, "threads"),
                     bench.contains("baseline_fp32_median_ms")
                         ? fmt::format("; the fp32 .onnx on the cpu backend: {:.3f} ms", dbl(bench, "baseline_fp32_median_ms", 0))
                         : "");
  h += "</section>";

  // Reproduce.
  h += "<section id=\"commands\"><h2>Reproduce each stage</h2><pre>";
  for (const json& c : arr(r, "commands")) h += esc(text(c)) + "\n";
  h += "</pre></section></main></body></html>\n";
  return h;
}

}  // namespace ferry::tools
