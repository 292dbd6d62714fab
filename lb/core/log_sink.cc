#include "lb/core/log_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lb {

std::shared_ptr<AccessLogSink> AccessLogSink::open(const std::string& path, std::string* error) {
  if (path.empty()) return nullptr;
  if (path == "-") return std::shared_ptr<AccessLogSink>(new AccessLogSink(1, path, false));
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot open access log '" + path + "': " + strerror(errno);
    return nullptr;
  }
  return std::shared_ptr<AccessLogSink>(new AccessLogSink(fd, path, true));
}

AccessLogSink::~AccessLogSink() {
  if (owned_) ::close(fd_);
}

}  // namespace lb
