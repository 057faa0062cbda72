#include "lab/ranks/shared_blocks.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

namespace posemb::lab {
namespace {

// This machine as the ranks compare it: host name and boot id (all zeros when either is unknown:
// such a rank shares nothing).
using Identity = std::array<char, 192>;

Identity machine_identity() {
  Identity id{};
  char host[128] = {};
  if (gethostname(host, sizeof host - 1) != 0) return id;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot;
  if (!(in >> boot) || boot.empty()) return Identity{};
  const std::string text = std::string(host) + "/" + boot;
  if (text.size() >= id.size()) return id;
  std::memcpy(id.data(), text.data(), text.size());
  return id;
}

// "/posemb-<rank 0's process id>-<rank 0's random number>-<rank>".
struct JobName {
  std::uint64_t pid = 0, random = 0;
};

std::string block_name(const JobName& job, int rank) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "/posemb-%llu-%016llx-%d",
                static_cast<unsigned long long>(job.pid),
                static_cast<unsigned long long>(job.random), rank);
  return buf;
}

// True on every rank when ok is true on every rank. Collective.
bool everywhere(Communicator& comm, bool ok) {
  for (const std::uint8_t v : comm.allgather<std::uint8_t>(ok ? 1 : 0)) {
    if (v == 0) return false;
  }
  return true;
}

// Removes a shared memory object's name when the scope ends (the mappings stay).
struct Unlink {
  std::string name;
  ~Unlink() {
    if (!name.empty()) shm_unlink(name.c_str());
  }
};

}  // namespace

std::unique_ptr<SharedBlocks> SharedBlocks::create(Communicator& comm, std::size_t bytes) {
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  if (n == 1) return nullptr;
  const auto ids = comm.allgather(machine_identity());
  bool same = ids[0][0] != '\0';
  for (const Identity& id : ids) same = same && id == ids[0];
  if (!same) return nullptr;
  // The job's names: rank 0's process id (which tells whose a stray object is) and a random
  // number, then the rank.
  JobName job;
  if (me == 0) {
    job.pid = static_cast<std::uint64_t>(getpid());
    job.random = (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  }
  job = comm.allgather(job)[0];
  const auto sizes = comm.allgather(static_cast<std::uint64_t>(bytes));

  std::unique_ptr<SharedBlocks> blocks(new SharedBlocks(comm));
  blocks->maps_.resize(n);
  // This rank's block: created (a name no other object has), its pages reserved, mapped.
  Unlink created;
  bool ok = true;
  if (bytes > 0) {
    const std::string name = block_name(job, comm.rank());
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ok = fd >= 0;
    if (ok) {
      created.name = name;
      ok = posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0;
      void* p = ok ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
      close(fd);
      ok = p != MAP_FAILED;
      if (ok) blocks->maps_[me] = {p, bytes};
    }
  }
  if (!everywhere(comm, ok)) return nullptr;
  // The others' blocks, read-only. Each name is removed (Unlink) once every rank has tried.
  for (std::size_t r = 0; r < n && ok; ++r) {
    const auto size = static_cast<std::size_t>(sizes[r]);
    if (r == me || size == 0) continue;
    const int fd = shm_open(block_name(job, static_cast<int>(r)).c_str(), O_RDONLY, 0);
    struct stat st {};
    ok = fd >= 0 && fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) >= size;
    void* p = ok ? mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0) close(fd);
    ok = p != MAP_FAILED;
    if (ok) blocks->maps_[r] = {p, size};
  }
  if (!everywhere(comm, ok)) return nullptr;
  return blocks;
}

SharedBlocks::~SharedBlocks() {
  for (const Map& m : maps_) {
    if (m.data != nullptr) munmap(m.data, m.bytes);
  }
}

void SharedBlocks::fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  (void)comm_->allgather(std::uint8_t{1});
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace posemb::lab
