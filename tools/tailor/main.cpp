// The `tailor` command: subcommands registered from cmd_*.cpp.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string_view>

#include "commands.h"
#include "format.h"
#include "tailor/core/error.h"

namespace {

// Two thread settings take effect only when their library is loaded, before
// main, so the only way to default them is to set them and execute this
// program again (if the re-execution fails, the program continues as is):
//  - OpenMP threads that spin while waiting (libgomp's default) make a second
//    thread several times slower on a machine with more runnable threads than
//    cores; libgomp reads OMP_WAIT_POLICY once. A policy the user set is kept.
//  - OpenBLAS (Debian's pthread variant) starts a thread per core when it is
//    loaded unless OPENBLAS_NUM_THREADS says otherwise. tailor runs every BLAS
//    call serially (linalg::set_threads), so those threads would only add to
//    the load past `--threads N`; OPENBLAS_NUM_THREADS is always 1.
void set_thread_environment(char** argv) {
  bool changed = false;
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    changed = true;
  }
  const char* blas = std::getenv("OPENBLAS_NUM_THREADS");
  if (blas == nullptr || std::string_view(blas) != "1") {
    if (setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0) return;
    changed = true;
  }
  if (changed) execv("/proc/self/exe", argv);
}

/// The subcommands' names, comma-separated.
std::string command_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

bool is_command(const CLI::App& app, const std::string& word) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->check_name(word)) return true;
  return false;
}

/// A command-line error as one line: "tailor: error: [COMMAND: ]MESSAGE".
int parse_error(const CLI::App& app, const CLI::ParseError& e) {
  std::string where;
  for (const CLI::App* sub : app.get_subcommands()) where = sub->get_name() + ": ";
  std::string what = e.what();
  for (char& c : what)
    if (c == '\n' || c == '\r') c = ' ';
  if (what == "A subcommand is required") what += " (" + command_names(app) + ")";
  std::fprintf(stderr, "tailor: error: %s%s (see tailor %s--help)\n", where.c_str(), what.c_str(),
               where.empty() ? "" : (where.substr(0, where.size() - 2) + " ").c_str());
  return 2;
}

// An empty value ("" from an unset shell variable, say) is refused for every
// option and positional that takes one, naming it, but `--prompt` (generate
// from BOS alone). CLI11 passed "" on: `-o ""` wrote the default folder,
// `--calib ""` used the default inputs, `--uniform ""` asked for --budget.
const CLI::Validator kNonEmptyOption(
    [](std::string& s) -> std::string {
      return s.empty() ? "empty value (give one, or leave the option out)" : "";
    },
    "");
const CLI::Validator kNonEmptyPositional(
    [](std::string& s) -> std::string { return s.empty() ? "empty value" : ""; }, "");

void refuse_empty_values(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    for (CLI::Option* opt : sub->get_options())
      if (opt->get_type_size_max() > 0 && opt->get_name() != "--prompt")
        opt->check(opt->nonpositional() ? kNonEmptyOption : kNonEmptyPositional);
    refuse_empty_values(*sub);
  }
}

}  // namespace

int main(int argc, char** argv) {
  set_thread_environment(argv);
  CLI::App app{"tailor: fit trained neural networks to a budget"};
  app.require_subcommand(1);
  tailor::cli::add_inspect(app);
  tailor::cli::add_convert(app);
  tailor::cli::add_profile(app);
  tailor::cli::add_plan(app);
  tailor::cli::add_report(app);
  tailor::cli::add_generate(app);
  tailor::cli::add_kld(app);
  tailor::cli::add_run(app);
  tailor::cli::add_tune(app);
  tailor::cli::add_tune_train(app);
  tailor::cli::add_compress(app);
  refuse_empty_values(app);
  app.set_version_flag("--version", std::string("tailor ") + TAILOR_VERSION);
  // An unknown first word is named (CLI11 says only "A subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    const std::string word = argv[1];
    if (!is_command(app, word)) {
      std::fprintf(stderr, "tailor: error: unknown command '%s' (commands: %s)\n",
                   tailor::cli::printable(word).c_str(), command_names(app).c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
    std::cout.flush();
    if (!std::cout) throw tailor::Error("standard output", "write failed");
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    return parse_error(app, e);
  } catch (const tailor::Error& e) {
    std::fprintf(stderr, "tailor: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tailor: error: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tailor: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
