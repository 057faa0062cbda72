// tools/posemb/signals.hpp: the tool ended by a signal leaves nothing half-written.
#pragma once

namespace posemb::cli {

// Signals that end the process (SIGINT, SIGTERM, SIGHUP; and, when their action is the default,
// SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGPIPE) remove the temporary files and folders of
// writes in progress (posemb::remove_partial_files), then end the process as if unhandled;
// SIGXFSZ is ignored, so that a write past ulimit -f fails with EFBIG and is reported.
void install_signal_handlers();

}  // namespace posemb::cli
