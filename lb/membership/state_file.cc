#include "lb/membership/state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "lb/config/config.h"
#include "lb/membership/json_positions.h"

namespace lb {

namespace {

using Json = nlohmann::json;

std::string why(const std::string& what, const std::string& path, int err) {
  return what + " " + path + ": " + strerror(err);
}

std::string directoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool writeAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool writeMembershipState(const std::string& path, const MembershipState& s,
                          std::string* error) {
  Json j;
  j["cluster"] = s.cluster;
  j["key"] = s.key;
  j["revision"] = s.revision;
  j["document"] = s.document;
  const std::string bytes = j.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";

  // The temp file sits next to the target, so that rename() is atomic (one file system) and a
  // crash mid-write leaves only a stray temp file, never a half-written state file.
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = why("cannot create", tmp, errno);
    return false;
  }
  auto fail = [&](const char* what, const std::string& name) {
    const int err = errno;
    ::unlink(tmp.c_str());
    *error = why(what, name, err);
    return false;
  };
  if (!writeAll(fd, bytes)) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return fail("cannot write", tmp);
  }
  // fsync before rename: otherwise the rename may reach the disk before the data, and a power
  // loss leaves an empty file under the final name (ext4's delayed allocation).
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return fail("cannot fsync", tmp);
  }
  if (::close(fd) != 0) return fail("cannot close", tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename to", path);
  // The rename itself is durable once the directory is; failing that is not worth failing
  // the write for (the new file is in place for every reader already).
  const std::string dir = directoryOf(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

Result<MembershipState> readMembershipState(const std::string& path) {
  Result<std::string> text = readConfigFile(path);
  if (!text.ok()) return text.errors();
  Json j;
  try {
    j = Json::parse(text.value());
  } catch (const Json::parse_error& e) {
    const SourcePos at = positionOfOffset(text.value(), e.byte > 0 ? e.byte - 1 : 0);
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ...":
    // the position is ours, the words after it nlohmann's.
    const std::string what = e.what();
    const size_t colon = what.find(": ", what.find("parse error"));
    return Errors{{path, at, "", "not a membership state file: " +
                                     (colon == std::string::npos ? what : what.substr(colon + 2))}};
  } catch (const Json::exception& e) {
    return Errors{{path, {}, "", std::string("not a membership state file: ") + e.what()}};
  }
  auto bad = [&](const std::string& why) -> Errors {
    return {{path, {}, "", "not a membership state file: " + why}};
  };
  if (!j.is_object()) return bad("not a JSON object");
  MembershipState s;
  for (const char* key : {"cluster", "key", "document"}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return bad(std::string("no string '") + key + "'");
  }
  auto rev = j.find("revision");
  if (rev == j.end() || !rev->is_number_integer() || rev->get<int64_t>() < 1)
    return bad("no integer 'revision' >= 1");
  s.cluster = j["cluster"].get<std::string>();
  s.key = j["key"].get<std::string>();
  s.document = j["document"].get<std::string>();
  s.revision = rev->get<int64_t>();
  return s;
}

}  // namespace lb
