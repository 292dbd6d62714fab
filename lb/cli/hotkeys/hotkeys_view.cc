#include "lb/cli/hotkeys/hotkeys_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

namespace lb {

namespace {

using Json = nlohmann::json;

// Narrowest the key column gets before other columns give way: below this a key is too cut
// to recognise.
constexpr size_t kMinKeyWidth = 12;
constexpr size_t kMinServingWidth = 7;

bool fail(std::string* error, std::string what) {
  *error = std::move(what);
  return false;
}

// A finite JSON number at obj[name] into *out: false with *error when absent or not one.
bool number(const Json& obj, const char* name, const std::string& where, double* out,
            std::string* error) {
  auto it = obj.find(name);
  if (it == obj.end()) return fail(error, where + ": missing \"" + name + "\"");
  if (!it->is_number() || !std::isfinite(it->get<double>()))
    return fail(error, where + ".\"" + name + "\": must be a number, got " + it->type_name());
  *out = it->get<double>();
  return true;
}

bool text(const Json& obj, const char* name, const std::string& where, std::string* out,
          std::string* error, bool required = true) {
  auto it = obj.find(name);
  if (it == obj.end()) return required ? fail(error, where + ": missing \"" + name + "\"") : true;
  if (!it->is_string())
    return fail(error, where + ".\"" + name + "\": must be a string, got " + it->type_name());
  *out = it->get<std::string>();
  return true;
}

bool readRow(const Json& k, const std::string& where, HotKeyRow* row, std::string* error) {
  if (!k.is_object()) return fail(error, where + ": must be an object, got " + k.type_name());
  if (!text(k, "key", where, &row->key, error) ||
      !text(k, "hash_hex", where, &row->hash_hex, error, false) ||
      !number(k, "rps", where, &row->rps, error) ||
      !number(k, "rps_lower", where, &row->rps_lower, error) ||
      !number(k, "share", where, &row->share, error) ||
      !text(k, "owner", where, &row->owner, error))
    return false;
  if (auto it = k.find("serving"); it != k.end()) {
    if (!it->is_array())
      return fail(error, where + ".\"serving\": must be an array, got " + it->type_name());
    for (const Json& h : *it) {
      if (!h.is_string())
        return fail(error, where + ".\"serving\": must list host names, got " + h.type_name());
      row->serving.push_back(h.get<std::string>());
    }
  }
  if (auto it = k.find("hot_since"); it != k.end() && !it->is_null()) {
    if (!it->is_string())
      return fail(error, where + ".\"hot_since\": must be an RFC 3339 time, got " +
                             it->type_name());
    row->hot_since = parseRfc3339(it->get<std::string>());
    if (!row->hot_since)
      return fail(error, where + ".\"hot_since\": '" + it->get<std::string>() +
                             "' is not an RFC 3339 time");
  }
  return true;
}

bool readCluster(const Json& c, const std::string& where, HotKeysCluster* out,
                 std::string* error) {
  if (!c.is_object()) return fail(error, where + ": must be an object, got " + c.type_name());
  if (!text(c, "cluster", where, &out->cluster, error) ||
      !number(c, "window_s", where, &out->window_s, error) ||
      !number(c, "floor_rps", where, &out->floor_rps, error))
    return false;
  auto keys = c.find("keys");
  if (keys == c.end()) return fail(error, where + ": missing \"keys\"");
  if (!keys->is_array())
    return fail(error, where + ".\"keys\": must be an array, got " + keys->type_name());
  for (size_t i = 0; i < keys->size(); ++i) {
    HotKeyRow row;
    if (!readRow((*keys)[i], where + ".keys[" + std::to_string(i) + "]", &row, error))
      return false;
    out->keys.push_back(std::move(row));
  }
  if (c.contains("total_rps")) {
    double total = 0;
    if (!number(c, "total_rps", where, &total, error)) return false;
    out->total_rps = total;
  } else if (!out->keys.empty() && out->keys[0].share > 0) {
    // The design's answer carries each key's rate and share, not the cluster's rate; their
    // ratio is that rate, as well as the summary knows it.
    out->total_rps = out->keys[0].rps / out->keys[0].share;
    out->total_estimated = true;
  }
  return true;
}

std::string fixed1(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string percent2(double share) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.2f%%", 100 * share);
  return buf;
}

std::string shortNumber(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// `s` in exactly `w` columns: padded (left- or right-aligned), or cut with "..." at its end.
std::string fit(const std::string& s, size_t w, bool right = false) {
  if (s.size() > w) return w > 3 ? s.substr(0, w - 3) + "..." : s.substr(0, w);
  const std::string pad(w - s.size(), ' ');
  return right ? pad + s : s + pad;
}

std::string cut(std::string line, size_t width) {
  if (width > 0 && line.size() > width) line.resize(width);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + escapeKey(n);
  return out.empty() ? "-" : out;
}

void drawCluster(const HotKeysCluster& c, const HotKeysDrawOptions& o, std::string* out) {
  std::string head = "cluster " + escapeKey(c.cluster) + "  total " +
                     (c.total_rps ? (c.total_estimated ? "~" : "") + fixed1(*c.total_rps) : "-") +
                     " rps  floor " + fixed1(c.floor_rps) + " rps  window " +
                     shortNumber(c.window_s) + "s  keys " + std::to_string(c.keys.size());
  *out += cut(head, o.width);
  if (c.keys.empty()) {
    *out += cut("  no hot keys", o.width);
    return;
  }
  const size_t rows = o.max_rows == 0 ? c.keys.size() : std::min(o.max_rows, c.keys.size());
  struct Cells {
    std::string rank, key, rps, lower, share, owner, serving, since;
  };
  std::vector<Cells> cells;
  const Cells title{"#", "KEY", "RPS", "LOWER", "SHARE", "OWNER", "SERVING", "SINCE"};
  size_t wr = title.rank.size(), wk = title.key.size(), wp = title.rps.size(),
         wl = title.lower.size(), wsh = title.share.size(), wo = title.owner.size(),
         wsv = title.serving.size(), wsi = title.since.size();
  for (size_t i = 0; i < rows; ++i) {
    const HotKeyRow& k = c.keys[i];
    Cells x{std::to_string(i + 1), escapeKey(k.key),    fixed1(k.rps),
            fixed1(k.rps_lower),   percent2(k.share),   escapeKey(k.owner),
            joined(k.serving),     formatAge(k.hot_since, o.now)};
    wr = std::max(wr, x.rank.size());
    wk = std::max(wk, x.key.size());
    wp = std::max(wp, x.rps.size());
    wl = std::max(wl, x.lower.size());
    wsh = std::max(wsh, x.share.size());
    wo = std::max(wo, x.owner.size());
    wsv = std::max(wsv, x.serving.size());
    wsi = std::max(wsi, x.since.size());
    cells.push_back(std::move(x));
  }
  wr = std::max<size_t>(wr, 3);
  if (o.width > 0) {
    // Two spaces between columns; the key and the serving list give way to the width, the
    // serving list first (the owner says where the key lives; SERVING only adds copies).
    const size_t others = wr + wp + wl + wsh + wo + wsi + 2 * 7;
    auto total = [&] { return others + wk + wsv; };
    if (total() > o.width && wk > kMinKeyWidth) {
      const size_t over = total() - o.width;
      wk -= std::min(over, wk - kMinKeyWidth);
    }
    if (total() > o.width && wsv > kMinServingWidth) {
      const size_t over = total() - o.width;
      wsv -= std::min(over, wsv - kMinServingWidth);
    }
  }
  auto line = [&](const Cells& x) {
    return fit(x.rank, wr, true) + "  " + fit(x.key, wk) + "  " + fit(x.rps, wp, true) + "  " +
           fit(x.lower, wl, true) + "  " + fit(x.share, wsh, true) + "  " + fit(x.owner, wo) +
           "  " + fit(x.serving, wsv) + "  " + fit(x.since, wsi, true);
  };
  *out += cut(line(title), o.width);
  for (const Cells& x : cells) *out += cut(line(x), o.width);
  if (rows < c.keys.size())
    *out += cut("  ... " + std::to_string(c.keys.size() - rows) + " more", o.width);
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
// days_from_civil algorithm): timegm is a nonstandard extension and normalises what it should
// refuse (month 13), and mktime would read the local time zone.
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool digits(std::string_view s, size_t at, size_t n, int* out) {
  if (at + n > s.size()) return false;
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::optional<int64_t> parseRfc3339(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  int y, mo, d, h, mi, se;
  if (!digits(s, 0, 4, &y) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, &mo) ||
      s[7] != '-' || !digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !digits(s, 11, 2, &h) || s[13] != ':' || !digits(s, 14, 2, &mi) || s[16] != ':' ||
      !digits(s, 17, 2, &se))
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return std::nullopt;
  size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    ++i;
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start) return std::nullopt;
  }
  int offset = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh, om;
    if (!digits(s, i + 1, 2, &oh) || i + 3 >= s.size() || s[i + 3] != ':' ||
        !digits(s, i + 4, 2, &om) || oh > 23 || om > 59)
      return std::nullopt;
    offset = (s[i] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  return daysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
         h * 3600 + mi * 60 + std::min(se, 59) - offset;
}

std::string formatAge(std::optional<int64_t> since, int64_t now) {
  if (!since) return "-";
  const int64_t a = std::max<int64_t>(0, now - *since);
  char buf[32];
  if (a < 60) snprintf(buf, sizeof buf, "%llds", static_cast<long long>(a));
  else if (a < 3600) snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(a / 60),
                              static_cast<long long>(a % 60));
  else if (a < 86400) snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(a / 3600),
                               static_cast<long long>(a % 3600 / 60));
  else snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(a / 86400),
                static_cast<long long>(a % 86400 / 3600));
  return buf;
}

