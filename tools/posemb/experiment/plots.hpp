// tools/posemb/experiment/plots.hpp: the experiment's plots, drawn with the renderer in viz/.
//
//   length_generalization.svg     exact match against n, one line per encoding (the mean over
//                                 seeds, a band from the lowest to the highest seed; broken
//                                 where n is beyond the table), the training length and each
//                                 table's last n marked on the n axis
//   extension.svg                 exact match past the training length against fine-tuning
//                                 steps: one panel per way of extending the table (or RoPE
//                                 scaling, rope_extension.svg), the others in grey
//   *_similarity.png              cosine similarity between every pair of rows of a table
//   lm_length.svg, lm_extension.svg   the text demo's (`posemb demo --task text`): bits per byte
//                                 against evaluation length (log x), and past L before and after
//                                 fine-tuning
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "lab/experiment/demo_run.hpp"
#include "lab/experiment/sweep_files.hpp"
#include "lab/report/results.hpp"
#include "lab/tasks/task.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb::cli {

// One encoding's runs (one per seed) for the length chart.
struct EncodingRuns {
  std::string pe;
  std::vector<const lab::RunResults*> runs;  // evaluated on the same lengths
};

// The SVG of exact match by length n (mean and min-max over seeds) for encodings trained on
// n <= train_len; a table's last length from the task's length rule.
std::string length_generalization_svg(const std::string& title, const lab::TaskSpec& task,
                                      std::size_t train_len,
                                      const std::vector<EncodingRuns>& encodings);

// The SVG of the mean exact match over n = lo..hi against fine-tuning steps, one line per
// method (mean and min-max over its runs' seeds).
std::string extension_svg(const std::string& title, std::size_t lo, std::size_t hi,
                          const std::vector<lab::ExtensionRun>& runs);

// The text demo's lm_extension.svg: bits per byte at the extended length sL before any update
// and after fine-tuning, one panel per learned-table method (s = 2) and per RoPE scaling and
// factor (mean and min-max over seeds).
std::string lm_extension_svg(const std::string& title, const std::vector<lab::ExtensionRun>& table,
                             const std::vector<lab::ExtensionRun>& rope, std::size_t train_len);

// The PNG heatmap of the cosine similarity between the rows of a learned table.
std::string table_similarity_png(MatrixView<const float> table,  // (rows, dim)
                                 const std::string& title);

// (file name, bytes) of the demo's charts: length_generalization.svg, extension.svg,
// rope_extension.svg (when a rotary encoding ran), learned_table_similarity.png and
// extended_<method>_similarity.png; demo_chart_names(plan) lists them before the run.
std::vector<std::string> demo_chart_names(const lab::DemoPlan& plan);
std::vector<std::pair<std::string, std::string>> demo_charts(const lab::DemoOutcome& out);

// (file name, SVG) for each group of a sweep: exact match by length, one line per encoding, the
// mean over the group's seeds ("length_generalization[_<group>].svg").
std::vector<std::pair<std::string, std::string>> sweep_charts(
    const std::vector<lab::SweepPoint>& points, const std::vector<lab::GridOutcome>& outcomes);

}  // namespace posemb::cli
