// bench/svg_plot.hpp — small, dependency-free SVG plots for the benchmark's --plot option: a
// wait-time distribution (log-spaced histogram, lock against floor), grant order against queue
// order (a fair lock draws the diagonal), and grouped bars (the summary plots of a whole run).
// Plain SVG 1.1, readable in any browser.
#pragma once

#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace zklock_bench::svg {

struct series {
    std::string name;
    std::vector<double> values;  ///< samples, any order
    std::string color;
};

/// A series of bars(): one value per category.
struct bar_series {
    std::string name;
    std::vector<double> values;      ///< one per category; NaN: no bar there
    std::string color;
    std::vector<std::string> notes;  ///< empty, or one per category: a label over the bar
};

namespace detail {

constexpr double width = 760, height = 440, left = 70, right = 20, top = 40, bottom = 60;
constexpr double plot_w = width - left - right, plot_h = height - top - bottom;

inline std::string num(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

inline std::string label(double v)
{
    char buf[32];
    if (v >= 100 || v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
    else if (v >= 1) std::snprintf(buf, sizeof buf, "%.1f", v);
    else std::snprintf(buf, sizeof buf, "%.2g", v);
    return buf;
}

inline std::string escape(const std::string& s)
{
    std::string out;
    for (char c : s) {
        if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '&') out += "&amp;";
        else out += c;
    }
    return out;
}

inline std::string header(const std::string& title, const std::string& xlabel, const std::string& ylabel)
{
    std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    num(width) + "\" height=\"" + num(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    s += "<text x=\"" + num(width / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" + escape(title) + "</text>\n";
    s += "<text x=\"" + num(left + plot_w / 2) + "\" y=\"" + num(height - 15) + "\" text-anchor=\"middle\">" +
         escape(xlabel) + "</text>\n";
    s += "<text transform=\"translate(18," + num(top + plot_h / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         escape(ylabel) + "</text>\n";
    s += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(plot_w) + "\" height=\"" + num(plot_h) +
         "\" fill=\"none\" stroke=\"#444\"/>\n";
    return s;
}

/// The value in a data- attribute: enough digits to read back what was plotted.
inline std::string exact(double v)
{
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

inline std::string xtick(double x, const std::string& text)
{
    return "<line x1=\"" + num(x) + "\" y1=\"" + num(top + plot_h) + "\" x2=\"" + num(x) + "\" y2=\"" +
           num(top + plot_h + 5) + "\" stroke=\"#444\"/><text x=\"" + num(x) + "\" y=\"" + num(top + plot_h + 18) +
           "\" text-anchor=\"middle\">" + text + "</text>\n";
}

inline std::string ytick(double y, const std::string& text)
{
    return "<line x1=\"" + num(left - 5) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left) + "\" y2=\"" + num(y) +
           "\" stroke=\"#444\"/><text x=\"" + num(left - 8) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" + text +
           "</text>\n";
}

inline bool write(const std::string& path, const std::string& body)
{
    std::ofstream out(path, std::ios::trunc);
    out << body << "</svg>\n";
    return static_cast<bool>(out.flush());
}

}  // namespace detail

/// Histogram of positive samples over log-spaced bins; each series is drawn as a step line of the
/// fraction of its samples per bin, so series of different sizes compare.
inline bool wait_histogram(const std::string& path, const std::string& title, const std::string& unit,
                           const std::vector<series>& all)
{
    using namespace detail;
    double lo = 0, hi = 0;
    bool any = false;
    for (const auto& s : all)
        for (double v : s.values) {
            if (v <= 0) continue;
            lo = any ? std::min(lo, v) : v;
            hi = any ? std::max(hi, v) : v;
            any = true;
        }
    std::string body = header(title, "wait (t_acquired - t_request), " + unit + ", log scale", "fraction of acquisitions");
    if (!any) return write(path, body);
    const double llo = std::floor(std::log10(lo) * 4) / 4, lhi = std::max(llo + 0.25, std::ceil(std::log10(hi) * 4) / 4);
    const int bins = 48;
    auto xpos = [&](double lv) { return left + (lv - llo) / (lhi - llo) * plot_w; };
    std::vector<std::vector<double>> fractions;
    double ymax = 0;
    for (const auto& s : all) {
        std::vector<double> f(bins, 0);
        for (double v : s.values) {
            if (v <= 0) continue;
            int b = static_cast<int>((std::log10(v) - llo) / (lhi - llo) * bins);
            f[static_cast<std::size_t>(std::clamp(b, 0, bins - 1))] += 1;
        }
        for (double& x : f) {
            x /= static_cast<double>(std::max<std::size_t>(1, s.values.size()));
            ymax = std::max(ymax, x);
        }
        fractions.push_back(std::move(f));
    }
    ymax = ymax > 0 ? ymax * 1.1 : 1;
    auto ypos = [&](double f) { return top + plot_h - f / ymax * plot_h; };
    for (double e = std::floor(llo); e <= lhi; e += 1)
        for (double m : {1.0, 2.0, 5.0}) {
            const double lv = e + std::log10(m);
            if (lv < llo || lv > lhi) continue;
            body += xtick(xpos(lv), label(std::pow(10, lv)));
        }
    for (int i = 0; i <= 4; ++i) body += ytick(ypos(ymax / 1.1 * i / 4), label(ymax / 1.1 * i / 4));
    for (std::size_t k = 0; k < all.size(); ++k) {
        std::string pts;
        for (int b = 0; b < bins; ++b) {
            const double x0 = xpos(llo + (lhi - llo) * b / bins), x1 = xpos(llo + (lhi - llo) * (b + 1) / bins);
            const double y = ypos(fractions[k][static_cast<std::size_t>(b)]);
            pts += num(x0) + "," + num(y) + " " + num(x1) + "," + num(y) + " ";
        }
        body += "<polyline fill=\"none\" stroke=\"" + all[k].color + "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
        auto sorted = all[k].values;
        std::sort(sorted.begin(), sorted.end());
        const double p50 = percentile(sorted, 0.5), p99 = percentile(sorted, 0.99);
        if (p50 > 0)
            body += "<line x1=\"" + num(xpos(std::log10(p50))) + "\" y1=\"" + num(top) + "\" x2=\"" +
                    num(xpos(std::log10(p50))) + "\" y2=\"" + num(top + plot_h) + "\" stroke=\"" + all[k].color +
                    "\" stroke-dasharray=\"4 3\"/>\n";
        body += "<text x=\"" + num(left + plot_w - 8) + "\" y=\"" + num(top + 16 + 16 * static_cast<double>(k)) +
                "\" text-anchor=\"end\" fill=\"" + all[k].color + "\">" + escape(all[k].name) + ": n=" +
                std::to_string(sorted.size()) + " p50=" + label(p50) + " p99=" + label(p99) + " " + unit +
                " (dashed: p50)</text>\n";
    }
    return write(path, body);
}

/// Grant order against queue order: x = rank of the acquisition's queue-node sequence number
/// (the order the server queued the requests), y = rank of its grant time. A FIFO lock draws the
/// diagonal; out-of-order grants are red. At most ~4000 points are drawn (evenly thinned).
inline bool grant_order(const std::string& path, const std::string& title, std::vector<acquisition> a)
{
    using namespace detail;
    std::string body = header(title, "queue order (rank of the node's sequence number)", "grant order (rank of t_acquired)");
    const std::size_t n = a.size();
    if (n == 0) return write(path, body);
    sort_by_grant(a);
    std::vector<std::size_t> by_seq(n);
    for (std::size_t i = 0; i < n; ++i) by_seq[i] = i;
    std::sort(by_seq.begin(), by_seq.end(), [&](std::size_t x, std::size_t y) { return a[x].seq < a[y].seq; });
    std::vector<std::size_t> queue_rank(n);
    for (std::size_t r = 0; r < n; ++r) queue_rank[by_seq[r]] = r;
    const double span = static_cast<double>(std::max<std::size_t>(1, n - 1));
    auto xpos = [&](double r) { return left + r / span * plot_w; };
    auto ypos = [&](double r) { return top + plot_h - r / span * plot_h; };
    for (int i = 0; i <= 4; ++i) {
        body += xtick(xpos(span * i / 4), label(std::round(span * i / 4)));
        body += ytick(ypos(span * i / 4), label(std::round(span * i / 4)));
    }
    body += "<line x1=\"" + num(xpos(0)) + "\" y1=\"" + num(ypos(0)) + "\" x2=\"" + num(xpos(span)) + "\" y2=\"" +
            num(ypos(span)) + "\" stroke=\"#bbb\" stroke-dasharray=\"4 3\"/>\n";
    const std::size_t step = std::max<std::size_t>(1, n / 4000);
    std::int64_t highest = -1, inversions = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const bool inv = a[i].seq < highest;
        inversions += inv;
        highest = std::max(highest, a[i].seq);
        if (i % step != 0 && !inv) continue;
        body += "<circle cx=\"" + num(xpos(static_cast<double>(queue_rank[i]))) + "\" cy=\"" +
                num(ypos(static_cast<double>(i))) + "\" r=\"" + (inv ? "3" : "1.6") + "\" fill=\"" +
                (inv ? "#d62728" : "#1f77b4") + "\"/>\n";
    }
    body += "<text x=\"" + num(left + 8) + "\" y=\"" + num(top + 16) + "\">" + std::to_string(n) +
            " grants, " + std::to_string(inversions) + " out of queue order</text>\n";
    return write(path, body);
}

/// Grouped bars from zero: a group per category, a bar per series in it (a NaN value draws
/// none, only its note if it has one). Each bar is a `<rect class="bar">` whose data-series, data-category and data-value
/// attributes say what it shows. `reference` > 0 draws a dashed line at that value (a ratio's 1).
inline bool bars(const std::string& path, const std::string& title, const std::string& xlabel, const std::string& ylabel,
                 const std::vector<std::string>& categories, const std::vector<bar_series>& all, double reference = 0)
{
    using namespace detail;
    std::string body = header(title, xlabel, ylabel);
    double ymax = reference;
    for (const auto& s : all)
        for (double v : s.values)
            if (std::isfinite(v)) ymax = std::max(ymax, v);
    if (categories.empty() || all.empty() || !(ymax > 0)) return write(path, body);
    ymax *= 1.3;  // room for the notes and the legend above the tallest bar
    auto ypos = [&](double v) { return top + plot_h - v / ymax * plot_h; };
    // Ticks at a round step (1, 2, 2.5 or 5 times a power of ten), four to eight of them.
    const double raw_step = ymax / 5, magnitude = std::pow(10, std::floor(std::log10(raw_step)));
    double step = 10 * magnitude;
    for (double m : {1.0, 2.0, 2.5, 5.0})
        if (m * magnitude >= raw_step) {
            step = m * magnitude;
            break;
        }
    for (double t = 0; t <= ymax; t += step) body += ytick(ypos(t), label(t));
    const double group_w = plot_w / static_cast<double>(categories.size());
    const double bar_w = group_w * 0.8 / static_cast<double>(all.size());
    for (std::size_t c = 0; c < categories.size(); ++c) {
        const double x0 = left + group_w * static_cast<double>(c) + group_w * 0.1;
        body += xtick(x0 + group_w * 0.4, escape(categories[c]));
        for (std::size_t k = 0; k < all.size(); ++k) {
            const double v = c < all[k].values.size() ? all[k].values[c] : std::nan("");
            const double x = x0 + bar_w * static_cast<double>(k);
            if (!std::isfinite(v)) {  // no bar; its note, if any, on the axis
                if (c < all[k].notes.size() && !all[k].notes[c].empty())
                    body += "<text x=\"" + num(x + bar_w * 0.46) + "\" y=\"" + num(ypos(0) - 4) +
                            "\" text-anchor=\"middle\" font-size=\"10\">" + escape(all[k].notes[c]) + "</text>\n";
                continue;
            }
            body += "<rect class=\"bar\" data-series=\"" + escape(all[k].name) + "\" data-category=\"" +
                    escape(categories[c]) + "\" data-value=\"" + exact(v) + "\" x=\"" + num(x) + "\" y=\"" + num(ypos(v)) +
                    "\" width=\"" + num(bar_w * 0.92) + "\" height=\"" + num(ypos(0) - ypos(v)) + "\" fill=\"" +
                    all[k].color + "\"/>\n";
            const std::string note = c < all[k].notes.size() ? all[k].notes[c] : label(v);
            body += "<text x=\"" + num(x + bar_w * 0.46) + "\" y=\"" + num(ypos(v) - 4) +
                    "\" text-anchor=\"middle\" font-size=\"10\">" + escape(note) + "</text>\n";
        }
    }
    if (reference > 0)
        body += "<line x1=\"" + num(left) + "\" y1=\"" + num(ypos(reference)) + "\" x2=\"" + num(left + plot_w) +
                "\" y2=\"" + num(ypos(reference)) + "\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n";
    for (std::size_t k = 0; k < all.size(); ++k) {
        const double y = top + 14 + 16 * static_cast<double>(k);
        body += "<rect x=\"" + num(left + 8) + "\" y=\"" + num(y - 9) + "\" width=\"10\" height=\"10\" fill=\"" +
                all[k].color + "\"/><text x=\"" + num(left + 22) + "\" y=\"" + num(y) + "\">" + escape(all[k].name) +
                "</text>\n";
    }
    return write(path, body);
}

}  // namespace zklock_bench::svg
