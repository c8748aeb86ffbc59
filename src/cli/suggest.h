// "did you mean ...?" for the command line: an unknown subcommand or an unknown --flag of a subcommand is a
// usage error that names the closest known name. CLI11 alone prints the main help for `ferry typo --help`
// (exit 0) and says only "not expected" for a flag typo.
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ferry::cli {

// Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent swaps cost 1
// (a swap is the commonest typo: "inspcet").
inline size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The candidate nearest to `word`, when it is near enough to be a typo of it (at most a third of its
// length, at least 1 edit); nullopt otherwise.
inline std::optional<std::string> closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_d = 0;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d <= std::max<size_t>(1, c.size() / 3) && (!best || d < best_d)) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

inline std::vector<std::string> subcommand_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

// The subcommand called `name`, or null (CLI11's own look-ups throw).
inline CLI::App* find_subcommand(CLI::App& app, const std::string& name) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    if (sub->check_name(name)) return sub;
  return nullptr;
}

// The subcommand word: the first argument that is not a flag (the main app has only --help and --version,
// which take no value). Empty when there is none.
inline std::string command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') return argv[i];
  return "";
}

// Before parsing: "unknown command 'evaluat'; ..." when the subcommand word names no subcommand, so that
// no flag after it (--help included) makes the typo look like success.
inline std::optional<std::string> unknown_command_error(CLI::App& app, int argc, char** argv) {
  const std::string word = command_word(argc, argv);
  if (word.empty() || find_subcommand(app, word)) return std::nullopt;
  std::vector<std::string> names = subcommand_names(app);
  std::string msg = "unknown command '" + word + "'";
  if (auto near = closest_name(word, names)) return msg + "; did you mean '" + *near + "'?";
  msg += "; the commands are:";
  for (const std::string& n : names) msg += " " + n;
  return msg;
}

// After a parse error: "unknown option '--seeed' for 'ferry run'; did you mean '--seed'?" for the first
// --flag of the chosen subcommand that it does not have (words after "--" are not flags); nullopt when
// every flag is known (the parse error is about something else).
inline std::optional<std::string> unknown_option_error(CLI::App& app, int argc, char** argv) {
  const std::string word = command_word(argc, argv);
  CLI::App* sub = find_subcommand(app, word);
  if (!sub) return std::nullopt;
  std::vector<std::string> flags;
  for (const CLI::Option* o : sub->get_options())
    for (const std::string& l : o->get_lnames()) flags.push_back("--" + l);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(flags.begin(), flags.end(), arg) != flags.end()) continue;
    std::string msg = "unknown option '" + arg + "' for 'ferry " + word + "'";
    if (auto near = closest_name(arg, flags)) msg += "; did you mean '" + *near + "'?";
    return msg;
  }
  return std::nullopt;
}

}  // namespace ferry::cli
