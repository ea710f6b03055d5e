// report.html: gnuplot SVG plots inlined into one self-contained page.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "tailor/core/text.h"
#include "tailor/report/gnuplot.h"
#include "tailor/report/report.h"

namespace tailor::report {
namespace {

/// The terminal line every plot starts with: fixed pixel size (so the inline
/// SVG has a definite size), no enhanced-text markup in names.
std::string terminal(int width, int height) {
  return fmt::format(
      "set terminal svg size {},{} noenhanced font 'DejaVu Sans,10' background rgb 'white'\n"
      "set output 'out.svg'\n",
      width, height);
}

double percent(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * double(part) / double(whole) : 0.0;
}

/// gnuplot's SVG made fit to sit inline in HTML: the XML prolog and doctype
/// dropped, and every id (and reference to one) prefixed so that several
/// plots on one page do not share ids.
std::string inline_svg(const std::string& svg, const std::string& prefix) {
  std::string s = svg.substr(svg.find("<svg"));
  s = std::regex_replace(s, std::regex("id='"), "id='" + prefix);
  s = std::regex_replace(s, std::regex("id=\""), "id=\"" + prefix);
  s = std::regex_replace(s, std::regex("href='#"), "href='#" + prefix);
  s = std::regex_replace(s, std::regex("href=\"#"), "href=\"#" + prefix);
  s = std::regex_replace(s, std::regex("url\\(#"), "url(#" + prefix);
  return s;
}

/// (a) objective vs. total budget, exact optima, the chosen plan marked.
std::string curve_svg(const Report& r) {
  std::string data;
  for (const CurvePoint& p : r.curve)
    data += fmt::format("{:.17g} {:.17g}\n", percent(p.budget_bytes, r.dense_bytes), p.objective);
  const std::string chosen = fmt::format(
      "{:.17g} {:.17g}\n", percent(r.plan.budget_bytes, r.dense_bytes), r.plan.objective_value);
  // A log scale shows the tail of the curve, when every value has a logarithm.
  bool log_y = r.plan.objective_value > 0;
  for (const CurvePoint& p : r.curve) log_y = log_y && p.objective > 0;
  const std::string script =
      terminal(760, 420) +
      fmt::format(
          "set xlabel 'total budget (% of dense f32 bytes)'\n"
          "set ylabel {}\n"
          "set grid\nset key top right\n{}"
          "plot 'curve.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#1f77b4' "
          "title 'exact optimum', "
          "'chosen.dat' using 1:2 with points pt 7 ps 2.2 lc rgb '#d62728' title {}\n",
          gnuplot_quote("objective (" + r.plan.objective + ")"),
          log_y ? "set logscale y\n" : "set yrange [0:*]\n",
          gnuplot_quote("chosen: " + r.plan.solver + " plan", 80));
  return run_gnuplot(script, {{"curve.dat", data}, {"chosen.dat", chosen}});
}

/// (d) measured damage vs. bytes: tailor's plan and every uniform scheme
/// (Report::measured), each point named, the kept one marked.
std::string measured_svg(const Report& r) {
  std::string plans, kept, labels;
  bool log_y = true;
  for (const MeasuredPlan& m : r.measured) {
    if (!std::isfinite(m.damage)) continue;
    log_y = log_y && m.damage > 0;
    const std::string row = fmt::format("{:.17g} {:.17g}\n", double(m.bytes), m.damage);
    (m.kept ? kept : plans) += row;
    labels += fmt::format("set label {} at {:.17g},{:.17g} offset 0.6,0.4 font ',8'\n",
                          gnuplot_quote(m.name + (m.in_sample.empty() ? "" : " (in-sample)"), 52),
                          double(m.bytes), m.damage);
  }
  const std::string script =
      terminal(760, 460) +
      fmt::format(
          "set xlabel 'bytes'\nset ylabel {}\nset grid\nset key top right\n{}{}"
          "plot 'plans.dat' using 1:2 with points pt 7 ps 1.2 lc rgb '#1f77b4' "
          "title 'measured plans', 'kept.dat' using 1:2 with points pt 7 ps 2.2 "
          "lc rgb '#d62728' title 'kept'\n",
          gnuplot_quote("output damage on calibration inputs (" + r.measured_metric + ")"),
          log_y ? "set logscale y\n" : "set yrange [0:*]\n", labels);
  return run_gnuplot(script, {{"plans.dat", plans.empty() ? kept : plans},
                              {"kept.dat", kept.empty() ? plans : kept}});
}

/// Height of a plot with one row per layer.
int rows_height(size_t layers) {
  return static_cast<int>(std::clamp<size_t>(layers * 14 + 170, 300, 20000));
}

/// Layer names as ytics, layer 0 on top.
std::string layer_ytics(const Report& r) {
  std::string tics = "set ytics (";
  for (size_t i = 0; i < r.layers.size(); ++i)
    tics += fmt::format("{}{} {}", i ? ", " : "", gnuplot_quote(r.layers[i].name), i);
  return tics + ") font ',8'\nset yrange [" + fmt::format("{}:-0.5", r.layers.size() - 0.5) + "]\n";
}

/// (b) layer × scheme map, coloured by log10 rel_error; the chosen scheme circled.
std::string map_svg(const Report& r) {
  // One rectangle per profiled (layer, scheme) cell; none where a scheme does
  // not apply. (Rectangles rather than `with image`, which needs a 2 × 2 grid.)
  std::string cells, chosen;
  for (size_t i = 0; i < r.layers.size(); ++i)
    for (size_t k = 0; k < r.schemes.size(); ++k) {
      const double e = r.layers[i].scheme_errors[k];
      if (std::isfinite(e))
        cells += fmt::format("{} {} {:.6g}\n", k, i, std::log10(std::max(e, 1e-6)));
      if (r.schemes[k] == r.layers[i].label) chosen += fmt::format("{} {}\n", k, i);
    }
  std::string xtics = "set xtics (";
  for (size_t k = 0; k < r.schemes.size(); ++k)
    xtics += fmt::format("{}{} {}", k ? ", " : "", gnuplot_quote(r.schemes[k]), k);
  xtics += ") rotate by 45 right\n";
  const int width = std::max(560, static_cast<int>(r.schemes.size()) * 46 + 420);
  const std::string script =
      terminal(width, rows_height(r.layers.size())) + xtics + layer_ytics(r) +
      fmt::format(
          "set xrange [-0.5:{}]\n"
          "set cbrange [-6:0]\nset cblabel 'log10 rel_error (blank: scheme not applicable)'\n"
          "set palette defined (0 '#0d0887', 1 '#7e03a8', 2 '#cc4778', 3 '#f89540', 4 "
          "'#f0f921')\n"
          "set lmargin 28\nset bmargin 7\nunset key\nset style fill solid 1.0 noborder\n"
          "plot 'map.dat' using 1:2:($1-0.5):($1+0.5):($2-0.5):($2+0.5):3 with boxxyerror "
          "fc palette, "
          "'chosen.dat' using 1:2 with points pt 6 ps 1.3 lw 4 lc rgb 'white', "
          "'chosen.dat' using 1:2 with points pt 6 ps 1.3 lw 1.5 lc rgb 'black'\n",
          r.schemes.size() - 0.5);
  return run_gnuplot(script, {{"map.dat", cells}, {"chosen.dat", chosen}});
}

/// (c) bytes per layer, dense f32 before and chosen after (horizontal bars).
std::string bytes_svg(const Report& r) {
  std::string data;
  for (size_t i = 0; i < r.layers.size(); ++i)
    data += fmt::format("{} {:.6f} {:.6f}\n", i, r.layers[i].dense_bytes / 1024.0,
                        r.layers[i].bytes / 1024.0);
  const std::string script =
      terminal(860, rows_height(r.layers.size())) + layer_ytics(r) +
      "set xlabel 'KiB'\nset xrange [0:*]\nset grid x\nset key bottom right\n"
      "set lmargin 28\nset style fill solid 0.85 noborder\n"
      "plot 'bytes.dat' using (0):($1-0.2):(0):2:($1-0.38):($1-0.02) with boxxyerror "
      "lc rgb '#9e9e9e' title 'before (dense f32)', "
      "'bytes.dat' using (0):($1+0.2):(0):3:($1+0.02):($1+0.38) with boxxyerror "
      "lc rgb '#1f77b4' title 'after (chosen)'\n";
  return run_gnuplot(script, {{"bytes.dat", data}});
}

std::string num(double v, const char* spec = "{:.6g}") {
  return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : std::string("–");
}

// " (95% a–b over the inputs)", or nothing without an interval.
std::string over_inputs(const Interval& i) {
  return interval_text(i, " (", " over the inputs)");
}

std::string solver_table(const Report& r) {
  std::string t =
      "<table><thead><tr><th>solver</th><th>objective</th><th>bytes</th><th>gap to exact</th>"
      "<th>seconds</th><th>nodes</th></tr></thead><tbody>\n";
  const double exact = r.solvers.empty() ? 0 : r.solvers.front().objective;
  for (const SolverRow& s : r.solvers) {
    std::string gap;
    if (&s == &r.solvers.front())
      gap = s.proven_optimal ? "0 (optimal)" : "0 (best found)";
    else
      gap = exact > 0 ? fmt::format("{:+.4f}%", 100 * s.gap_to_exact / exact)
                      : fmt::format("{:+.3g}", s.gap_to_exact);
    t += fmt::format(
        "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{}</td></tr>\n",
        s.solver == r.plan.solver ? " class=\"chosen\"" : "", html_escape(s.solver),
        num(s.objective), with_commas(s.total_bytes), gap, s.seconds, with_commas(s.nodes));
  }
  return t + "</tbody></table>\n";
}

std::string verification_section(const Report& r) {
  if (!r.verification)
    return "<p class=\"note\">Not verified: no measurements were given (<code>tailor compress"
           "</code> runs both models; <code>tailor report --verify verify.json</code> reads "
           "them).</p>\n";
  const Verification& v = *r.verification;
  std::string t;
  if (v.inputs > 0) t += fmt::format("<p>{} inputs.</p>\n", v.inputs);
  t += "<table><thead><tr><th>output</th><th>rel. error</th><th>cosine</th></tr></thead><tbody>\n";
  for (const OutputError& o : v.outputs)
    t += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(o.name),
                     num(o.rel_error), num(o.cosine, "{:.6f}"));
  t += "</tbody></table>\n<table><tbody>\n";
  if (v.metric)
    t += fmt::format("<tr><th>{} (original → compressed)</th><td>{} → {}</td></tr>\n",
                     html_escape(v.metric->name), num(v.metric->original),
                     num(v.metric->compressed));
  t += fmt::format("<tr><th>predicted error (Σ per layer)</th><td>{}</td></tr>\n",
                   num(v.predicted_error));
  t += fmt::format("<tr><th>measured error</th><td>{}</td></tr>\n", num(v.measured_error));
  if (!v.damage_metric.empty()) {
    t += fmt::format(
        "<tr><th>predicted output damage (Σ per-layer D, {}, calibration inputs)</th>"
        "<td>{}</td></tr>\n",
        html_escape(v.damage_metric), num(v.predicted_damage));
    if (!std::isnan(v.calibration_damage))
      t += fmt::format(
          "<tr><th>predicted output damage (the written plan run whole, {}, calibration "
          "inputs)</th><td>{}{}</td></tr>\n",
          html_escape(v.damage_metric), num(v.calibration_damage),
          over_inputs(v.calibration_interval));
    t += fmt::format(
        "<tr><th>measured output damage ({}, verification inputs)</th><td>{}{}</td></tr>\n",
        html_escape(v.damage_metric), num(v.measured_damage), over_inputs(v.measured_interval));
  }
  t += "</tbody></table>\n";
  if (v.saliency) {
    const SaliencyCheck& s = *v.saliency;
    t += fmt::format(
        "<h3>Saliency mask <code>{}</code>, compressed vs original</h3>\n<table><thead><tr>"
        "<th>input</th><th>mean abs. error</th><th>IoU (mask &gt; {})</th></tr></thead><tbody>\n",
        html_escape(s.output), num(s.threshold));
    for (const MaskScore& m : s.inputs)
      t += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(m.input),
                       num(m.mae), num(m.iou, "{:.6f}"));
    t += fmt::format("<tr><th>mean</th><td>{}</td><td>{}</td></tr>\n", num(s.mae),
                     num(s.iou, "{:.6f}"));
    t += "</tbody></table>\n";
  }
  return t;
}

