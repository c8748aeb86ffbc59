// `ferry doctor [--json FILE|-]`: what this machine offers ferry (src/tools/doctor.h). Exit 0, or 1 when
// a finding is a problem (a missing venv, a thread or ISA mismatch).
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "cli/session_flags.h"
#include "tools/doctor.h"

namespace ferry::cli {

CommandFn add_doctor_command(CLI::App& app) {
  auto json = std::make_shared<std::string>();
  auto flags = std::make_shared<SessionFlags>();
  CLI::App* cmd = app.add_subcommand("doctor",
                                     "Report what this machine offers ferry: CPU, ISA features, the ISA the kernels "
                                     "dispatch to, threads, memory, GPU/CUDA, the venv's ONNX Runtime; with hints");
  cmd->add_option("--json", *json, "also write the findings as JSON (schema ferry.doctor/1); '-': JSON only, on stdout")
      ->type_name("FILE|-");
  add_cpu_flags(cmd, *flags);  // shows what these choices pick on this machine, and why
  return [json, flags] {
    tools::DoctorReport r = tools::run_doctor(cpu_options(*flags));
    if (*json != "-") std::fputs(tools::format_doctor(r).c_str(), stdout);
    if (int rc = write_json_report(tools::doctor_to_json(r), *json)) return rc;
    return r.problems() ? 1 : 0;
  };
}

}  // namespace ferry::cli
