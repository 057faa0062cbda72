#include "lab/results.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include <stb_image_write.h>

namespace posemb::lab {

std::string results_csv(const std::vector<RunResults>& runs) {
  std::ostringstream o;
  o << "pe,max_seq_len,length,status,exact_match,token_accuracy\n";
  for (const auto& r : runs) {
    for (const auto& l : r.results) {
      o << r.pe << ',' << (r.max_seq_len ? std::to_string(*r.max_seq_len) : "") << ',' << l.length
        << ',' << (l.beyond_table ? "beyond_table" : "ok") << ',';
      if (!l.beyond_table) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.6f,%.6f", l.exact_match, l.token_accuracy);
        o << buf;
      } else {
        o << ',';
      }
      o << '\n';
    }
  }
  return o.str();
}

std::string results_json(const std::string& task, std::size_t train_len,
                         const std::vector<RunResults>& runs) {
  nlohmann::ordered_json j;
  j["task"] = task;
  j["train_len"] = train_len;
  j["runs"] = nlohmann::ordered_json::array();
  for (const auto& r : runs) {
    nlohmann::ordered_json run;
    run["pe"] = r.pe;
    run["max_seq_len"] = r.max_seq_len ? nlohmann::ordered_json(*r.max_seq_len) : nullptr;
    run["train_seconds"] = r.train_seconds;
    run["results"] = nlohmann::ordered_json::array();
    for (const auto& l : r.results) {
      nlohmann::ordered_json x;
      x["length"] = l.length;
      x["status"] = l.beyond_table ? "beyond_table" : "ok";
      x["exact_match"] =
          l.beyond_table ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(l.exact_match);
      x["token_accuracy"] = l.beyond_table ? nlohmann::ordered_json(nullptr)
                                           : nlohmann::ordered_json(l.token_accuracy);
      run["results"].push_back(x);
    }
    j["runs"].push_back(run);
  }
  return j.dump(2) + "\n";
}

namespace {
std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') {
      o += "&lt;";
    } else if (c == '>') {
      o += "&gt;";
    } else if (c == '&') {
      o += "&amp;";
    } else {
      o += c;
    }
  }
  return o;
}
const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
}  // namespace

std::string length_generalization_svg(const std::string& title, std::size_t train_len,
                                      const std::vector<RunResults>& runs) {
  std::size_t lo = SIZE_MAX, hi = 0;
  for (const auto& r : runs) {
    for (const auto& l : r.results) {
      lo = std::min(lo, l.length);
      hi = std::max(hi, l.length);
    }
  }
  if (hi == 0) throw std::invalid_argument("length_generalization_svg: no results to plot");
  if (hi == lo) ++hi;
  const double W = 760, H = 440, L = 70, R = 190, T = 50, B = 60;
  const double pw = W - L - R, ph = H - T - B;
  auto X = [&](double n) {
    return L + pw * (n - static_cast<double>(lo)) / static_cast<double>(hi - lo);
  };
  auto Y = [&](double a) { return T + ph * (1.0 - a); };
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << ' ' << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << L + pw / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">"
    << xml_escape(title) << "</text>\n";
  // Grid and axes.
  for (int i = 0; i <= 10; i += 2) {
    const double a = i / 10.0;
    o << "<line x1=\"" << L << "\" y1=\"" << Y(a) << "\" x2=\"" << L + pw << "\" y2=\"" << Y(a)
      << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << L - 8 << "\" y=\"" << Y(a) + 4 << "\" text-anchor=\"end\">" << a
      << "</text>\n";
  }
  const std::size_t step = std::max<std::size_t>(1, (hi - lo) / 12);
  for (std::size_t n = lo; n <= hi; n += step) {
    o << "<line x1=\"" << X(double(n)) << "\" y1=\"" << T + ph << "\" x2=\"" << X(double(n))
      << "\" y2=\"" << T + ph + 5 << "\" stroke=\"black\"/>\n";
    o << "<text x=\"" << X(double(n)) << "\" y=\"" << T + ph + 19 << "\" text-anchor=\"middle\">"
      << n << "</text>\n";
  }
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"black\"/>\n";
  o << "<text x=\"" << L + pw / 2 << "\" y=\"" << H - 15
    << "\" text-anchor=\"middle\">sequence length n (symbols to copy)</text>\n";
  o << "<text transform=\"translate(20," << T + ph / 2
    << ") rotate(-90)\" text-anchor=\"middle\">exact-match accuracy (greedy)</text>\n";
  // Markers: training length, learned tables' last length.
  auto vline = [&](double n, const char* dash, const std::string& color, const std::string& label,
                   double dy) {
    if (n < double(lo) || n > double(hi)) return;
    o << "<line x1=\"" << X(n) << "\" y1=\"" << T << "\" x2=\"" << X(n) << "\" y2=\"" << T + ph
      << "\" stroke=\"" << color << "\" stroke-dasharray=\"" << dash << "\"/>\n";
    o << "<text x=\"" << X(n) + 4 << "\" y=\"" << T + 14 + dy << "\" fill=\"" << color << "\">"
      << xml_escape(label) << "</text>\n";
  };
  vline(double(train_len), "6,4", "black", "training length n = " + std::to_string(train_len), 0);
  double dy = 16;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].max_seq_len) continue;
    const std::size_t rows = *runs[i].max_seq_len;
    const double nmax = rows >= 2 ? double((rows - 2) / 2) : 0.0;
    vline(nmax + 0.5, "2,3", kColors[i % 6],
          runs[i].pe + " table: " + std::to_string(rows) + " rows", dy);
    dy += 16;
  }
  // Lines, broken at beyond_table.
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string color = kColors[i % 6];
    std::string pts;
    auto flush = [&] {
      if (!pts.empty()) {
        o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\""
          << pts << "\"/>\n";
      }
      pts.clear();
    };
    for (const auto& l : runs[i].results) {
      if (l.beyond_table) {
        flush();
        continue;
      }
      std::ostringstream p;
      p.setf(std::ios::fixed);
      p.precision(1);
      p << X(double(l.length)) << ',' << Y(l.exact_match) << ' ';
      pts += p.str();
      o << "<circle cx=\"" << X(double(l.length)) << "\" cy=\"" << Y(l.exact_match)
        << "\" r=\"2.5\" fill=\"" << color << "\"/>\n";
    }
    flush();
    const double ly = T + 20 + 22.0 * double(i);
    o << "<line x1=\"" << L + pw + 15 << "\" y1=\"" << ly << "\" x2=\"" << L + pw + 40 << "\" y2=\""
      << ly << "\" stroke=\"" << color << "\" stroke-width=\"2\"/>\n";
    o << "<text x=\"" << L + pw + 46 << "\" y=\"" << ly + 4 << "\">" << xml_escape(runs[i].pe)
      << "</text>\n";
  }
  o << "<text x=\"" << L + pw + 15 << "\" y=\"" << T + 30 + 22.0 * double(runs.size())
    << "\" font-size=\"10\" fill=\"#555\">gaps: beyond the table</text>\n";
  o << "</svg>\n";
  return o.str();
}

