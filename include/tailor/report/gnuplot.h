// Running gnuplot (http://gnuplot.info, SVG terminal) on a generated script,
// and quoting untrusted text for its scripts and for HTML.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tailor::report {

/// A file written next to the script before gnuplot runs: name (plain, no
/// folder part) and contents.
using DataFile = std::pair<std::string, std::string>;

/// Runs gnuplot on `script` in a fresh temporary folder holding `data` (the
/// script names them relatively: its working folder is that folder) and
/// returns the SVG it wrote to `out.svg` there (the script must `set output
/// 'out.svg'`). gnuplot runs as a child process with an argument vector (no
/// shell), stdin from /dev/null; the folder is removed afterwards. Throws
/// Error (source "gnuplot") when gnuplot is not installed, exits non-zero
/// (with its last message) or writes no SVG.
std::string run_gnuplot(const std::string& script, const std::vector<DataFile>& data);

/// `s` as a single-quoted gnuplot string ('…', a quote doubled): bytes that
/// are not printable ASCII become '?', and text beyond `max_chars` is cut
/// with "...". Safe for untrusted names; use with the `noenhanced` terminal
/// option so ^ _ { } @ are not markup.
std::string gnuplot_quote(std::string_view s, size_t max_chars = 48);

/// `s` escaped for HTML text and attribute values (& < > " '), with invalid
/// UTF-8 replaced by U+FFFD and control bytes other than tab and newline
/// dropped.
std::string html_escape(std::string_view s);

}  // namespace tailor::report