std::string measured_table(const Report& r) {
  std::string t =
      "<table><thead><tr><th>plan</th><th>bytes</th><th>% of dense</th><th>damage</th>"
      "</tr></thead><tbody>\n";
  for (const MeasuredPlan& m : r.measured)
    t += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{:.1f}%</td><td>{}</td></tr>\n",
                     m.kept ? " class=\"chosen\"" : "", html_escape(m.name), with_commas(m.bytes),
                     percent(m.bytes, r.dense_bytes),
                     num(m.damage) + over_inputs(m.interval) +
                         (m.in_sample.empty() ? std::string()
                                              : " (in-sample: " + html_escape(m.in_sample) + ")"));
  return t + "</tbody></table>\n";
}

std::string curve_table(const Report& r) {
  std::string t =
      "<table><thead><tr><th>budget</th><th>% of dense</th><th>bytes used</th>"
      "<th>objective</th></tr></thead><tbody>\n";
  for (const CurvePoint& p : r.curve)
    t += fmt::format("<tr><td>{}</td><td>{:.1f}%</td><td>{}</td><td>{}{}</td></tr>\n",
                     with_commas(p.budget_bytes), percent(p.budget_bytes, r.dense_bytes),
                     with_commas(p.total_bytes), num(p.objective),
                     p.proven_optimal ? "" : " (time limit; best found)");
  return t + "</tbody></table>\n";
}

