// What lb tells its service manager, so that `systemctl start` returns only once lb really
// serves, and the unit's state shows a reload or a drain while it runs (conf/systemd/
// lb.service, Type=notify; docs/operations.md, "Running under systemd").
//
// Each call sends one sd_notify(3) datagram to $NOTIFY_SOCKET and is a no-op when the variable
// is unset (lb run by hand, by tests, by another supervisor). A failed send is logged once as
// a warning (systemd will then time the start out) and otherwise ignored: it must never stop
// the proxy. Main thread only.
#pragma once

#include <cstdint>

namespace lb {

// READY=1: every listener is bound and accepting, and the admin server listens. Sent after
// start-up and again after each reload attempt (good or refused: lb serves either way).
void notifyReady(uint64_t generation);
// RELOADING=1 with MONOTONIC_USEC (CLOCK_MONOTONIC now, in µs), which systemd >= 253 requires
// to match a reload to its READY=1 and earlier versions ignore. Sent when SIGHUP arrives.
void notifyReloading();
// STOPPING=1: a drain began; systemd shows "deactivating" until lb exits.
void notifyStopping();
// MAINPID=pid: `lb upgrade` made `pid` the new lb; systemd follows it from now on (the old
// process drains and exits without the unit stopping). Sent by the old process.
void notifyMainPid(int pid);
// MAINPID= and READY=1 from the new process of an upgrade (the unit's NotifyAccess=all lets
// it speak before systemd has switched to it).
void notifyReadyAsMain(uint64_t generation);

}  // namespace lb
