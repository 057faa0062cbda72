// tools/posemb/memory_flag.hpp: --max-memory, the memory budget (posemb/memory.hpp) of every
// command, and the size text it and the messages use.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

namespace posemb::cli {

// "1.5 GiB": sizes in --help and messages.
std::string human_bytes(std::size_t bytes);

// Sets the default budget (3/4 of physical memory, or half of an address-space limit when that
// is lower) and adds --max-memory SIZE to app and to each of its subcommands (before the
// subcommand or among its flags).
void add_memory_flag(CLI::App& app);

}  // namespace posemb::cli
