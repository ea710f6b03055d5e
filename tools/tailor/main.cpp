// The `tailor` command: subcommands registered from cmd_*.cpp.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>

#include "commands.h"
#include "tailor/core/error.h"

namespace {

// OpenMP threads that spin while waiting (libgomp's default) make a second
// thread several times slower on a machine with more runnable threads than
// cores. libgomp reads OMP_WAIT_POLICY once, when it is loaded, so the only
// way to default it is to set it and execute this program again; a policy the
// user set is kept. If the re-execution fails, the program continues as is.
void default_to_passive_openmp_waiting(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);
}

}  // namespace

int main(int argc, char** argv) {
  default_to_passive_openmp_waiting(argv);
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
  app.set_version_flag("--version", std::string("tailor ") + TAILOR_VERSION);
  try {
    app.parse(argc, argv);
    std::cout.flush();
    if (!std::cout) throw tailor::Error("standard output", "write failed");
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
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
