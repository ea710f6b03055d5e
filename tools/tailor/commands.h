// Subcommands of the tailor CLI; each add_* registers one on the app and runs
// it from its callback. Bad input surfaces as tailor::Error (exit code 2).
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace tailor::cli {

/// `tailor inspect MODEL [--json]`: every weight tensor, its orientation and totals.
void add_inspect(CLI::App& app);
/// `tailor convert CHECKPOINT.bin -o OUT_DIR`: llama2.c checkpoint to a HF folder.
void add_convert(CLI::App& app);
/// `tailor profile MODEL [-o profile.json] [--schemes LIST] [--layers REGEX] [--min-params N]
/// [--calib FILE] [--threads N]`: per-layer scheme measurements (profile.json) and a table.
void add_profile(CLI::App& app);

/// `tailor plan PROFILE.json --budget B [--solver S] [--objective O] [--seed N]
/// [--time-limit SEC] [--threads N] [-o plan.json]`: one candidate per layer under a budget.
void add_plan(CLI::App& app);

/// `tailor report PROFILE.json (--plan plan.json | --budget B [--solver S] [--objective O]
/// [--seed N]) [--verify verify.json] [--time-limit SEC] [--threads N] -o OUT_DIR`:
/// report.html (plots) and report.json.
void add_report(CLI::App& app);
/// `tailor generate MODEL [--prompt TEXT] [--tokens N] [--tokenizer FILE]`: greedy text
/// from a llama checkpoint.
void add_generate(CLI::App& app);
/// `tailor kld MODEL (--scheme LABEL | --plan plan.json) [--sequences N] [--length L]
/// [--seed S] [--json]`: KL divergence and top-1 agreement of a compressed copy.
void add_kld(CLI::App& app);
/// `tailor run MODEL --input NAME=FILE.npy ... [--output DIR] [--time N] [--threads T]
/// [--tuning F]`: runs an
/// ONNX model with tailor's runtime; outputs as DIR/<name>.npy, latency and peak memory.
void add_run(CLI::App& app);
/// `tailor tune MODEL [--measurements N] [--seed S] [--threads T] [-o tuned/]` or
/// `tailor tune --replay tuned/decisions.json`: tunes compiler decisions, writes the record.
void add_tune(CLI::App& app);
/// `tailor tune-train MODEL... [--measurements N] [--seed S] [--evaluate MODEL...] [-o DIR]`:
/// one cost model fitted to measured configurations of several models (DIR/cost_model.json).
void add_tune_train(CLI::App& app);
/// Option checks whose messages read as the option's: CLI11's NonNegativeNumber
/// printed "not in range 0.000000 to 1797693…" (309 digits) and took nan, and
/// an unsigned option took "-1" as 2^64 − 1.
/// A finite number ≥ 0.
inline const CLI::Validator kFiniteNonNegative(
    [](std::string& s) -> std::string {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
        return "expected a finite number >= 0, got \"" + s + "\"";
      return "";
    },
    "NUMBER>=0");
/// An integer in [0, 2^64): decimal digits only.
inline const CLI::Validator kUnsigned(
    [](std::string& s) -> std::string {
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
        return "expected an integer >= 0, got \"" + s + "\"";
      return "";
    },
    "");  // no description: the option's type already reads UINT
/// A thread count, 0 (all cores) to 1024.
inline const CLI::Range kThreadCount(0, 1024);

/// A --schemes list, "int8,int4, lowrank" → {"int8", "int4", "lowrank"} (profile and
/// compress); an empty item or list is an Error naming --schemes.
std::vector<std::string> split_scheme_list(const std::string& list);

/// A value name as a safe file name (bytes outside [A-Za-z0-9._-] become '_'; "", ".", ".." are
/// prefixed with '_').
std::string sanitize_file_name(const std::string& name);

/// `tailor compress MODEL --budget B [--solver S] [--calib DIR] [-o OUT_DIR] [--report] ...`:
/// profile (cached), plan, rewrite, write, verify and report in one run.
void add_compress(CLI::App& app);

}  // namespace tailor::cli
