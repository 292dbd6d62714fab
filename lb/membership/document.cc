// Stub: the implementation follows in the next commit.
#include "lb/membership/document.h"

namespace lb {

Result<MembershipDocument> parseMembershipDocument(std::string_view, std::string_view source,
                                                   const ClusterConfig&) {
  return Errors{{std::string(source), {}, "", "not implemented yet"}};
}

std::string membershipJson(const std::vector<BackendConfig>&) { return "{\"backends\":[]}\n"; }

std::string checkRemoval(const std::vector<BackendConfig>&, const std::vector<BackendConfig>&,
                         uint32_t) {
  return "";
}

SourcePos positionOfOffset(std::string_view, size_t) { return {1, 1}; }

}  // namespace lb
