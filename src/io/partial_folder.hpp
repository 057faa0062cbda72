// src/io/partial_folder.hpp: a temporary folder being filled (a checkpoint folder written
// atomically), recorded so that posemb::remove_partial_files() can remove it, with everything in
// it, from a signal handler.
#pragma once

#include <string>

namespace posemb::detail {

// Records `name` in the folder open as `parent_fd` for the lifetime of the object (up to 8 at
// once; beyond that, unrecorded). The caller keeps parent_fd open meanwhile.
class PartialFolder {
 public:
  PartialFolder(int parent_fd, const std::string& name);
  ~PartialFolder();
  PartialFolder(const PartialFolder&) = delete;
  PartialFolder& operator=(const PartialFolder&) = delete;

 private:
  int slot_ = -1;
};

}  // namespace posemb::detail
