// Placeholder until the metrics and admin work lands.
#include "lb/admin.h"

namespace lb {
Admin* startAdmin(uv_loop_t*, const std::string&, AdminHooks, std::string* error) {
  *error = "admin server not built yet";
  return nullptr;
}
void stopAdmin(Admin*) {}
void noteReload(Admin*, bool) {}
}  // namespace lb
