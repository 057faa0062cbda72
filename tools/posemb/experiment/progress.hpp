// tools/posemb/experiment/progress.hpp: progress on stderr for long commands. A bar redrawn in
// place with what is done, the loss and the time left when stderr is a terminal; otherwise a plain
// line every few seconds. The time left is the bar's own, or given by a command whose work goes on
// after the bar (the demo's stages: "left in all"). Training counts steps with a loss; evaluation
// counts lengths, without one, estimates the time left from each length's work, and on a pipe or
// file says nothing when it ends within the first few seconds.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

namespace posemb::cli {

class Progress {
 public:
  // label: what is running ("train learned"); total: the number of steps.
  Progress(std::string label, std::size_t total, bool quiet = false)
      : label_(std::move(label)),
        total_(total),
        quiet_(quiet),
        tty_(isatty(STDERR_FILENO) != 0),
        start_(Clock::now()),
        last_(start_) {}

  // A bar of lengths evaluated, without a loss ("eval learned: 12/48 lengths done elapsed 5.0s
  // left 15s"), silent on a pipe or file when the evaluation ends within kLogEverySeconds.
  // work[k] (optional, one per length): the estimated cost of the k-th length to finish; the time
  // left is then the elapsed time scaled by the work left, not by the lengths left (the longest
  // lengths run first and cost the most).
  static Progress lengths(std::string label, std::size_t total, bool quiet = false,
                          const std::vector<double>& work = {}) {
    Progress p(std::move(label), total, quiet);
    p.lengths_ = true;
    if (work.size() == total) {
      p.work_done_.assign(total + 1, 0.0);
      for (std::size_t k = 0; k < total; ++k) p.work_done_[k + 1] = p.work_done_[k] + work[k];
    }
    return p;
  }

  // Reports `done` of total with the latest loss (not shown by a bar of lengths); the time left
  // is this bar's, from its pace so far.
  void update(std::size_t done, double loss = 0.0) { show(done, loss, std::nullopt); }

  // The same with the time left given: more than this bar's when the work goes on after it (the
  // demo's stages), "left in all" on the line.
  void update(std::size_t done, double loss, double left_in_all) { show(done, loss, left_in_all); }

 private:
  void show(std::size_t done, double loss, std::optional<double> left_in_all) {
    if (quiet_) return;
    done = std::min(done, total_);
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const bool end = done >= total_;
    // The end is printed once: runs sharing one bar (the demo's grid) report their last step
    // after the total is reached, each with its own loss.
    if (end && ended_) return;
    if (!end && since < (tty_ ? 0.1 : kLogEverySeconds)) return;
    if (end && !tty_ && lengths_ && !printed_ && elapsed < kLogEverySeconds) return;
    ended_ = end;
    printed_ = true;
    last_ = now;
    double left =
        done == 0 ? 0.0 : elapsed * static_cast<double>(total_ - done) / static_cast<double>(done);
    if (!work_done_.empty() && work_done_[done] > 0.0) {
      left = elapsed * (work_done_.back() - work_done_[done]) / work_done_[done];
    }
    if (left_in_all) left = *left_in_all;
    const char* left_text = left_in_all ? "left in all" : "left";
    const std::string loss_text = lengths_ ? "" : fmt::format(" loss {:.4f}", loss);
    if (tty_) {
      constexpr std::size_t width = 30;
      const std::size_t fill = total_ == 0 ? width : width * done / total_;
      fmt::print(stderr, "\r{:<24} [{}{}] {}/{}{} {:.0f}s {} ", label_, std::string(fill, '#'),
                 std::string(width - fill, '.'), done, total_, loss_text, left, left_text);
      if (end) fmt::print(stderr, "\n");
    } else {
      // "step 3/10" of training; "12/48 lengths done" of evaluation (longest first, so no
      // length number is implied).
      const std::string count = lengths_ ? fmt::format("{}/{} lengths done", done, total_)
                                         : fmt::format("step {}/{}", done, total_);
      fmt::print(stderr, "{}: {}{} elapsed {:.1f}s {} {:.0f}s\n", label_, count, loss_text, elapsed,
                 left_text, left);
    }
    std::fflush(stderr);
  }

  using Clock = std::chrono::steady_clock;
  static constexpr double kLogEverySeconds = 5.0;  // between lines on a pipe or file
  std::string label_;
  std::size_t total_;
  bool quiet_, tty_;
  bool lengths_ = false;  // a bar of lengths (Progress::lengths), else of steps with a loss
  bool ended_ = false, printed_ = false;
  std::vector<double> work_done_;  // lengths: the work of the first k lengths done (k <= total)
  Clock::time_point start_, last_;
};

}  // namespace posemb::cli
