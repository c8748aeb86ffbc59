// The subcommands of the `ferry` binary. Each file adds its subcommand to the app and returns what to
// run when it is chosen; the work itself lives in src/tools/ (the CLI only parses, calls and prints).
#pragma once
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

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

// Prints "error: <message>" to stderr; returns 1 (the exit code for bad input and failed work).
int report_error(const Status& s);
// Prints a progress line to stderr, only when stderr is a terminal: scripts and tests that read
// stderr see nothing but errors.
void progress(const std::string& line);

}  // namespace ferry::cli
