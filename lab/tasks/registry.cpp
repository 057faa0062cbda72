// The registry of the lab's tasks (lab/tasks/registry.hpp).
#include "lab/tasks/registry.hpp"

#include <array>

#include "posemb/errors.hpp"

namespace posemb::lab {

// Each task's file in lab/tasks/ defines its spec; name it here, in both lines (the order is the
// order of --help; the first is the default).
extern const TaskSpec kCopy, kReverse, kSort, kOddFirst, kText;
namespace {
constexpr std::array kRegistry = {&kCopy, &kReverse, &kSort, &kOddFirst, &kText};
}  // namespace

std::span<const TaskSpec* const> tasks() {
  return kRegistry;
}

const TaskSpec& find_task(std::string_view name) {
  for (const auto* t : kRegistry) {
    if (t->name == name) return *t;
  }
  throw ConfigError({"task.kind"}, "task config: task " + quote_untrusted(name, 64) +
                                       " is not one of " + task_names());
}

const std::string& default_task_name() {
  static const std::string name(kRegistry.front()->name);
  return name;
}

std::vector<std::string> task_name_list() {
  std::vector<std::string> out;
  for (const auto* t : kRegistry) out.emplace_back(t->name);
  return out;
}

std::string task_names() {
  std::string s;
  for (const auto* t : kRegistry) s += (s.empty() ? "" : ", ") + std::string(t->name);
  return s;
}

namespace {
// The tasks that read a corpus, for messages.
std::string corpus_task_names() {
  std::string s;
  for (const auto* t : kRegistry) {
    if (t->complete != nullptr) s += (s.empty() ? "" : ", ") + std::string(t->name);
  }
  return s;
}
}  // namespace

std::string task_rules() {
  std::string s;
  for (const auto* t : kRegistry) {
    s += (s.empty() ? "" : ", ") + std::string(t->name) + " (" + std::string(t->rule) + ")";
  }
  return s;
}

const TaskSpec& validate_task(const TaskConfig& cfg) {
  const TaskSpec& task = find_task(cfg.kind);
  cfg.check_fields();
  if (task.complete == nullptr && (!cfg.corpus.empty() || !cfg.corpus_identity.empty())) {
    throw ConfigError({"task.corpus"}, "task config: task " + std::string(task.name) +
                                           " reads no corpus; a corpus is for a task that "
                                           "reads one (" +
                                           corpus_task_names() + ")");
  }
  if (task.validate != nullptr) task.validate(cfg);
  return task;
}

const TaskSpec& complete_task(TaskConfig& cfg) {
  const TaskSpec& task = validate_task(cfg);
  if (task.complete != nullptr) task.complete(cfg);
  return task;
}

std::size_t task_vocab_size(const TaskConfig& cfg) {
  return find_task(cfg.kind).vocab_size(cfg);
}

std::size_t train_tokens(const TaskConfig& cfg) {
  return find_task(cfg.kind).tokens(cfg.train_len);
}

std::size_t longest_length_within(const TaskSpec& task, std::size_t tokens) {
  // tokens(n) increases with n: double n until a row no longer fits, then bisect.
  std::size_t lo = 0, hi = 1;
  while (task.tokens(hi) <= tokens && hi < (std::size_t{1} << 40)) {
    lo = hi;
    hi *= 2;
  }
  // task.tokens(lo) <= tokens (or lo == 0) and task.tokens(hi) > tokens: bisect.
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (task.tokens(mid) <= tokens) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace posemb::lab
