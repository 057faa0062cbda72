// lab/experiment/lm_demo.hpp: the text demo's runs (`posemb demo --task text`: a DemoPlan with
// `language`, lab/experiment/demo_plan.hpp); run_demo and demo_work (demo_run.hpp) come here for
// such a plan.
//
// 1. Every encoding x seed trained at L, evaluated in bits per byte at L, 2L, 4L, 8L on the same
//    first plan.eval.text_bytes bytes of the validation text (Press et al.'s non-overlapping
//    windows; a learned table past its rows is beyond_table).
// 2. Each learned run's table extended to 2L by copy, interpolate and random rows; each rotary
//    run at 2L and 4L with every scaling of plan.rope_methods (factors plan.rope_factors). Each
//    evaluated at L..sL before any update (step 0) and after fine-tuning at sL.
#pragma once

#include <filesystem>
#include <vector>

#include "lab/experiment/demo_stage.hpp"

namespace posemb::lab {

// The estimated multiply-adds of each of the text demo's two stages.
std::vector<double> lm_demo_work(const DemoPlan& plan);

// Runs the text demo (plan.language); as run_demo.
DemoOutcome run_lm_demo(const DemoPlan& plan, const std::filesystem::path& checkpoint_dir,
                        const DemoProgressFn& progress);

}  // namespace posemb::lab
