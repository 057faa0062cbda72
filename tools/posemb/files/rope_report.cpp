#include "rope_report.hpp"

#include <fmt/core.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "posemb/errors.hpp"

namespace posemb::cli {
namespace {

constexpr long double kTwoPi = 6.283185307179586476925286766559005768L;

std::string seq_len_text(const RopeReport& r) {
  return r.seq_len == 0 ? fmt::format("the trained length ({})", r.config->trained_length())
                        : fmt::format("{} positions", r.seq_len);
}

std::string position_or_none(std::size_t p, std::size_t positions) {
  return p >= positions ? "none" : std::to_string(p);
}

}  // namespace

std::string rope_report_text(const RopeReport& r) {
  const RopeConfig& c = *r.config;
  const RopeFrequencies& f = r.rope->frequencies();
  const auto type = rope_scaling_type(c.scaling);
  std::string out = fmt::format(
      "{}: rope_type {}, head_dim {}, rotary_dim {} ({} pairs), base {} (in effect {}), "
      "attention factor {}\n",
      quote_untrusted(r.path), rope_scaling_name(type), c.head_dim, c.rotary_dim, c.rotary_dim / 2,
      c.base, f.base, f.attention_factor);
  out += fmt::format("lengths: trained {}, extended {}; frequencies for {}{}\n", c.trained_length(),
                     c.extended_length(), seq_len_text(r),
                     type == RopeScalingType::longrope
                         ? (f.long_factors ? " (long_factor)" : " (short_factor)")
                         : "");
  out += fmt::format("{:>5}  {:>24}  {:>14}  {:>10}  {}\n", "pair", "inv_freq", "wavelength",
                     "stretch", "treatment");
  for (std::size_t i = 0; i < f.inv_freq.size(); ++i) {
    const auto wavelength = static_cast<double>(kTwoPi / f.inv_freq[i]);
    out += fmt::format("{:>5}  {:>24.17g}  {:>14.6g}  {:>10.6g}  {}\n", i,
                       static_cast<double>(f.inv_freq[i]), wavelength,
                       static_cast<double>(f.stretch[i]), rope_pair_treatment_name(f.treatment[i]));
  }
  if (r.precision.empty()) return out;
  out += fmt::format(
      "angles formed in each format against posemb's (long double), positions [0, {}):\n",
      r.precision_positions);
  out += fmt::format("{:>9}  {:>16}  {:>20}  {:>18}  {}\n", "format", "max error (rad)",
                     "at position, pair", fmt::format("first > {:g} rad", r.threshold),
                     "first overflow");
  for (const AnglePrecision& a : r.precision) {
    out += fmt::format("{:>9}  {:>16.6g}  {:>20}  {:>18}  {}\n", angle_format_name(a.format),
                       a.max_error, fmt::format("{}, {}", a.worst_position, a.worst_pair),
                       position_or_none(a.first_over, r.precision_positions),
                       position_or_none(a.first_overflow, r.precision_positions));
  }
  out += fmt::format("{:>9}", "up to");
  for (const AngleErrorUpTo& u : r.precision.front().by_length)
    out += fmt::format(" {:>9}", u.upto);
  out += "\n";
  for (const AnglePrecision& a : r.precision) {
    out += fmt::format("{:>9}", angle_format_name(a.format));
    for (const AngleErrorUpTo& u : a.by_length) out += fmt::format(" {:>9.2e}", u.max_error);
    out += "\n";
  }
  return out;
}

std::string rope_report_json(const RopeReport& r) {
  const RopeConfig& c = *r.config;
  const RopeFrequencies& f = r.rope->frequencies();
  nlohmann::ordered_json j;
  j["rope_type"] = rope_scaling_name(rope_scaling_type(c.scaling));
  j["head_dim"] = c.head_dim;
  j["rotary_dim"] = c.rotary_dim;
  j["base"] = c.base;
  j["base_in_effect"] = f.base;
  j["attention_factor"] = f.attention_factor;
  j["trained_length"] = c.trained_length();
  j["extended_length"] = c.extended_length();
  j["seq_len"] = r.seq_len == 0 ? c.trained_length() : r.seq_len;
  j["long_factors"] = f.long_factors;
  for (std::size_t i = 0; i < f.inv_freq.size(); ++i) {
    j["inv_freq"].push_back(static_cast<double>(f.inv_freq[i]));
    j["wavelengths"].push_back(static_cast<double>(kTwoPi / f.inv_freq[i]));
    j["stretch"].push_back(static_cast<double>(f.stretch[i]));
    j["treatment"].push_back(rope_pair_treatment_name(f.treatment[i]));
  }
  j["warnings"] = c.warnings;
  if (!r.precision.empty()) {
    j["precision"]["positions"] = r.precision_positions;
    j["precision"]["threshold"] = r.threshold;
    for (const AnglePrecision& a : r.precision) {
      nlohmann::ordered_json p;
      p["max_error"] = a.max_error;
      p["worst_position"] = a.worst_position;
      p["worst_pair"] = a.worst_pair;
      p["first_over"] = a.first_over >= r.precision_positions
                            ? nlohmann::ordered_json()
                            : nlohmann::ordered_json(a.first_over);
      p["first_overflow"] = a.first_overflow >= r.precision_positions
                                ? nlohmann::ordered_json()
                                : nlohmann::ordered_json(a.first_overflow);
      for (const AngleErrorUpTo& u : a.by_length) p["by_length"].push_back({u.upto, u.max_error});
      j["precision"][std::string(angle_format_name(a.format))] = p;
    }
  }
  return j.dump(2) + "\n";
}

void refuse_precision_work(const RopeReport& r) {
  refuse_work_over("rope --precision",
                   fmt::format("{} positions of {} pairs ({}x{})", r.precision_positions,
                               r.rope->pairs(), r.config->head_dim, r.config->rotary_dim),
                   static_cast<double>(rope_angle_precision_work(*r.rope, r.precision_positions)),
                   static_cast<double>(kAnglePrecisionMaxWork), "angle checks",
                   "2^31, about a minute", "give fewer positions (flag --seq-len)");
}

std::string rope_set_report(const std::string& out, const std::vector<std::string>& keys,
                            const std::string& type, const RopeConfig& c, double factor) {
  std::string written;
  for (const std::string& k : keys) written += (written.empty() ? "" : " and ") + k;
  const std::string why = c.extended_length() == c.scaled_length()
                              ? fmt::format("{} x the trained {}", factor, c.trained_length())
                              : fmt::format(
                                    "max_position_embeddings, how far transformers runs the model; "
                                    "{} x the trained {} would be {}",
                                    factor, c.trained_length(), c.scaled_length());
  return fmt::format(
      "wrote {}: {} {}; lengths: trained {}, extended {} ({}); max_position_embeddings stays {}, "
      "every other key as it was\n",
      out, written, type, c.trained_length(), c.extended_length(), why, c.max_position_embeddings);
}

}  // namespace posemb::cli
