// Field lookups on a request head viewed in place (lb/core/http_fields.h).
#include "lb/core/http_fields.h"

#include "lb/core/strings.h"

namespace lb {

std::optional<std::string_view> findHeader(const HttpRequestView& request,
                                           std::string_view name) noexcept {
  for (const auto& h : request.headers) {
    if (!equalsNoCase(h.name, name)) continue;
    std::string_view v = h.value;
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  }
  return std::nullopt;
}

std::optional<std::string_view> findCookie(std::string_view header,
                                           std::string_view name) noexcept {
  // Worked example: "a=1; lb=\"x\";c" holds a="1" and lb="x" (quotes removed); "c" has no
  // '=', so it names no cookie (browsers read it as a nameless value) and never matches.
  while (!header.empty()) {
    size_t semi = header.find(';');
    std::string_view pair = header.substr(0, semi);
    header = semi == std::string_view::npos ? std::string_view{} : header.substr(semi + 1);
    while (!pair.empty() && (pair.front() == ' ' || pair.front() == '\t')) pair.remove_prefix(1);
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = pair.substr(0, eq);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
    if (key != name) continue;
    std::string_view value = pair.substr(eq + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    return value;
  }
  return std::nullopt;
}

std::optional<std::string_view> findQueryParam(std::string_view target,
                                               std::string_view name) noexcept {
  size_t q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(q + 1);
  size_t hash = query.find('#');
  if (hash != std::string_view::npos) query = query.substr(0, hash);
  // Worked example: "a=1&&b&k=x=y" holds a="1", b="" and k="x=y" (the first '=' splits).
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    if (key == name && !pair.empty())
      return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
  }
  return std::nullopt;
}

std::string_view targetPath(std::string_view target) noexcept {
  // Absolute form "http://host:port/path?q": skip scheme and authority.
  size_t scheme = target.empty() || target.front() == '/' ? std::string_view::npos
                                                          : target.find("://");
  if (scheme != std::string_view::npos && scheme > 0) {
    size_t slash = target.find_first_of("/?#", scheme + 3);
    if (slash == std::string_view::npos || target[slash] != '/') return "/";
    target.remove_prefix(slash);
  }
  // A plain loop: find_first_of("?#") costs a memchr per character in libstdc++.
  size_t end = 0;
  while (end < target.size() && target[end] != '?' && target[end] != '#') ++end;
  return target.substr(0, end);
}

}  // namespace lb
