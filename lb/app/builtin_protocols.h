// The protocols this build serves, as the runtime's ProtocolTable: the one place that knows
// every lb/proxy/* folder.
#pragma once

#include "lb/runtime/protocol_table.h"

namespace lb {

const ProtocolTable& builtinProtocols();

}  // namespace lb
