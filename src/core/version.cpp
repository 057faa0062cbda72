#include "posemb/version.hpp"

namespace posemb {
const char* version() noexcept {
  return POSEMB_VERSION_STRING;
}
}  // namespace posemb
