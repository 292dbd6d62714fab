// Certificates made at test time with the openssl command line (no key is ever committed):
// a throw-away CA and leaf certificates it signs, each a PEM cert and key in `dir`.
//
//   lb::test::TlsCa ca(dir.path());
//   auto a = ca.issue("a", {"a.test", "*.wild.test"});   // a.pem, a.key
//   curl --cacert ca.certPath() --resolve a.test:PORT:127.0.0.1 https://a.test:PORT/
#pragma once

#include <string>
#include <vector>

namespace lb::test {

struct TlsCert {
  std::string cert;   // path of the PEM certificate
  std::string key;    // path of the PEM key
  bool ok = false;
  std::string error;  // openssl's output when it failed
};

class TlsCa {
 public:
  // Makes ca.pem / ca.key in `dir` (`name` prefixes the files and the subject).
  explicit TlsCa(std::string dir, std::string name = "ca");
  bool ok() const { return ca_.ok; }
  const std::string& error() const { return ca_.error; }
  const std::string& certPath() const { return ca_.cert; }
  // A leaf for `names` (subjectAltName DNS entries, or IP ones written "IP:127.0.0.1"; the
  // first also the CN), valid `days`
  // from now (0: expired from the next second on, for the config-error tests), signed by
  // this CA.
  // `common_name` false: a subject without CN (the names in subjectAltName only), as etcd's
  // gateway wants a client certificate when its authentication is on too.
  TlsCert issue(const std::string& file, const std::vector<std::string>& names, int days = 30,
                bool common_name = true);

 private:
  std::string dir_;
  TlsCert ca_;
};

}  // namespace lb::test
