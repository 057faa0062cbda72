// The checks made before the work (lab/train/preflight.hpp).
#include "lab/train/preflight.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "lab/config.hpp"
#include "posemb/safetensors.hpp"

namespace posemb::lab {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::size_t bytes_in_use() {
  std::size_t pages = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%zu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

void check_resume_step(std::size_t step, std::size_t total_steps) {
  if (step <= total_steps) return;
  throw ConfigError({"train.steps"}, "the checkpoint is at step " + std::to_string(step) +
                                         ", past the run's " + std::to_string(total_steps) +
                                         " steps: nothing would be trained (give --steps " +
                                         std::to_string(step) + " or more to continue it)");
}

void check_checkpoint_metadata(std::string_view run_json, std::string_view lineage) {
  if (lineage.size() > kMaxLineageBytes) {
    throw std::runtime_error(
        "the run's lineage (the provenance of its table and checkpoints) has " +
        std::to_string(lineage.size()) + " bytes, more than the " +
        std::to_string(kMaxLineageBytes) +
        " a checkpoint may hold; nothing was trained (give a table whose posemb.provenance is "
        "shorter)");
  }
  // The settings, the lineage twice (posemb.lab.lineage and posemb.provenance), and the fixed
  // keys and values (under 1 KiB).
  const std::size_t need = run_json.size() + 2 * lineage.size() + 1024;
  if (need > kSafetensorsMaxMetadataBytes) {
    throw std::runtime_error("the checkpoint's metadata would have about " + std::to_string(need) +
                             " bytes, more than safetensors' limit of " +
                             std::to_string(kSafetensorsMaxMetadataBytes) +
                             "; nothing was trained");
  }
}

void check_thread_budget(std::size_t threads, std::string_view what) {
  struct rlimit rl {};
  if (threads <= 1 || ::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
  check_thread_budget(threads, what, static_cast<std::size_t>(rl.rlim_cur), bytes_in_use());
}

void check_thread_budget(std::size_t threads, std::string_view what, std::size_t limit,
                         std::size_t in_use) {
  if (threads <= 1) return;
  // Per thread: an 8 MiB stack and a 64 MiB malloc arena.
  constexpr std::size_t kPerThread = std::size_t{72} << 20;
  const std::size_t room = limit > in_use + 16 * kMiB ? limit - in_use - 16 * kMiB : 0;
  if (threads <= room / kPerThread) return;
  throw std::runtime_error(
      std::string(what) + ": " + std::to_string(threads) + " threads need about " +
      std::to_string(threads * (kPerThread / kMiB)) + " MiB of address space (" +
      std::to_string(kPerThread / kMiB) + " MiB each: stack and malloc arena), " +
      "but the address-space limit (ulimit -v) of " + std::to_string(limit / kMiB) +
      " MiB leaves " + std::to_string(room / kMiB) + " MiB with " + std::to_string(in_use / kMiB) +
      " MiB in use: at most " + std::to_string(room / kPerThread) +
      " fit (use fewer, or raise the limit)");
}

}  // namespace posemb::lab
