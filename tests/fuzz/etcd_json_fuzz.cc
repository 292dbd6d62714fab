// libFuzzer target for what lb reads from etcd's JSON gateway (lb/membership/etcd_json.h)
// and its base64 (lb/core/base64.h): any bytes as a reply or a watch message must be read or
// refused without a crash or an exception, and what is read must hold to the contract:
//   - a range, a txn's current key, a watch event: the key is the one asked for, and a key
//     read has a mod_revision;
//   - a range or txn read has a header revision >= 1; a watch message with events too;
//   - base64: the strict decoder takes exactly the canonical encodings, so whatever it
//     decodes encodes back to the same text.
//
// Input layout: byte 0 picks the reader (0 range, 1 txn, 2 watch message, 3 base64); the
// rest is the body. Seeds: tests/fuzz/corpus/etcd_json/ (etcd 3.4.23's own replies).
// Run with `make fuzz FUZZ_TARGETS=etcd_json`.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "lb/core/base64.h"
#include "lb/membership/etcd_json.h"

namespace {

void check(bool ok) {
  if (!ok) abort();
}

constexpr std::string_view kKey = "/k";

void checkKv(const lb::EtcdKv& kv) {
  check(kv.key == kKey);
  check(kv.mod_revision > 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string error;
  switch (data[0] % 4) {
    case 0: {
      lb::EtcdRangeReply r;
      if (lb::etcd_json::readRange(body, kKey, &r, &error)) {
        check(r.revision >= 1);
        if (r.kv) checkKv(*r.kv);
      } else {
        check(!error.empty());
      }
      break;
    }
    case 1: {
      lb::EtcdTxnReply t;
      if (lb::etcd_json::readTxn(body, kKey, &t, &error)) {
        check(t.revision >= 1);
        check(!(t.succeeded && t.current));
        if (t.current) checkKv(*t.current);
      } else {
        check(!error.empty());
      }
      break;
    }
    case 2: {
      lb::etcd_json::WatchMessage m;
      if (lb::etcd_json::readWatchMessage(body, kKey, &m, &error)) {
        if (!m.events.empty()) check(m.revision >= 1);
        for (const auto& e : m.events) checkKv(e.kv);
      } else {
        check(!error.empty());
      }
      (void)lb::etcd_json::errorText(body);
      break;
    }
    case 3: {
      std::string decoded;
      if (lb::base64Decode(body, &decoded)) check(lb::base64Encode(decoded) == body);
      check(lb::base64Decode(lb::base64Encode(body), &decoded) && decoded == body);
      break;
    }
  }
  return 0;
}
