#include "lb/membership/etcd_json.h"

#include <cerrno>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>

#include "lb/core/base64.h"

namespace lb::etcd_json {

namespace {

using nlohmann::json;

// What a reader found wrong; thrown inside a reader only, caught at its boundary with
// nlohmann's own exceptions.
struct Bad {
  std::string why;
};

[[noreturn]] void bad(std::string why) { throw Bad{std::move(why)}; }

// grpc-gateway writes int64 as a JSON string of decimal digits ("12"); a JSON integer is the
// same value and is taken too. Absent: 0 (protobuf leaves defaults out).
int64_t int64Field(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) return 0;
  if (it->is_number_integer()) {
    if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      bad(std::string(name) + " does not fit in 64 bits");
    return it->get<int64_t>();
  }
  if (!it->is_string()) bad(std::string(name) + " is not an int64 (string or integer)");
  const std::string& s = it->get_ref<const std::string&>();
  const char* p = s.c_str();
  const bool digits = !s.empty() && (s[0] == '-' ? s.size() > 1 : true) &&
                      s.find_first_not_of("0123456789", s[0] == '-' ? 1 : 0) == std::string::npos;
  if (!digits) bad(std::string(name) + " is not a decimal integer: '" + s + "'");
  errno = 0;
  char* end = nullptr;
  long long v = strtoll(p, &end, 10);
  if (errno == ERANGE) bad(std::string(name) + " does not fit in 64 bits");
  return static_cast<int64_t>(v);
}

bool boolField(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) return false;
  if (!it->is_boolean()) bad(std::string(name) + " is not a boolean");
  return it->get<bool>();
}

std::string stringField(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) return {};
  if (!it->is_string()) bad(std::string(name) + " is not a string");
  return it->get<std::string>();
}

std::string bytesField(const json& obj, const char* name, bool required) {
  auto it = obj.find(name);
  if (it == obj.end()) {
    if (required) bad(std::string("no ") + name);
    return {};
  }
  if (!it->is_string()) bad(std::string(name) + " is not a string");
  std::string out;
  if (!base64Decode(it->get_ref<const std::string&>(), &out))
    bad(std::string(name) + " is not base64");
  return out;
}

const json& objectField(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) bad(std::string("no ") + name);
  if (!it->is_object()) bad(std::string(name) + " is not an object");
  return *it;
}

json parseObject(std::string_view body) {
  json j = json::parse(body.begin(), body.end());
  if (!j.is_object()) bad("not a JSON object");
  return j;
}

// header.revision: every reply has one, and a live store's revision is at least 1.
int64_t headerRevision(const json& reply) {
  const json& header = objectField(reply, "header");
  const int64_t r = int64Field(header, "revision");
  if (r <= 0) bad("no header.revision");
  return r;
}

EtcdKv readKv(const json& kv, std::string_view key) {
  if (!kv.is_object()) bad("kv is not an object");
  EtcdKv out;
  out.key = bytesField(kv, "key", true);
  if (out.key != key) bad("a key other than the one asked for");
  out.value = bytesField(kv, "value", false);
  out.create_revision = int64Field(kv, "create_revision");
  out.mod_revision = int64Field(kv, "mod_revision");
  out.version = int64Field(kv, "version");
  return out;
}

// "kvs" of a range of one key: absent or empty is no key; more than one cannot be.
std::optional<EtcdKv> readKvs(const json& range, std::string_view key) {
  auto it = range.find("kvs");
  if (it == range.end()) return std::nullopt;
  if (!it->is_array()) bad("kvs is not an array");
  if (it->empty()) return std::nullopt;
  if (it->size() > 1) bad("kvs holds more than one key");
  EtcdKv kv = readKv((*it)[0], key);
  if (kv.mod_revision <= 0) bad("a key without mod_revision");
  return kv;
}

// Runs fn, turning what it throws into false and *error.
template <typename F>
bool guarded(std::string* error, F&& fn) noexcept {
  try {
    fn();
    return true;
  } catch (const Bad& b) {
    *error = b.why;
  } catch (const json::parse_error&) {
    *error = "not JSON";
  } catch (const std::exception& e) {
    *error = e.what();
  } catch (...) {
    *error = "unreadable";
  }
  return false;
}

}  // namespace

std::string rangeRequest(std::string_view key) {
  return json{{"key", base64Encode(key)}}.dump();
}

std::string txnPutIfModRevision(std::string_view key, std::string_view value, int64_t expected) {
  const std::string k = base64Encode(key);
  json j = {
      {"compare",
       json::array({{{"key", k}, {"target", "MOD"}, {"result", "EQUAL"},
                     {"mod_revision", std::to_string(expected)}}})},
      {"success", json::array({{{"request_put", {{"key", k}, {"value", base64Encode(value)}}}}})},
      {"failure", json::array({{{"request_range", {{"key", k}}}}})},
  };
  return j.dump();
}

