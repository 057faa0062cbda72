// tools/posemb/experiment/demo_flags.hpp: the flags of `posemb demo` (lab::DemoOptions, the
// output folder, the runs at a time), their help from the tasks' presets (lab/tasks/).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "lab/experiment/demo_plan.hpp"

namespace posemb::cli {

struct DemoFlags {
  lab::DemoOptions demo;
  std::string out = "demo-out";
  int threads = 0;     // concurrent runs (0: the machine's cores)
  bool force = false;  // replace the run in --out
};

void add_demo_flags(CLI::App* cmd, DemoFlags& f);

}  // namespace posemb::cli
