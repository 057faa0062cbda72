// libFuzzer target: the lab's checkpoint metadata and run configuration parsers on arbitrary
// bytes. The input is read twice: as the `__metadata__` object of a checkpoint (a JSON object of
// strings, as safetensors stores it) given to lab::decode_checkpoint_metadata, and as the text
// of posemb.lab.run given to lab::run_from_json (RunConfig::from_json, then validate_run). Bad
// input must end in FileFormatError (the metadata) or ConfigError (the run settings); anything else
// (a crash, a sanitizer report, another exception) is a bug. What is accepted must be valid and
// round-trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "lab/config.hpp"
#include "lab/train/checkpoint.hpp"
#include "lab/train/run.hpp"
#include "posemb/errors.hpp"

namespace {

// Settings that are accepted are usable, and written back they read the same.
void check_accepted(const posemb::lab::RunConfig& run) {
  posemb::lab::validate_run(run);
  const std::string text = run.to_json();
  if (posemb::lab::run_from_json(text).to_json() != text) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    check_accepted(posemb::lab::run_from_json(text));
  } catch (const posemb::lab::ConfigError&) {
  }
  // The metadata map, when the input is a JSON object of strings (as a safetensors reader would
  // have given it).
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return 0;
  posemb::Metadata md;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) return 0;
    md[key] = value.get<std::string>();
  }
  try {
    const posemb::lab::Checkpoint ck = posemb::lab::decode_checkpoint_metadata(md, "<fuzz>");
    if (ck.step > posemb::lab::limits::steps.max || ck.adamw_steps < 0) std::abort();
    check_accepted(ck.run);
  } catch (const posemb::FileFormatError&) {
  }
  return 0;
}
