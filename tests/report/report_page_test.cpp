// report.html in headless Chromium: the page loads with no script or console
// error, every plot renders with a nonzero size, and a screenshot is not blank.
// Skipped (visibly) when chromium, gnuplot or the model is missing.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "tailor/io/atomic_file.h"
#include "tailor/io/load_model.h"
#include "tailor/plan/budget.h"
#include "tailor/plan/plan.h"
#include "tailor/profile/profiler.h"
#include "tailor/report/report.h"
#include "test_util.h"

namespace tailor::report {
namespace {

bool have(const std::string& command) {
  return std::system(("command -v " + command + " >/dev/null 2>&1").c_str()) == 0;
}

/// Single-quoted for sh (our own temp paths, quoted all the same).
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

TEST(ReportPage, LoadsInHeadlessChromiumWithEveryPlot) {
  if (!have("chromium")) GTEST_SKIP() << "chromium not installed: page test skipped";
  if (!have("gnuplot")) GTEST_SKIP() << "gnuplot not installed: page test skipped";
  const std::string model = testing::model_path("ch_ppocr_mobile_v2.0_cls_infer.onnx");
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "models not fetched: " << model;

  // A real profile (PP-OCR direction classifier, a short scheme list) and its
  // exact plan at 3 bits per planned weight (30% of its dense bytes are fixed
  // at the default --min-params, so smaller layers are planned too).
  ProfileOptions options;
  options.schemes = {"int8", "int4", "ternary", "sparse-2:4", "lowrank"};
  options.min_params = 1024;
  options.threads = 2;
  const ModelProfile profile = profile_model(load_model(model), options);
  ASSERT_GE(profile.layers.size(), 3u);
  const plan::Objective objective = plan::Objective::numel;
  const plan::Problem problem = plan::make_problem(
      profile, objective, plan::budget_bytes(plan::parse_budget("3bpw"), profile), model);
  const plan::Plan chosen =
      plan::solve_plans(profile, problem, {"exact"}, plan::SolveOptions{}, objective).front();
  Verification v;
  v.outputs = {{"softmax_0.tmp_0", 0.01, 0.9999}};
  testing::TempDir dir;
  write_report(dir.path().string(), make_report(profile, chosen, "plan",
                                                plan::study_plan(profile, chosen, "plan", {}), v));
  const std::string page = dir.file("report.html");
  ASSERT_TRUE(std::filesystem::exists(dir.file("report.json")));

  // One browser run: the DOM after load (scripts ran) and a screenshot.
  const std::string cmd =
      "chromium --headless=new --disable-gpu --no-sandbox --enable-logging=stderr --v=0 "
      "--no-first-run --disable-extensions --disable-background-networking "
      "--disable-component-update --disable-sync --mute-audio --hide-scrollbars "
      "--user-data-dir=" +
      sh_quote(dir.file("chromium-profile")) +
      " --window-size=1200,1600 --screenshot=" + sh_quote(dir.file("shot.png")) + " --dump-dom " +
      sh_quote("file://" + page) + " >" + sh_quote(dir.file("dom.html")) + " 2>" +
      sh_quote(dir.file("chromium.log"));
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(dir.file("chromium.log"));
  const std::string dom = read_file(dir.file("dom.html"));
  const std::string log = read_file(dir.file("chromium.log"));

  // The page's own reporter (window error events, console.error) and plot check.
  EXPECT_EQ(dom.find("data-js-errors=\""), std::string::npos) << dom.substr(0, 4000);
  EXPECT_NE(dom.find("<ul id=\"js-errors\"></ul>"), std::string::npos) << dom.substr(0, 4000);
  EXPECT_NE(dom.find("data-plots=\"3\""), std::string::npos) << "plot check did not run";
  EXPECT_NE(dom.find("data-plots-rendered=\"3\""), std::string::npos)
      << "a plot has zero size or draws nothing";
  // And the browser's own console log.
  EXPECT_EQ(log.find("Uncaught"), std::string::npos) << log;
  EXPECT_EQ(log.find(":CONSOLE"), std::string::npos) << log;

  // The screenshot: the requested size, and not a single colour (python3-pil decodes it).
  if (std::system("/usr/bin/python3 -c 'import PIL' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3-pil not installed: screenshot check skipped";
  ASSERT_TRUE(std::filesystem::exists(dir.file("shot.png"))) << log;
  const std::string py =
      "from PIL import Image; import sys; im = Image.open(sys.argv[1]).convert('RGB'); "
      "px = im.getdata(); white = sum(1 for p in px if p == (255, 255, 255)); "
      "print(im.size[0], im.size[1], len(im.getcolors(1 << 24)), white / len(px))";
  FILE* p = ::popen(
      ("/usr/bin/python3 -c " + sh_quote(py) + " " + sh_quote(dir.file("shot.png"))).c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, p);
  ASSERT_EQ(::pclose(p), 0);
  std::istringstream in(std::string(buf, n));
  int width = 0, height = 0, colors = 0;
  double white = 1;
  in >> width >> height >> colors >> white;
  EXPECT_EQ(width, 1200);
  EXPECT_EQ(height, 1600);
  EXPECT_GT(colors, 50) << "screenshot is (nearly) one colour";
  EXPECT_LT(white, 0.97) << "screenshot is nearly all white";
}

}  // namespace
}  // namespace tailor::report
