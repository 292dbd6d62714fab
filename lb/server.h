// The proxy process: loads the config, starts the workers and the admin server, handles
// SIGHUP (reload) and SIGTERM/SIGINT (drain), and returns the exit code.
#pragma once

#include <string>

namespace lb {
int runServer(const std::string& config_path);
}  // namespace lb
