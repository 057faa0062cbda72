// tools/posemb/progress.hpp: progress on stderr for long commands. A bar redrawn in place with
// step, loss and time left when stderr is a terminal; otherwise a plain line every few seconds.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

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

  // Reports `done` of total steps with the latest loss.
  void update(std::size_t done, double loss) {
    if (quiet_) return;
    done = std::min(done, total_);
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    const bool end = done >= total_;
    // The end is printed once: runs sharing one bar (the demo's grid) report their last step
    // after the total is reached, each with its own loss.
    if (end && ended_) return;
    if (!end && since < (tty_ ? 0.1 : 5.0)) return;
    ended_ = end;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double left =
        done == 0 ? 0.0 : elapsed * static_cast<double>(total_ - done) / static_cast<double>(done);
    if (tty_) {
      constexpr std::size_t width = 30;
      const std::size_t fill = total_ == 0 ? width : width * done / total_;
      fmt::print(stderr, "\r{:<24} [{}{}] {}/{} loss {:.4f} {:.0f}s left ", label_,
                 std::string(fill, '#'), std::string(width - fill, '.'), done, total_, loss, left);
      if (end) fmt::print(stderr, "\n");
    } else {
      fmt::print(stderr, "{}: step {}/{} loss {:.4f} elapsed {:.1f}s left {:.0f}s\n", label_, done,
                 total_, loss, elapsed, left);
    }
    std::fflush(stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_;
  std::size_t total_;
  bool quiet_, tty_;
  bool ended_ = false;
  Clock::time_point start_, last_;
};

}  // namespace posemb::cli
