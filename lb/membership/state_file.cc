// Stub: the implementation follows in the next commit.
#include "lb/membership/state_file.h"

namespace lb {

bool writeMembershipState(const std::string&, const MembershipState&, std::string* error) {
  *error = "not implemented yet";
  return false;
}

Result<MembershipState> readMembershipState(const std::string& path) {
  return Errors{{path, {}, "", "not implemented yet"}};
}

}  // namespace lb
