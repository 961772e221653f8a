#include "render/html/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "render/html/html_page.hpp"
#include "render/text_format.hpp"

namespace ophook::cli {

namespace {

constexpr double kWidth = 960;
constexpr const char* kBlue = "#3a6fd8";
constexpr const char* kRed = "#d33a3a";
constexpr const char* kOrange = "#e08a1e";
constexpr const char* kPalette[] = {"#3a6fd8", "#2e9e6b", "#8e5bd0", "#d0822e",
                                    "#2a9bb5", "#b5487c", "#6b8e23", "#7a6a58"};

std::string shorten(const std::string& text, std::size_t max) {
  return text.size() <= max ? text : text.substr(0, max - 3) + "...";
}

/// Axis ticks at round values (1, 2 or 5 times a power of ten) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int wanted) {
  const double raw = (hi - lo) / std::max(1, wanted);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (raw <= step) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

const char* anchor_for(double x, double left, double right) {
  if (x - left < 20) return "start";
  if (right - x < 20) return "end";
  return "middle";
}

std::string open_svg(double width, double height) {
  return fmt::format(
      "<svg viewBox=\"0 0 {0:.0f} {1:.0f}\" width=\"{0:.0f}\" height=\"{1:.0f}\" role=\"img\">\n",
      width, height);
}

}  // namespace

std::string svg_bar_chart(const std::vector<Bar>& bars) {
  constexpr double kLabel = 300, kBarArea = 540, kRow = 18;
  double max_value = 0;
  for (const Bar& bar : bars) max_value = std::max(max_value, bar.value);
  std::string svg = open_svg(kWidth, kRow * static_cast<double>(bars.size()) + 8);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& bar = bars[i];
    const double y = 4 + kRow * static_cast<double>(i);
    const double w = max_value > 0 ? std::max(1.0, bar.value / max_value * kBarArea) : 1.0;
    svg += fmt::format(
        "<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>"
        "<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.0f}\" fill=\"{}\" rx=\"2\">"
        "<title>{}: {}</title></rect>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
        kLabel - 8, y + 12, html_escape(shorten(bar.label, 48)), kLabel, y + 2, w, kRow - 5,
        bar.highlight ? kRed : kBlue, html_escape(bar.label), html_escape(bar.value_text),
        kLabel + w + 6, y + 12, html_escape(bar.value_text));
  }
  return svg + "</svg>\n";
}

std::string svg_error_chart(const std::vector<ErrorPoint>& points, const std::vector<double>& ticks,
                            std::optional<double> marker, const std::string& x_label) {
  constexpr double kLeft = 90, kRight = 30, kTop = 24, kPlot = 220;
  const double plot_w = kWidth - kLeft - kRight;
  const double zero_y = kTop + kPlot + 16, tick_y = zero_y + 12, axis_y = tick_y + 22;
  double xmin = INFINITY, xmax = -INFINITY, emin = INFINITY, emax = 0;
  for (const ErrorPoint& p : points) {
    xmin = std::min(xmin, p.x);
    xmax = std::max(xmax, p.x);
    if (p.error > 0 && std::isfinite(p.error)) {
      emin = std::min(emin, p.error);
      emax = std::max(emax, p.error);
    }
  }
  for (double t : ticks) {
    xmin = std::min(xmin, t);
    xmax = std::max(xmax, t);
  }
  if (!std::isfinite(xmin)) xmin = 0, xmax = 1;
  if (xmax <= xmin) xmax = xmin + 1;
  double lo = emax > 0 ? std::floor(std::log10(emin)) : -8,
         hi = emax > 0 ? std::ceil(std::log10(emax)) : 0;
  if (hi <= lo) hi = lo + 1;
  auto px = [&](double x) { return kLeft + (x - xmin) / (xmax - xmin) * (plot_w - 1); };
  auto py = [&](double e) {
    if (!std::isfinite(e)) return kTop;
    return kTop + kPlot - (std::log10(e) - lo) / (hi - lo) * kPlot;
  };

  std::string svg = open_svg(kWidth, axis_y + 26);
  const int step = std::max(1, static_cast<int>((hi - lo) / 8));
  for (int d = static_cast<int>(lo); d <= static_cast<int>(hi); d += step) {
    const double y = py(std::pow(10.0, d));
    svg += fmt::format(
        "<line x1=\"{:.0f}\" x2=\"{:.0f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e3e6ec\"/>"
        "<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\">1e{}</text>\n",
        kLeft, kLeft + plot_w, y, y, kLeft - 6, y + 4, d);
  }
  svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\">0</text>\n", kLeft - 6,
                     zero_y + 4);
  if (!ticks.empty()) {
    svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\">unmatched</text>\n",
                       kLeft - 6, tick_y + 6);
  }
  for (double x : nice_ticks(xmin, xmax, 6)) {
    if (x != std::floor(x)) continue;  // seq numbers are integers
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:.0f}</text>\n",
                       px(x), axis_y, x);
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                     kLeft + plot_w / 2, axis_y + 16, html_escape(x_label));

  // One point per pixel column: the largest error there, red when any point there is bad.
  struct Column {
    double error = -1;
    bool bad = false;
    std::size_t count = 0;
    std::string label;
  };
  std::map<long, Column> columns;
  for (const ErrorPoint& p : points) {
    Column& c = columns[std::lround(px(p.x))];
    ++c.count;
    c.bad = c.bad || p.bad;
    if (p.error > c.error || std::isnan(p.error)) {
      c.error = p.error;
      c.label = p.label;
    }
  }
  for (const auto& [x, c] : columns) {
    const double y = c.error > 0 || std::isnan(c.error) ? py(c.error) : zero_y;
    std::string title = c.count > 1 ? fmt::format("{} (largest of {})", c.label, c.count) : c.label;
    svg += fmt::format(
        "<circle cx=\"{}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"><title>{}</title></circle>\n", x, y,
        c.bad ? kRed : kBlue, html_escape(title));
  }
  std::map<long, bool> tick_columns;
  for (double t : ticks) tick_columns[std::lround(px(t))] = true;
  for (const auto& [x, unused] : tick_columns) {
    svg += fmt::format(
        "<line x1=\"{0}\" x2=\"{0}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"2\"/>\n",
        x, tick_y, tick_y + 10, kOrange);
  }
  if (marker) {
    const double x = px(*marker);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.0f}\" y2=\"{2:.1f}\" stroke=\"{3}\" "
        "stroke-dasharray=\"4 3\"/><text x=\"{4:.1f}\" y=\"{5:.0f}\" fill=\"{3}\" "
        "text-anchor=\"{6}\">first divergence</text>\n",
        x, kTop - 6, tick_y + 10, kRed, x, kTop - 10, anchor_for(x, kLeft, kLeft + plot_w));
  }
  return svg + "</svg>\n";
}