std::string plan_table(const Report& r) {
  std::string t =
      "<table><thead><tr><th>layer</th><th>[out, in]</th><th>scheme</th><th>rel. error</th>"
      "<th>bytes before</th><th>bytes after</th></tr></thead><tbody>\n";
  for (const LayerRow& l : r.layers)
    t += fmt::format(
        "<tr><td>{}</td><td>[{}, {}]</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        html_escape(l.name), l.shape_out_in.size() == 2 ? l.shape_out_in[0] : 0,
        l.shape_out_in.size() == 2 ? l.shape_out_in[1] : 0, html_escape(l.label), num(l.rel_error),
        with_commas(l.dense_bytes), with_commas(l.bytes));
  return t + "</tbody></table>\n";
}

// Records script errors and console.error calls into the DOM
// (html[data-js-errors], #js-errors), so a headless browser's dump shows them.
constexpr const char* kErrorReporter = R"(<script>
(function () {
  var n = 0;
  function record(text) {
    n += 1;
    document.documentElement.setAttribute('data-js-errors', String(n));
    var list = document.getElementById('js-errors');
    if (list) { var li = document.createElement('li'); li.textContent = text; list.appendChild(li); }
  }
  window.addEventListener('error', function (e) { record('error: ' + (e.message || e.type)); }, true);
  window.addEventListener('unhandledrejection', function (e) { record('rejection: ' + e.reason); });
  var original = console.error;
  console.error = function () { record('console.error: ' + Array.prototype.join.call(arguments, ' ')); return original.apply(console, arguments); };
})();
</script>)";

