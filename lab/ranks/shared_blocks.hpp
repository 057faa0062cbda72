// lab/ranks/shared_blocks.hpp: memory that every rank of a job on one machine maps, so that a rank
// reads what another wrote without a message carrying it. Each rank writes its own block; every
// rank reads every block; fence() orders the two.
//
//   auto blocks = lab::SharedBlocks::create(comm, my_bytes);   // collective; null: not possible
//   if (blocks) {
//     blocks->fence();                       // the others are done reading my block
//     std::memcpy(blocks->mine(), src, n);   // write my block
//     blocks->fence();                       // every rank's writes are done and visible
//     use(blocks->of(r));                    // read rank r's block
//   }
//
// create() returns a null pointer, on every rank alike, when the ranks cannot share memory: on
// different machines (host name and boot id differ), or when some rank cannot create or map a
// block (no /dev/shm, too little room in it: the blocks are reserved with posix_fallocate, so a
// full /dev/shm is an error here rather than a crash on first write). Callers then exchange
// messages instead. The blocks are POSIX shared memory objects whose names are removed as soon as
// every rank has mapped them (posemb-<rank 0's process id>-<random>-<rank>): nothing is left in
// /dev/shm, whatever happens to the job later.
// Destruction only unmaps (not collective).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "lab/ranks/distributed.hpp"

namespace posemb::lab {

class SharedBlocks {
 public:
  // Collective: every rank calls it, each with the size of its own block (sizes may differ;
  // zero is allowed). Returns null on every rank when the ranks cannot share memory, and on a
  // single process (nothing to share).
  static std::unique_ptr<SharedBlocks> create(Communicator& comm, std::size_t bytes);
  ~SharedBlocks();
  SharedBlocks(const SharedBlocks&) = delete;
  SharedBlocks& operator=(const SharedBlocks&) = delete;

  // This rank's block (bytes given to create(); null when zero), writable.
  void* mine() { return maps_[static_cast<std::size_t>(comm_->rank())].data; }
  // Rank r's block, read-only, and its size.
  const void* of(int r) const { return maps_.at(static_cast<std::size_t>(r)).data; }
  std::size_t bytes_of(int r) const { return maps_.at(static_cast<std::size_t>(r)).bytes; }
  // Collective: every rank's writes before it are seen by every rank's reads after it, and no
  // rank passes it before every rank has reached it.
  void fence();

 private:
  struct Map {
    void* data = nullptr;  // null for a block of zero bytes (nothing is mapped)
    std::size_t bytes = 0;
  };
  explicit SharedBlocks(Communicator& comm) : comm_(&comm) {}

  Communicator* comm_;
  std::vector<Map> maps_;
};

}  // namespace posemb::lab
