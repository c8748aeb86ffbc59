#include "backends/backend_options.h"

#include <sstream>

namespace ferry::backends {

const char* choice_name(Choice c) {
  switch (c) {
    case Choice::kOn: return "on";
    case Choice::kOff: return "off";
    default: return "auto";
  }
}

const char* gemm_name(CpuGemm g) {
  switch (g) {
    case CpuGemm::kMkl: return "mkl";
    case CpuGemm::kOwn: return "own";
    case CpuGemm::kOnednn: return "onednn";
    default: return "auto";
  }
}

Result<Choice> parse_choice(const std::string& s, const std::string& what) {
  if (s == "auto") return Choice::kAuto;
  if (s == "on") return Choice::kOn;
  if (s == "off") return Choice::kOff;
  return Status::invalid(what + ": '" + s + "' is not one of auto, on, off");
}

Result<CpuGemm> parse_gemm(const std::string& s) {
  for (CpuGemm g : {CpuGemm::kAuto, CpuGemm::kMkl, CpuGemm::kOwn, CpuGemm::kOnednn})
    if (s == gemm_name(g)) return g;
  return Status::invalid("gemm: '" + s + "' is not one of auto, mkl, own, onednn");
}

std::string to_string(const CpuOptions& o) {
  return std::string("gemm=") + gemm_name(o.gemm) + " bf16=" + choice_name(o.bf16) +
         " winograd=" + choice_name(o.winograd) + " blocked-1x1=" + choice_name(o.blocked_1x1) +
         " own-depthwise=" + choice_name(o.own_depthwise);
}

Result<CpuOptions> parse_cpu_options(const std::string& s) {
  CpuOptions o;
  std::istringstream in(s);
  std::string item;
  while (in >> item) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return Status::invalid("cpu options: '" + item + "' is not KEY=VALUE");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "gemm") {
      FERRY_ASSIGN_OR_RETURN(o.gemm, parse_gemm(value));
    } else if (key == "bf16") {
      FERRY_ASSIGN_OR_RETURN(o.bf16, parse_choice(value, key));
    } else if (key == "winograd") {
      FERRY_ASSIGN_OR_RETURN(o.winograd, parse_choice(value, key));
    } else if (key == "blocked-1x1") {
      FERRY_ASSIGN_OR_RETURN(o.blocked_1x1, parse_choice(value, key));
    } else if (key == "own-depthwise") {
      FERRY_ASSIGN_OR_RETURN(o.own_depthwise, parse_choice(value, key));
    } else {
      return Status::invalid("cpu options: unknown key '" + key + "'");
    }
  }
  return o;
}

}  // namespace ferry::backends
