// The tool's signal handlers (tools/posemb/signals.hpp).
#include "signals.hpp"

#include <csignal>

#include "posemb/atomic_file.hpp"

namespace posemb::cli {
namespace {

// Signals that end the process (SIGINT, SIGTERM, SIGHUP; and, when their action is the default,
// SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGPIPE): remove the temporary files and folders of
// writes in progress (posemb::remove_partial_files is async-signal-safe), then die of the signal
// as if unhandled. SIGPIPE comes when the reader of a pipe stops (`posemb train ... | head -1`):
// the process still ends at its next print, as a pipeline expects, but leaves nothing behind.
void on_terminating_signal(int sig) {
  posemb::remove_partial_files();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

void install_signal_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGPIPE}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if (old.sa_handler == SIG_IGN) continue;  // nohup, &
    const bool usual = sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
    if (!usual && ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL)) continue;
    struct sigaction sa {};
    sa.sa_handler = on_terminating_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
  // A file-size limit (ulimit -f): a write past it fails with EFBIG, which the writer reports
  // and cleans up after, instead of the signal killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace posemb::cli
