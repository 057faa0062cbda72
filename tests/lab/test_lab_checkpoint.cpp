// Checkpoints are untrusted input (lab/train/checkpoint.hpp, lab::run_from_json): every metadata
// entry and every field of the run JSON is checked with its type and limits, and refused with
// an exception naming the file and the key (never std::stoul's "stoul", map::at, a JSON library
// type error, a huge allocation or a resume at step 2^64 - 1); tensors are checked by shape
// before a model is built, and by value (finite) as they are copied. The memory estimates of the
// lab are upper bounds of what is allocated, and refuse before allocating.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include "lab/config.hpp"
#include "lab/eval/evaluate.hpp"
#include "lab/model/decoder.hpp"
#include "lab/model/model.hpp"
#include "lab/train/checkpoint.hpp"
#include "lab/train/run.hpp"
#include "lab/train/trainer.hpp"
#include "lab_runs.hpp"
#include "posemb/errors.hpp"
#include "posemb/memory.hpp"
#include "posemb/parallel.hpp"
#include "posemb/safetensors.hpp"
#include "temp_dir.hpp"

// Every byte allocated with operator new (Matrix, std::vector, strings), counted while
// g_counting is set: what a constructor allocates, transients included.
namespace {
std::atomic<bool> g_counting{false};
std::atomic<std::size_t> g_allocated{0};
void* counted(std::size_t n, std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocated += n;
  void* p = align > alignof(std::max_align_t)
                ? std::aligned_alloc(align, (n + align - 1) / align * align + (n == 0 ? align : 0))
                : std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace
void* operator new(std::size_t n) {
  return counted(n, 0);
}
void* operator new[](std::size_t n) {
  return counted(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted(n, static_cast<std::size_t>(a));
}
// The nothrow forms too (std::stable_sort's temporary buffer uses them): every form of new must
// be replaced, or a buffer from the library's new would be freed here (ASan: a mismatch).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return counted(n, static_cast<std::size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return counted(n, static_cast<std::size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace posemb::lab {
namespace {

using Json = nlohmann::ordered_json;

RunConfig tiny_run(const std::string& pe = "learned") {
  RunConfig r = testing::tiny_run_config(pe, 3, 4, 32);
  r.model.n_layers = 1;
  r.train.batch = 4;
  r.train.micro_batch = 2;
  r.train.steps = 3;
  r.train.warmup = 1;
  return r;
}

// run_from_json (what a checkpoint reader calls) must refuse `text` with a ConfigError that names
// `field` (when given) and holds no control byte and no CLI flag.
void expect_json_refused(const std::string& text, const std::string& field,
                         const std::string& why) {
  try {
    (void)run_from_json(text);
    ADD_FAILURE() << why << ": accepted " << text;
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    if (!field.empty()) {
      // The field is named: in the message ("model.d_model") or among the error's fields.
      bool named = what.find(field) != std::string::npos;
      for (const auto& f : e.fields()) named = named || f.find(field) != std::string::npos;
      EXPECT_TRUE(named) << why << ": " << what;
    }
    for (unsigned char c : what) EXPECT_GE(c, 0x20) << why << ": a control byte in " << what;
    EXPECT_EQ(what.find("--"), std::string::npos) << why << ": " << what;
  }
}

TEST(RunConfigJson, EveryFieldMissingOrOfAWrongTypeIsRefusedByName) {
  const Json good = Json::parse(tiny_run().to_json());
  std::size_t fields = 0;
  for (const auto& [section, keys] : good.items()) {
    for (const auto& [key, value] : keys.items()) {
      ++fields;
      const std::string name = section + "." + key;
      Json missing = good;
      missing[section].erase(key);
      expect_json_refused(missing.dump(), name, name + " missing");
      // No setting takes any of these: a negative number, null, an array, an object, a
      // string that names nothing.
      for (const char* bad : {"-1", "-1e300", "null", "[]", "{}", "\"x\""}) {
        Json j = good;
        j[section][key] = Json::parse(bad);
        expect_json_refused(j.dump(), "", name + " = " + bad);
      }
      // Counts are whole numbers: 1.5 and 1e8 written as a float are refused.
      if (value.is_number_unsigned()) {
        for (double bad : {1.5, 1e8, 1e24}) {
          Json j = good;
          j[section][key] = bad;
          expect_json_refused(j.dump(), name, name + " = " + std::to_string(bad));
        }
      }
    }
  }
  EXPECT_EQ(fields, 26u);
}

TEST(RunConfigJson, LimitsStructureAndSyntax) {
  const std::string good = tiny_run().to_json();
  const Json j = Json::parse(good);
  auto with = [&](const char* section, const char* key, Json v) {
    Json k = j;
    k[section][key] = std::move(v);
    return k.dump();
  };
  expect_json_refused(with("model", "d_model", -1), "model.d_model", "d_model -1");
  // A number past double's range is the parser's out_of_range, not a parse_error (found by
  // fuzz_checkpoint_metadata): refused like any malformed text.
  {
    std::string text = good;
    const auto at = text.find("\"lr\":");
    ASSERT_NE(at, std::string::npos);
    text.insert(at + 5, "1E474974513,\"x\":");
    expect_json_refused(text, "", "a number overflowing double");
  }
  expect_json_refused(with("model", "vocab_size", 1e8), "model.vocab_size", "vocab_size 1e8");
  expect_json_refused(with("model", "vocab_size", 100000000), "vocab_size", "vocab 1e8 whole");
  expect_json_refused(with("model", "n_layers", 1000000000), "n_layers", "n_layers 1e9");
  expect_json_refused(with("model", "d_ff", 65537), "d_ff", "d_ff past its limit");
  expect_json_refused(with("model", "max_seq_len", (1u << 20) + 1), "max_seq_len", "table rows");
  expect_json_refused(with("model", "pe", "learned\x1b[31m"), "model.pe", "unknown encoding");
  expect_json_refused(with("task", "kind", "copy\x07"), "task.kind", "unknown task");
  expect_json_refused(with("train", "lr", 1e300), "train.lr", "lr past float");
  expect_json_refused(with("train", "beta1", 1.0), "beta1", "beta1 = 1");
  Json extra = j;
  extra["model"]["dropout"] = 0.1;
  expect_json_refused(extra.dump(), "dropout", "unknown key");
  Json section = j;
  section["eval"] = Json::object();
  expect_json_refused(section.dump(), "eval", "unknown section");
  expect_json_refused("{\"model\":1,\"task\":{},\"train\":{}}", "model", "section not object");
  // A repeated key (the JSON library would keep the last one silently).
  std::string twice = good;
  twice.insert(twice.find("\"d_model\""), "\"d_model\":32,");
  expect_json_refused(twice, "d_model", "a key twice");
  // Every prefix of a valid text is malformed; none crashes or is accepted.
  for (std::size_t n = 0; n < good.size(); ++n)
    expect_json_refused(good.substr(0, n), "", "prefix");
  expect_json_refused(std::string(100000, '['), "", "deep nesting, over the size bound");
  expect_json_refused(std::string(1000, '[') + std::string(1000, ']'), "", "nested arrays");
  expect_json_refused(std::string(kMaxRunJsonBytes + 1, ' '), "", "too long");
  expect_json_refused("[1, 2]", "", "not an object");
  // The JSON parser would stop at a NUL and ignore what follows.
  expect_json_refused(good + std::string(1, '\0') + "junk", "", "a NUL after the object");
  expect_json_refused(good.substr(0, 5) + std::string(1, '\0') + good.substr(5), "",
                      "a NUL inside");
  // Accepted text round-trips.
  EXPECT_EQ(RunConfig::from_json(good).to_json(), good);
}

// decode_checkpoint_metadata of the metadata of tiny_run() with `key` set to `value` (or
// erased when value is null).
Checkpoint decode_with(const std::string& key, const char* value) {
  Metadata md = {{"format", kCheckpointFormat},
                 {"posemb.lab.run", tiny_run().to_json()},
                 {"posemb.lab.step", "3"},
                 {"posemb.lab.adamw_steps", "3"}};
  if (value == nullptr) {
    md.erase(key);
  } else {
    md[key] = value;
  }
  return decode_checkpoint_metadata(md, "dir/ck\x1b.safetensors");
}

TEST(CheckpointMetadata, StepsAreWholeNumbersInRangeAndEveryEntryIsNamed) {
  for (const char* key : {"posemb.lab.step", "posemb.lab.adamw_steps"}) {
    for (const char* bad : {"-1", "abc", "", "1e3", " 1", "1 ", "+1", "0x10", "1.0",
                            "1111111111111111111111111", "18446744073709551616", "100000001"}) {
      try {
        (void)decode_with(key, bad);
        ADD_FAILURE() << key << " = '" << bad << "' accepted";
      } catch (const FileFormatError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(key), std::string::npos) << what;
        EXPECT_NE(what.find("'dir/ck\\x1b.safetensors'"), std::string::npos) << what;
        EXPECT_EQ(e.path(), "dir/ck\x1b.safetensors");
      }
    }
    EXPECT_EQ(decode_with(key, "100000000").step,
              std::string(key) == "posemb.lab.step" ? 100000000u : 3u);
    EXPECT_EQ(decode_with(key, "007").adamw_steps,
              std::string(key) == "posemb.lab.adamw_steps" ? 7 : 3);
  }
  for (const char* key :
       {"format", "posemb.lab.run", "posemb.lab.step", "posemb.lab.adamw_steps"}) {
    try {
      (void)decode_with(key, nullptr);
      ADD_FAILURE() << key << " missing: accepted";
    } catch (const FileFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW((void)decode_with("format", "posemb-lab-checkpoint/2"), FileFormatError);
  EXPECT_THROW((void)decode_with("posemb.lab.run", "{\"model\":"), FileFormatError);
  EXPECT_THROW((void)decode_with("posemb.lab.run", ""), FileFormatError);
}

// A checkpoint of tiny_run() written to dir, then rewritten with `edit` applied to its tensors.
template <class Edit>
std::string edited_checkpoint(const test::TempDir& dir, const std::string& name, Edit edit) {
  const std::string good = dir.file("good.safetensors");
  Trainer tr(tiny_run());
  tr.train_step();
  tr.save(good);
  TensorFile f = read_safetensors(good);
  edit(f.tensors);
  const std::string path = dir.file(name);
  write_safetensors(path, f.tensors, f.metadata);
  return path;
}

Tensor float_tensor(const std::string& name, std::size_t rows, std::size_t cols, float value) {
  Matrix<float> m(rows, cols);
  for (float& v : m.flat()) v = value;
  return Tensor::from_matrix(name, m);
}

void replace(std::vector<Tensor>& ts, const std::string& name, Tensor t) {
  for (auto& x : ts) {
    if (x.name() == name) x = std::move(t);
  }
}

TEST(CheckpointTensors, ShapesDtypesAndValuesAreCheckedNamingTheTensor) {
  test::TempDir dir;
  struct Case {
    const char* file;
    std::function<void(std::vector<Tensor>&)> edit;
    const char* expect;  // in the message
  };
  const std::vector<Case> cases = {
      {"missing.safetensors",
       [](auto& ts) {
         std::erase_if(ts, [](const Tensor& t) { return t.name() == "head.weight"; });
       },
       "head.weight"},
      {"shape.safetensors",
       [](auto& ts) { replace(ts, "wte.weight", float_tensor("wte.weight", 8, 17, 0)); },
       "wte.weight"},
      {"dtype.safetensors",
       [](auto& ts) {
         replace(ts, "lnf.bias", Tensor::from_matrix("lnf.bias", Matrix<std::int64_t>(1, 16)));
       },
       "I64"},
      {"table_cols.safetensors",
       [](auto& ts) { replace(ts, "wpe.weight", float_tensor("wpe.weight", 8, 15, 0)); },
       "wpe.weight"},
      {"table_short.safetensors",
       [](auto& ts) { replace(ts, "wpe.weight", float_tensor("wpe.weight", 7, 16, 0)); }, "rows"},
  };
  for (const auto& c : cases) {
    const std::string path = edited_checkpoint(dir, c.file, c.edit);
    try {
      (void)read_checkpoint(path);
      ADD_FAILURE() << c.file << ": accepted";
    } catch (const FileFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
      EXPECT_EQ(e.path(), path);
    }
  }
  // A longer table (posemb resize of the checkpoint) is the model's max_seq_len.
  const std::string longer = edited_checkpoint(dir, "longer.safetensors", [](auto& ts) {
    replace(ts, "wpe.weight", float_tensor("wpe.weight", 40, 16, 0.5f));
  });
  EXPECT_EQ(read_checkpoint(longer).run.model.max_seq_len, 40u);
  EXPECT_EQ(load_model(longer).config().max_seq_len, 40u);
  // Values: a NaN in a weight, an infinity in a moment, a negative second moment.
  auto poisoned = [&](const char* file, const char* tensor, float v) {
    return edited_checkpoint(dir, file, [&](auto& ts) {
      for (auto& t : ts) {
        if (t.name() != tensor) continue;
        Matrix<float> m = t.template to_matrix<float>();
        m(m.rows() - 1, m.cols() - 1) = v;
        t = Tensor::from_matrix(tensor, m);
      }
    });
  };
  const std::string nan = poisoned("nan.safetensors", "blocks.0.mlp.fc.weight", NAN);
  try {
    (void)load_model(nan);
    ADD_FAILURE() << "a NaN weight was loaded";
  } catch (const FileFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("NaN at row 15, column 31"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(
      (void)Trainer::load(poisoned("inf.safetensors", "optimizer.adamw.m.lnf.bias", INFINITY)),
      FileFormatError);
  EXPECT_THROW((void)Trainer::load(poisoned("neg.safetensors", "optimizer.adamw.v.lnf.bias", -1)),
               FileFormatError);
}

// Bytes allocated (operator new) while f runs.
template <class F>
std::size_t allocated_by(F&& f) {
  g_allocated = 0;
  g_counting = true;
  f();
  g_counting = false;
  return g_allocated.load();
}

TEST(MemoryEstimates, AreUpperBoundsOfWhatIsAllocated) {
  // Scratch a thread allocates once, on its first use (the matrix product's packing buffer,
  // lab/model/gemm_simd.cpp), is not the trainer's: on one thread, after a first trainer has run,
  // only the trainer's own allocations are counted (on two, whether a helper thread's first product
  // falls in the counted step varies from run to run).
  const std::size_t threads = parallel_threads();
  set_parallel_threads(1);
  {
    Trainer warm(tiny_run("learned"));
    warm.train_step();
  }
  for (const char* pe : {"learned", "learned-randomized", "sinusoidal", "rope", "none"}) {
    SCOPED_TRACE(pe);
    const RunConfig run = tiny_run(pe);
    const ModelConfig& mc = run.model;
    const std::size_t model = allocated_by([&] { Model m(mc); });
    EXPECT_GE(Model::bytes(mc), model - std::min<std::size_t>(model, 64 << 10));
    const std::size_t acts = allocated_by([&] { Activations a(mc, 3, 12); });
    EXPECT_GE(Activations::bytes(mc, 3, 12), acts - std::min<std::size_t>(acts, 4 << 10));
    EXPECT_LE(Activations::bytes(mc, 3, 12), 2 * acts);
    Model m(mc);
    m.reserve_positions(40);
    const std::size_t dec = allocated_by([&] { Decoder d(m, 5, 30); });
    EXPECT_GE(Decoder::bytes(mc, 5, 30), dec - std::min<std::size_t>(dec, 4 << 10));
    EXPECT_LE(Decoder::bytes(mc, 5, 30), 2 * dec);
    // A trainer and its first step (AdamW's moments appear there).
    const std::size_t trainer = allocated_by([&] {
      Trainer tr(run);
      tr.train_step();
    });
    EXPECT_GE(Trainer::memory_bytes(run), trainer / 2) << "far below what training allocates";
    EXPECT_LE(Trainer::memory_bytes(run), 4 * trainer) << "far above what training allocates";
  }
  set_parallel_threads(threads);
}

TEST(MemoryEstimates, RefuseBeforeAllocating) {
  RunConfig big = tiny_run();
  big.model.n_layers = 64;
  big.model.d_model = 4096;
  big.model.d_ff = 65536;
  big.model.n_heads = 64;
  big.train.batch = 65536;
  big.task.train_len = 1024;
  big.model.max_seq_len = symbols::tokens(1024);
  ASSERT_NO_THROW(validate_run(big));
  const std::size_t limit = memory_limit();
  set_memory_limit(std::size_t{16} << 30);  // whatever the machine: 16 GiB
  const std::size_t used = allocated_by([&] {
    EXPECT_THROW(Trainer t(big), MemoryLimitExceeded);
    EXPECT_THROW(Model m(big.model), MemoryLimitExceeded);
  });
  EXPECT_LT(used, std::size_t{1} << 20) << "allocated before refusing";
  set_memory_limit(std::size_t{64} << 10);
  try {
    Trainer t(tiny_run());
    ADD_FAILURE() << "a trainer of " << Trainer::memory_bytes(tiny_run()) << " bytes in 64 KiB";
  } catch (const MemoryLimitExceeded& e) {
    EXPECT_EQ(e.limit(), std::size_t{64} << 10);
    EXPECT_EQ(e.bytes(), Trainer::memory_bytes(tiny_run()));
    EXPECT_NE(std::string(e.what()).find("train (batch 4"), std::string::npos) << e.what();
  }
  set_memory_limit(limit);
}

TEST(Evaluate, LengthsBeyondTheTableCostNothingAndWorkIsBounded) {
  const RunConfig run = tiny_run();
  Trainer tr(run);
  EvalConfig ec;
  ec.min_len = 1;
  ec.max_len = limits::eval_len.max;
  ec.samples = 3;
  // The table holds n <= 3: the other 99,997 lengths are beyond it, found from the lengths alone.
  std::vector<LengthResult> rows;
  const std::size_t used = allocated_by([&] { rows = evaluate(tr.model(), run.task, ec); });
  ASSERT_EQ(rows.size(), ec.max_len);
  for (const auto& r : rows) EXPECT_EQ(r.beyond_table, r.length > 3) << r.length;
  EXPECT_LT(used, std::size_t{1} << 30);
  // An encoding with no table: the same lengths are far more work than an evaluation may take.
  try {
    check_evaluation(tiny_run("rope").model, run.task, ec);
    ADD_FAILURE() << "lengths up to 100000 accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.fields(), (std::vector<std::string>{"eval.max_len", "eval.samples"}));
  }
  // A budget for one length at a time gives the same results as an unlimited one.
  Trainer rope(tiny_run("rope"));
  EvalConfig small;
  small.max_len = 6;
  small.samples = 4;
  const auto free_rows = evaluate(rope.model(), run.task, small);
  const std::size_t limit = memory_limit();
  set_memory_limit(evaluation_bytes(rope.model().config(), run.task, small, 1));
  const auto tight_rows = evaluate(rope.model(), run.task, small);
  set_memory_limit(evaluation_bytes(rope.model().config(), run.task, small, 1) - 1);
  EXPECT_THROW((void)evaluate(rope.model(), run.task, small), MemoryLimitExceeded);
  set_memory_limit(limit);
  ASSERT_EQ(free_rows.size(), tight_rows.size());
  for (std::size_t i = 0; i < free_rows.size(); ++i) {
    EXPECT_EQ(free_rows[i].exact_match, tight_rows[i].exact_match);
    EXPECT_EQ(free_rows[i].token_accuracy, tight_rows[i].token_accuracy);
  }
}

// Parameters that overflow float (a checkpoint's table of 3e38 values) give infinite or NaN
// logits: evaluation stops naming the length, instead of scoring their argmax (0.000 everywhere).
TEST(Evaluate, NonFiniteLogitsStopTheEvaluation) {
  const RunConfig run = tiny_run();
  Trainer tr(run);
  EvalConfig ec;
  ec.max_len = 3;
  ec.samples = 4;
  ASSERT_NO_THROW((void)evaluate(tr.model(), run.task, ec));
  for (const TensorSlot& s : tr.model().tensors()) {
    if (s.name != "wpe.weight") continue;
    for (std::size_t r = 0; r < s.value.rows(); ++r) {
      for (float& v : s.value.row(r)) v = 3e38f;
    }
  }
  try {
    (void)evaluate(tr.model(), run.task, ec);
    ADD_FAILURE() << "a table of 3e38 values was evaluated";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(typeid(e), typeid(std::runtime_error));
    EXPECT_NE(std::string(e.what()).find("evaluate: the logits are infinite or NaN at length 1,"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace posemb::lab
