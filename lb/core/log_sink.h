// Where the access log goes (lb/runtime/access_log.h writes the lines). A snapshot holds the
// one its config names, so the main thread opens it with the rest of a reload.
#pragma once

#include <memory>
#include <string>

namespace lb {

// The destination, shared by every worker's AccessLog: a file opened O_APPEND (so the
// workers' whole-buffer writes never overwrite each other) or stdout. Reopened on every
// reload, so `mv access.log access.log.1; kill -HUP` rotates it.
class AccessLogSink {
 public:
  // Main thread. "" -> nullptr with no error (access log off); "-" -> stdout; otherwise
  // the file, created 0644 if absent. nullptr with *error set when it cannot be opened.
  static std::shared_ptr<AccessLogSink> open(const std::string& path, std::string* error);
  ~AccessLogSink();
  AccessLogSink(const AccessLogSink&) = delete;
  AccessLogSink& operator=(const AccessLogSink&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  AccessLogSink(int fd, std::string path, bool owned) : fd_(fd), path_(std::move(path)), owned_(owned) {}
  int fd_;
  std::string path_;
  bool owned_;
};

}  // namespace lb