std::string similarity_png(MatrixView<const float> table, int cell) {
  const std::size_t n = table.rows(), c = table.cols();
  if (n == 0 || c == 0 || cell < 1) {
    throw std::invalid_argument("similarity_png: empty table or cell size < 1");
  }
  std::vector<double> norm(n);
  for (std::size_t r = 0; r < n; ++r) {
    double s = 0;
    for (std::size_t k = 0; k < c; ++k) s += double(table(r, k)) * table(r, k);
    norm[r] = std::sqrt(s);
  }
  const auto side = static_cast<std::size_t>(cell) * n;
  std::vector<unsigned char> px(side * side * 3);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double dot = 0;
      for (std::size_t k = 0; k < c; ++k) dot += double(table(i, k)) * table(j, k);
      const double d = norm[i] * norm[j];
      const double s = d > 0 ? std::clamp(dot / d, -1.0, 1.0) : 0.0;
      // -1 blue, 0 white, +1 red.
      unsigned char rgb[3];
      const double a = std::fabs(s);
      const auto fade = static_cast<unsigned char>(std::lround(255.0 * (1.0 - a)));
      rgb[0] = s >= 0 ? 255 : fade;
      rgb[1] = fade;
      rgb[2] = s >= 0 ? fade : 255;
      for (int y = 0; y < cell; ++y) {
        for (int x = 0; x < cell; ++x) {
          const std::size_t p =
              ((i * static_cast<std::size_t>(cell) + static_cast<std::size_t>(y)) * side +
               j * static_cast<std::size_t>(cell) + static_cast<std::size_t>(x)) *
              3;
          px[p] = rgb[0];
          px[p + 1] = rgb[1];
          px[p + 2] = rgb[2];
        }
      }
    }
  }
  std::string png;
  auto append = [](void* ctx, void* data, int size) {
    static_cast<std::string*>(ctx)->append(static_cast<const char*>(data),
                                           static_cast<std::size_t>(size));
  };
  const int w = static_cast<int>(side);
  if (stbi_write_png_to_func(append, &png, w, w, 3, px.data(), w * 3) == 0) {
    throw std::runtime_error("similarity_png: stb_image_write failed for a " + std::to_string(w) +
                             " x " + std::to_string(w) + " image");
  }
  return png;
}

}  // namespace posemb::lab