std::string svg_timeline(const std::vector<std::string>& lanes, std::vector<Span> spans,
                         std::optional<double> marker, const std::string& marker_label) {
  constexpr double kLeft = 150, kRight = 30, kTop = 24, kLane = 22;
  const double plot_w = kWidth - kLeft - kRight;
  double t0 = INFINITY, t1 = -INFINITY;
  for (const Span& s : spans) {
    t0 = std::min(t0, s.start);
    t1 = std::max(t1, s.end);
  }
  if (!std::isfinite(t0)) t0 = 0, t1 = 1;
  if (t1 <= t0) t1 = t0 + 1;
  auto px = [&](double t) { return kLeft + (t - t0) / (t1 - t0) * plot_w; };
  const double axis_y = kTop + kLane * static_cast<double>(lanes.size()) + 16;
  std::string svg = open_svg(kWidth, axis_y + 12);
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const double y = kTop + kLane * static_cast<double>(i);
    svg += fmt::format(
        "<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>"
        "<line x1=\"{:.0f}\" x2=\"{:.0f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e3e6ec\"/>\n",
        kLeft - 8, y + 15, html_escape(shorten(lanes[i], 22)), kLeft, kLeft + plot_w, y + kLane,
        y + kLane);
  }
  for (double t : nice_ticks(0, t1 - t0, 6)) {
    svg +=
        fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">{}</text>\n", px(t0 + t),
                    axis_y, anchor_for(px(t0 + t), kLeft, kLeft + plot_w), format_duration_ns(t));
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.lane != b.lane ? a.lane < b.lane : a.start < b.start;
  });
  std::hash<std::string> hash;
  for (std::size_t i = 0; i < spans.size();) {
    const Span& first = spans[i];
    double x0 = px(first.start), x1 = std::max(px(first.end), x0 + 1);
    std::size_t j = i + 1;
    while (j < spans.size() && spans[j].lane == first.lane && px(spans[j].start) <= x1 + 1) {
      x1 = std::max(x1, std::max(px(spans[j].end), px(spans[j].start) + 1));
      ++j;
    }
    const std::size_t count = j - i;
    const char* color = count == 1 ? kPalette[hash(first.label) % std::size(kPalette)] : "#7d8aa5";
    const std::string title = count == 1 ? fmt::format("{} ({})", first.label,
                                                       format_duration_ns(first.end - first.start))
                                         : fmt::format("{} calls, from {}", count, first.label);
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.0f}\" fill=\"{}\">"
        "<title>{}</title></rect>\n",
        x0, kTop + kLane * static_cast<double>(first.lane) + 3, x1 - x0, kLane - 6, color,
        html_escape(title));
    i = j;
  }
  if (marker) {
    const double x = px(*marker);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.0f}\" y2=\"{2:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"2\"/><text x=\"{4:.1f}\" y=\"{5:.0f}\" fill=\"{3}\" "
        "text-anchor=\"{6}\">{7}</text>\n",
        x, kTop - 6, axis_y - 12, kRed, x, kTop - 10, anchor_for(x, kLeft, kLeft + plot_w),
        html_escape(marker_label));
  }
  return svg + "</svg>\n";
}

}  // namespace ophook::cli
