// The `tailor` command: subcommands registered from cmd_*.cpp.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string_view>

#include "commands.h"
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