std::string putRequest(std::string_view key, std::string_view value) {
  return json{{"key", base64Encode(key)}, {"value", base64Encode(value)}}.dump();
}

std::string compactRequest(int64_t revision) {
  return json{{"revision", std::to_string(revision)}, {"physical", true}}.dump();
}

std::string watchCreateRequest(std::string_view key, int64_t start_revision) {
  return json{{"create_request",
               {{"key", base64Encode(key)}, {"start_revision", std::to_string(start_revision)}}}}
      .dump();
}

std::string authenticateRequest(std::string_view user, std::string_view password) {
  return json{{"name", user}, {"password", password}}.dump();
}

bool readAuthToken(std::string_view body, std::string* token, std::string* error) noexcept {
  return guarded(error, [&] {
    const json j = json::parse(body);
    if (!j.is_object()) bad("an authenticate reply that is not an object");
    std::string t = stringField(j, "token");
    if (t.empty()) bad("an authenticate reply without a token");
    // The token goes into a header line as it is: nothing that could end or fold the line.
    for (const char c : t)
      if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f)
        bad("an authenticate reply whose token is not one header word");
    *token = std::move(t);
  });
}

bool tokenRejected(int status, std::string_view text) noexcept {
  return status == 401 || text.find("invalid auth token") != std::string_view::npos;
}

bool readRange(std::string_view body, std::string_view key, EtcdRangeReply* out,
               std::string* error) noexcept {
  return guarded(error, [&] {
    json j = parseObject(body);
    EtcdRangeReply r;
    r.revision = headerRevision(j);
    r.kv = readKvs(j, key);
    *out = std::move(r);
  });
}

bool readTxn(std::string_view body, std::string_view key, EtcdTxnReply* out,
             std::string* error) noexcept {
  return guarded(error, [&] {
    json j = parseObject(body);
    EtcdTxnReply r;
    r.revision = headerRevision(j);
    r.succeeded = boolField(j, "succeeded");
    if (!r.succeeded) {
      // The failure branch is the one range the request asked for.
      auto it = j.find("responses");
      if (it == j.end() || !it->is_array() || it->size() != 1)
        bad("a failed txn without its one response");
      r.current = readKvs(objectField((*it)[0], "response_range"), key);
    }
    *out = std::move(r);
  });
}

bool readHeaderRevision(std::string_view body, int64_t* revision, std::string* error) noexcept {
  return guarded(error, [&] { *revision = headerRevision(parseObject(body)); });
}

std::string errorText(std::string_view body) noexcept {
  std::string text;
  std::string ignored;
  if (guarded(&ignored, [&] {
        json j = parseObject(body);
        text = stringField(j, "message");
        if (text.empty()) text = stringField(j, "error");
      }) &&
      !text.empty())
    return text;
  try {
    std::string out;
    for (char c : body.substr(0, 120)) out += (c >= ' ' && c < 0x7f) ? c : '?';
    return out.empty() ? "(empty body)" : out;
  } catch (...) {
    return "?";
  }
}

bool readWatchMessage(std::string_view line, std::string_view key, WatchMessage* out,
                      std::string* error) noexcept {
  return guarded(error, [&] {
    json j = parseObject(line);
    WatchMessage m;
    if (auto e = j.find("error"); e != j.end()) {
      // grpc-gateway's form for a stream that fails once the response is under way.
      m.stream_error = true;
      if (e->is_object()) m.error_text = stringField(*e, "message");
      if (m.error_text.empty()) m.error_text = e->is_string() ? e->get<std::string>() : e->dump();
      *out = std::move(m);
      return;
    }
    const json& result = objectField(j, "result");
    // etcd 3.4 sends the compaction's cancel with a header that has no revision (the
    // watcher's response carries none); every message with events has one.
    m.revision = int64Field(objectField(result, "header"), "revision");
    m.created = boolField(result, "created");
    m.canceled = boolField(result, "canceled");
    m.compact_revision = int64Field(result, "compact_revision");
    m.cancel_reason = stringField(result, "cancel_reason");
    if (boolField(result, "fragment")) bad("a fragmented watch response (never asked for)");
    if (auto ev = result.find("events"); ev != result.end()) {
      if (!ev->is_array()) bad("events is not an array");
      for (const json& e : *ev) {
        if (!e.is_object()) bad("an event is not an object");
        EtcdWatchEvent event;
        const std::string type = stringField(e, "type");
        if (type == "DELETE")
          event.deleted = true;
        else if (!type.empty() && type != "PUT")
          bad("an event of type '" + type + "'");
        event.kv = readKv(objectField(e, "kv"), key);
        if (event.kv.mod_revision <= 0) bad("an event without mod_revision");
        m.events.push_back(std::move(event));
      }
      if (!m.events.empty() && m.revision <= 0) bad("watch events without header.revision");
    }
    *out = std::move(m);
  });
}

}  // namespace lb::etcd_json
