// `lb upgrade --pid PID [--timeout 90s]` (docs/operations.md, "Upgrading without loss"): asks
// the running lb PID to start the binary now installed at its path and hand it every socket
// (SIGUSR2, lb/upgrade/upgrade.h), waits for the outcome and prints it.
//
// The outcome is read from the running lb's upgrade directory (lb/upgrade/upgrade_channel.h),
// found from PID's own environment so that the operator's shell need not match the service's.
//
// Exit codes: 0 the new lb serves and PID drains; 1 the upgrade failed (the old lb serves on,
// and the line says why), PID is not an lb this user may signal, or no outcome came within the
// timeout; 2 usage.
#pragma once

namespace lb {

int runUpgrade(int argc, char** argv);

}  // namespace lb
