// Quoting untrusted text for gnuplot and HTML; running gnuplot and its errors;
// a report of hostile layer names stays inert.
#include "tailor/report/gnuplot.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "tailor/core/error.h"
#include "tailor/report/report.h"
#include "test_util.h"

namespace tailor::report {
namespace {

/// A candidate with label, rel_error, bytes and MACs (the rest left empty).
Candidate cand(const std::string& label, double rel_error, int64_t bytes, int64_t macs) {
  Candidate c;
  c.label = label;
  c.rel_error = rel_error;
  c.bytes = bytes;
  c.macs = macs;
  return c;
}

bool have_gnuplot() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(GnuplotQuote, DoublesQuotesAndReplacesNonAscii) {
  EXPECT_EQ(gnuplot_quote("conv1.weight"), "'conv1.weight'");
  EXPECT_EQ(gnuplot_quote("a'b"), "'a''b'");
  EXPECT_EQ(gnuplot_quote("x\ny\x01z"), "'x?y?z'");
  EXPECT_EQ(gnuplot_quote("\xc3\xa9"),
            "'?"
            "?'");  // é: two bytes, not printable ASCII
  EXPECT_EQ(gnuplot_quote("abcdef", 3), "'abc...'");
  EXPECT_EQ(gnuplot_quote("\\"), "'\\'");  // no escapes inside single quotes
}

TEST(HtmlEscape, EscapesMarkupAndRepairsUtf8) {
  EXPECT_EQ(html_escape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  EXPECT_EQ(html_escape("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(html_escape("a\xff"
                        "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(html_escape("\xc0\xaf"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_EQ(html_escape("a\x01\tb"), "a\tb");
}

TEST(RunGnuplot, WritesSvgAndReportsFailures) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot not installed (Debian: gnuplot-nox)";
  const std::string svg = run_gnuplot(
      "set terminal svg size 300,200\nset output 'out.svg'\nplot 'd.dat' using 1:2 with lines\n",
      {{"d.dat", "0 0\n1 1\n"}});
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  try {
    run_gnuplot("set output 'out.svg'\nplot 'missing.dat'\n", {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.source(), "gnuplot");
    EXPECT_NE(e.message().find("missing.dat"), std::string::npos) << e.what();
  }
}

TEST(RunGnuplot, MissingGnuplotIsAClearError) {
  testing::TempDir empty;
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", empty.path().c_str(), 1);
  std::string message;
  try {
    run_gnuplot("set output 'out.svg'\n", {});
  } catch (const Error& e) {
    message = e.what();
  }
  ::setenv("PATH", old_path.c_str(), 1);
  EXPECT_NE(message.find("gnuplot: not found"), std::string::npos) << message;
  EXPECT_NE(message.find("gnuplot-nox"), std::string::npos) << message;
}

TEST(ReportHtml, HostileNamesStayText) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot not installed (Debian: gnuplot-nox)";
  const std::string evil = "</svg><script>alert(1)</script>' \"&\nset output '/tmp/x'";
  ModelProfile p;
  p.model = "<b>model</b>";
  p.fixed_bytes = 0;
  p.dense_bytes = 800;
  LayerProfile l{evil, {10, 10}, 100, 400, {}};
  l.candidates = {cand("dense", 0.0, 400, 100), cand("int8", 0.01, 110, 100)};
  LayerProfile m{"ok", {10, 10}, 100, 400, {}};
  m.candidates = {cand("dense", 0.0, 400, 100), cand("int8<i>", 0.02, 110, 100)};
  p.layers = {l, m};
  plan::Plan chosen;
  chosen.model = p.model;
  chosen.budget_bytes = 600;
  chosen.total_bytes = 510;
  chosen.solver = "exact";
  chosen.objective = "numel";
  chosen.choices = {{evil, "dense", 0.0, 400}, {"ok", "int8<i>", 0.02, 110}};
  const std::string html = report_to_html(
      make_report(p, chosen, "plan.json", plan::study_plan(p, chosen, "plan.json", {})));
  EXPECT_EQ(count(html, "<script>"), 2u);  // the page's own error reporter and plot check
  EXPECT_EQ(count(html, "<svg"), 3u);
  EXPECT_EQ(count(html, "</svg>"), 3u);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_EQ(html.find("<i>"), std::string::npos);
  EXPECT_NE(html.find("&lt;/svg&gt;&lt;script&gt;alert(1)"), std::string::npos);
  // Self-contained: nothing fetched from elsewhere.
  EXPECT_FALSE(std::regex_search(html, std::regex("(src|href)\\s*=\\s*['\"]?(https?:|//)")));
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
}

TEST(ReportHtml, OneLayerOneSchemeAndNoLayers) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot not installed (Debian: gnuplot-nox)";
  ModelProfile p;
  p.model = "one.onnx";
  p.fixed_bytes = 40;
  p.dense_bytes = 440;
  LayerProfile l{"w", {10, 10}, 100, 400, {}};
  l.candidates = {cand("int8", 0.01, 110, 100)};
  p.layers = {l};
  plan::Plan chosen;
  chosen.budget_bytes = 200;
  chosen.total_bytes = 150;
  chosen.solver = "exact";
  chosen.objective = "numel";
  chosen.choices = {{"w", "int8", 0.01, 110}};
  const Report r =
      make_report(p, chosen, "plan.json", plan::study_plan(p, chosen, "plan.json", {}));
  ASSERT_EQ(r.curve.size(), 10u);
  EXPECT_EQ(r.curve.front().budget_bytes, 40 + 110);  // fixed + the only candidate
  EXPECT_EQ(r.curve.back().budget_bytes, 440);
  std::string html = report_to_html(r);
  EXPECT_EQ(count(html, "<svg"), 3u);

  ModelProfile empty;
  empty.model = "fixed-only.onnx";
  empty.fixed_bytes = empty.dense_bytes = 400;
  plan::Plan none;
  none.budget_bytes = none.total_bytes = none.fixed_bytes = 400;
  none.solver = "exact";
  none.objective = "numel";
  const Report fixed_only =
      make_report(empty, none, "plan.json", plan::study_plan(empty, none, "plan.json", {}));
  ASSERT_EQ(fixed_only.curve.size(), 1u);  // smallest feasible = dense: one budget
  EXPECT_EQ(fixed_only.curve[0].objective, 0.0);
  html = report_to_html(fixed_only);
  EXPECT_EQ(count(html, "<svg"), 1u);
  EXPECT_NE(html.find("No layers planned."), std::string::npos);
}

}  // namespace
}  // namespace tailor::report