// Checks that every plot rendered with a nonzero size and drew something;
// writes the counts into body[data-plots] and body[data-plots-rendered].
constexpr const char* kPlotCheck = R"(<script>
(function () {
  var plots = document.querySelectorAll('figure.plot svg');
  var ok = 0;
  plots.forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    if (box.width > 0 && box.height > 0 && svg.querySelector('path, image, rect, polygon')) ok += 1;
  });
  document.body.setAttribute('data-plots', String(plots.length));
  document.body.setAttribute('data-plots-rendered', String(ok));
})();
</script>)";

constexpr const char* kStyle = R"(<style>
body { font-family: 'DejaVu Sans', sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
td:first-child, th:first-child { text-align: left; }
tr.chosen { background: #fff3cd; }
figure.plot { margin: 0.5em 0; overflow-x: auto; }
figure.plot svg { display: block; }
figure.plot svg image { image-rendering: pixelated; }
.note { color: #555; }
#js-errors { color: #b00; }
</style>)";

}  // namespace

std::string report_to_html(const Report& r) {
  const plan::Plan& p = r.plan;
  const std::string title = "tailor report: " + r.model;
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>" + html_escape(title) + "</title>\n" + kErrorReporter + "\n" + kStyle + "\n";
  h += "</head>\n<body>\n<ul id=\"js-errors\"></ul>\n";
  h += "<h1>" + html_escape(title) + "</h1>\n<table><tbody>\n";
  h += fmt::format("<tr><th>dense f32 bytes</th><td>{}</td></tr>\n", with_commas(r.dense_bytes));
  h += fmt::format("<tr><th>budget</th><td>{} ({:.1f}%)</td></tr>\n", with_commas(p.budget_bytes),
                   percent(p.budget_bytes, r.dense_bytes));
  h += fmt::format(
      "<tr><th>compressed bytes</th><td>{} ({:.1f}% of dense; fixed {} "
      "included)</td></tr>\n",
      with_commas(p.total_bytes), percent(p.total_bytes, r.dense_bytes),
      with_commas(p.fixed_bytes));
  h += fmt::format("<tr><th>solver, objective</th><td>{}, {} = {}{}</td></tr>\n",
                   html_escape(p.solver), html_escape(p.objective), num(p.objective_value),
                   p.proven_optimal ? " (proven optimal)" : "");
  h += fmt::format("<tr><th>layers planned</th><td>{}</td></tr>\n</tbody></table>\n",
                   r.layers.size());

  h += "<section id=\"error-vs-budget\">\n<h2>Error vs. budget (exact solver)</h2>\n";
  h += "<figure class=\"plot\">" + inline_svg(curve_svg(r), "curve-") + "</figure>\n";
  h += curve_table(r) + "</section>\n";
  if (!r.measured.empty()) {
    h += "<section id=\"measured-plans\">\n<h2>Tailor's plan and every uniform scheme, measured "
         "on the calibration inputs</h2>\n";
    h += "<figure class=\"plot\">" + inline_svg(measured_svg(r), "measured-") + "</figure>\n";
    h += measured_table(r) + "</section>\n";
  }
  h += "<section id=\"layer-map\">\n<h2>Per-layer map: error of every scheme, chosen "
       "circled</h2>\n";
  // A profile without layers (everything fixed) has nothing to map.
  const std::string none = "<p class=\"note\">No layers planned.</p>\n";
  h += r.layers.empty()
           ? none
           : "<figure class=\"plot\">" + inline_svg(map_svg(r), "map-") + "</figure>\n";
  h += "</section>\n<section id=\"layer-bytes\">\n<h2>Bytes per layer, before and after</h2>\n";
  h += r.layers.empty()
           ? none
           : "<figure class=\"plot\">" + inline_svg(bytes_svg(r), "bytes-") + "</figure>\n";
  h += "</section>\n";
  h += fmt::format("<section id=\"solvers\">\n<h2>Solvers at the chosen budget ({} bytes)</h2>\n",
                   with_commas(p.budget_bytes));
  h += solver_table(r) + "</section>\n";
  h += "<section id=\"verification\">\n<h2>Verification</h2>\n" + verification_section(r) +
       "</section>\n";
  h += "<section id=\"plan\">\n<h2>Plan</h2>\n" + plan_table(r) + "</section>\n";
  h += std::string(kPlotCheck) + "\n</body>\n</html>\n";
  return h;
}

}  // namespace tailor::report