std::string escapeKey(std::string_view key) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(key.size());
  for (unsigned char c : key) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::optional<std::vector<HotKeysCluster>> parseHotKeysReply(std::string_view json,
                                                             std::string* error) {
  const Json doc = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    *error = "not JSON";
    return std::nullopt;
  }
  if (!doc.is_object()) {
    *error = std::string("must be a JSON object, got ") + doc.type_name();
    return std::nullopt;
  }
  std::vector<HotKeysCluster> out;
  if (auto all = doc.find("clusters"); all != doc.end()) {
    if (!all->is_array()) {
      *error = std::string("\"clusters\": must be an array, got ") + all->type_name();
      return std::nullopt;
    }
    for (size_t i = 0; i < all->size(); ++i) {
      HotKeysCluster c;
      if (!readCluster((*all)[i], "clusters[" + std::to_string(i) + "]", &c, error))
        return std::nullopt;
      out.push_back(std::move(c));
    }
    return out;
  }
  HotKeysCluster c;
  if (!readCluster(doc, "the reply", &c, error)) return std::nullopt;
  out.push_back(std::move(c));
  return out;
}

std::string drawHotKeys(const std::vector<HotKeysCluster>& clusters,
                        const HotKeysDrawOptions& options) {
  std::string out;
  for (size_t i = 0; i < clusters.size(); ++i) {
    if (i > 0) out += "\n";
    drawCluster(clusters[i], options, &out);
  }
  if (clusters.empty()) out += cut("no clusters", options.width);
  return out;
}

}  // namespace lb
