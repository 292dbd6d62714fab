#include "lb/app/service_notify.h"

#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include "lb/core/log.h"

namespace lb {

namespace {

void send(const char* state) {
  // unset_environment = 0: NOTIFY_SOCKET stays for the next message (lb forks no children
  // that could inherit it).
  int rc = sd_notify(0, state);
  static bool reported = false;
  if (rc < 0 && !reported) {
    reported = true;
    LB_WARN("sd_notify failed (%d): the service manager will not hear from lb", rc);
  }
}

}  // namespace

void notifyReady(uint64_t generation) {
  char state[96];
  snprintf(state, sizeof state, "READY=1\nSTATUS=serving config generation %llu",
           static_cast<unsigned long long>(generation));
  send(state);
}

void notifyReloading() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const unsigned long long usec = static_cast<unsigned long long>(now.tv_sec) * 1000000ULL +
                                  static_cast<unsigned long long>(now.tv_nsec) / 1000ULL;
  char state[96];
  snprintf(state, sizeof state, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading", usec);
  send(state);
}

void notifyStopping() { send("STOPPING=1\nSTATUS=draining"); }

void notifyMainPid(int pid) {
  char state[64];
  snprintf(state, sizeof state, "MAINPID=%d", pid);
  send(state);
}

void notifyReadyAsMain(uint64_t generation) {
  char state[128];
  snprintf(state, sizeof state, "MAINPID=%d\nREADY=1\nSTATUS=serving config generation %llu",
           static_cast<int>(getpid()), static_cast<unsigned long long>(generation));
  send(state);
}

}  // namespace lb
