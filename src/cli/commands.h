// The subcommands of the `ferry` binary. Each file adds its subcommand to the app and returns what to
// run when it is chosen; the work itself lives in src/tools/ (the CLI only parses, calls and prints).
#pragma once
#include <functional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/status.h"

namespace ferry::cli {

// Runs the chosen subcommand; returns the process exit code.
using CommandFn = std::function<int()>;

CommandFn add_compile_command(CLI::App& app);
CommandFn add_inspect_command(CLI::App& app);
CommandFn add_run_command(CLI::App& app);
CommandFn add_bench_command(CLI::App& app);
CommandFn add_compare_command(CLI::App& app);
CommandFn add_tune_precision_command(CLI::App& app);
CommandFn add_doctor_command(CLI::App& app);
CommandFn add_migrate_command(CLI::App& app);
CommandFn add_profile_command(CLI::App& app);
CommandFn add_check_command(CLI::App& app);
CommandFn add_weights_command(CLI::App& app);
CommandFn add_refit_command(CLI::App& app);
CommandFn add_evaluate_command(CLI::App& app);

// Lower bounds for numeric flags, rejected as "--batch: must be 1 or more" (CLI11 prefixes the flag).
// CLI::PositiveNumber and CLI::NonNegativeNumber instead print their range up to DBL_MAX, 300 digits.
inline CLI::Validator number_check(double min, bool inclusive, const std::string& text) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(s, v)) return "'" + s + "' is not a number";
        return (inclusive ? v >= min : v > min) ? std::string() : "must be " + text + ", not " + s;
      },
      text);
}
// Counts and sizes (--batch, --threads, --runs, ...).
inline CLI::Validator at_least_one() { return number_check(1, true, "1 or more"); }
// Durations, tolerances.
inline CLI::Validator positive() { return number_check(0, false, "more than 0"); }
inline CLI::Validator non_negative() { return number_check(0, true, "0 or more"); }

// Prints "error: <message>" to stderr; returns 1 (the exit code for bad input and failed work).
int report_error(const Status& s);
// Writes a report's JSON to FILE, or to stdout for "-"; nothing for "". Returns 0, or 1 after printing
// the error.
int write_json_report(const nlohmann::json& j, const std::string& path);
// Prints a progress line to stderr, only when stderr is a terminal: scripts and tests that read
// stderr see nothing but errors.
void progress(const std::string& line);
// "evaluate [=======>      ] 120/200 samples  45.3/s  ETA 2s", redrawn in place on a terminal (stderr),
// ended with a newline when done == total; nothing when stderr is not a terminal.
void progress_bar(const std::string& what, int64_t done, int64_t total, double rate, const std::string& unit);

}  // namespace ferry::cli
