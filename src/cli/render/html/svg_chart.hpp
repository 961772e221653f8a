#pragma once
#include <optional>
#include <string>
#include <vector>

namespace ophook::cli {

/// Inline SVG charts for the HTML pages (no xmlns needed inside HTML, no scripts). Each function
/// bounds the number of drawn elements, whatever the input size. Pure.

struct Bar {
  std::string label;
  double value = 0;
  std::string value_text;  // shown at the end of the bar
  bool highlight = false;
};

/// Horizontal bars, one row per item, in the order given.
std::string svg_bar_chart(const std::vector<Bar>& bars);

struct ErrorPoint {
  double x = 0;       // e.g. seq
  double error = 0;   // >= 0; 0 is drawn on the "0" baseline below the log scale
  bool bad = false;   // outside tolerance: drawn red
  std::string label;  // tooltip
};

/// Errors (or any non-negative series: the monitor's loss) along a run on a log scale: points
/// merged per pixel column (largest kept), `ticks` (e.g. unmatched calls) drawn as marks under the
/// axis and labelled "unmatched" when there are any, `marker` as a vertical line.
std::string svg_error_chart(const std::vector<ErrorPoint>& points, const std::vector<double>& ticks,
                            std::optional<double> marker, const std::string& x_label);

struct Span {
  std::size_t lane = 0;
  double start = 0, end = 0;  // same unit as the axis (ns)
  std::string label;          // op name
};

/// A timeline with one lane per entry of `lanes`: spans closer than a pixel are merged into one
/// box (its tooltip says how many calls it holds); `marker` is a highlighted instant.
std::string svg_timeline(const std::vector<std::string>& lanes, std::vector<Span> spans,
                         std::optional<double> marker, const std::string& marker_label);

}  // namespace ophook::cli
