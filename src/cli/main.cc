// `ferry`: the command-line entry point. Parses the subcommand and hands over; exit codes are 0 (ok),
// 1 (bad input or failed work: `error: ...` on stderr) and 2 (usage errors, from CLI11's parser).
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <new>

#include "cli/commands.h"
#include "cli/suggest.h"
#include "core/text_file.h"

#ifndef FERRY_VERSION
#define FERRY_VERSION "unknown"
#endif

namespace ferry::cli {

int report_error(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
  return 1;
}

int write_json_report(const nlohmann::json& j, const std::string& path) {
  if (path.empty()) return 0;
  if (path == "-") {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  const Status s = write_text_file(path, j.dump(2) + "\n");
  return s.ok() ? 0 : report_error(s);
}

void progress(const std::string& line) {
  static const bool tty = ::isatty(STDERR_FILENO) == 1;
  if (tty) std::fprintf(stderr, "%s\n", line.c_str());
}

void progress_bar(const std::string& what, int64_t done, int64_t total, double rate, const std::string& unit) {
  static const bool tty = ::isatty(STDERR_FILENO) == 1;
  if (!tty || total <= 0) return;
  const int width = 30;
  const int filled = static_cast<int>(width * done / total);
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < width) bar += '>' + std::string(static_cast<size_t>(width - filled - 1), ' ');
  const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0;
  std::fprintf(stderr, "\r%s [%s] %lld/%lld %s  %.1f/s  ETA %.0fs  ", what.c_str(), bar.c_str(),
               static_cast<long long>(done), static_cast<long long>(total), unit.c_str(), rate, eta);
  if (done >= total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

namespace {

int run_main(int argc, char** argv) {
  CLI::App app{"ferry: import ONNX models, run them, and check what they compute"};
  app.name("ferry");
  app.set_version_flag("--version", std::string("ferry ") + FERRY_VERSION);
  app.require_subcommand(1);
  CommandFn compile = add_compile_command(app);
  CommandFn inspect = add_inspect_command(app);
  CommandFn run = add_run_command(app);
  CommandFn bench = add_bench_command(app);
  CommandFn compare = add_compare_command(app);
  CommandFn tune = add_tune_precision_command(app);
  CommandFn doctor = add_doctor_command(app);
  CommandFn migrate = add_migrate_command(app);
  CommandFn profile = add_profile_command(app);
  CommandFn check = add_check_command(app);
  CommandFn weights = add_weights_command(app);
  CommandFn refit = add_refit_command(app);
  CommandFn evaluate = add_evaluate_command(app);
  if (auto bad = unknown_command_error(app, argc, argv)) {
    std::fprintf(stderr, "error: %s\nRun 'ferry --help' for usage.\n", bad->c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // An unknown --flag is named with its likely spelling rather than CLI11's "not expected".
    const std::optional<std::string> bad = unknown_option_error(app, argc, argv);
    std::fprintf(stderr, "error: %s\nRun 'ferry --help' (or 'ferry SUBCOMMAND --help') for usage.\n",
                 bad ? bad->c_str() : e.what());
    return 2;
  }
  if (app.got_subcommand("compile")) return compile();
  if (app.got_subcommand("inspect")) return inspect();
  if (app.got_subcommand("run")) return run();
  if (app.got_subcommand("bench")) return bench();
  if (app.got_subcommand("compare")) return compare();
  if (app.got_subcommand("tune-precision")) return tune();
  if (app.got_subcommand("doctor")) return doctor();
  if (app.got_subcommand("migrate")) return migrate();
  if (app.got_subcommand("profile")) return profile();
  if (app.got_subcommand("check")) return check();
  if (app.got_subcommand("weights")) return weights();
  if (app.got_subcommand("refit")) return refit();
  if (app.got_subcommand("evaluate")) return evaluate();
  return 2;  // unreachable: require_subcommand(1)
}

}  // namespace
}  // namespace ferry::cli

int main(int argc, char** argv) {
  // Last line of defence: anything that escapes the Status paths still ends as `error:` and exit 1,
  // never as an abort with a core dump.
  try {
    return ferry::cli::run_main(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "error: internal error (unknown exception)\n");
  }
  return 1;
}
