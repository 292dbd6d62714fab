#include "tests/support/tls_certs.h"

#include <fstream>

#include "tests/support/process.h"

namespace lb::test {

TlsCa::TlsCa(std::string dir, std::string name) : dir_(std::move(dir)) {
  ca_.cert = dir_ + "/" + name + ".pem";
  ca_.key = dir_ + "/" + name + ".key";
  CommandResult r = runCommand({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                "ec_paramgen_curve:prime256v1", "-nodes", "-days", "30", "-subj",
                                "/CN=lb test " + name, "-keyout", ca_.key, "-out", ca_.cert},
                               30s);
  ca_.ok = r.exit_code == 0;
  ca_.error = r.err;
}

TlsCert TlsCa::issue(const std::string& file, const std::vector<std::string>& names, int days,
                     bool common_name) {
  TlsCert c;
  c.cert = dir_ + "/" + file + ".pem";
  c.key = dir_ + "/" + file + ".key";
  const std::string csr = dir_ + "/" + file + ".csr";
  const std::string ext = dir_ + "/" + file + ".ext";
  std::string san = "subjectAltName=";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) san += ",";
    // "IP:127.0.0.1" is an address entry as written; anything else a DNS name.
    san += names[i].rfind("IP:", 0) == 0 ? names[i] : "DNS:" + names[i];
  }
  std::ofstream(ext) << san << "\n";
  CommandResult r = runCommand({"openssl", "req", "-newkey", "ec", "-pkeyopt",
                                "ec_paramgen_curve:prime256v1", "-nodes", "-subj",
                                common_name ? "/CN=" + (names.empty() ? file : names[0])
                                            : "/O=lb test",
                                "-keyout", c.key,
                                "-out", csr},
                               30s);
  if (r.exit_code != 0) {
    c.error = r.err;
    return c;
  }
  // -days 0 ends the validity where it starts (now): expired from the next second on, which
  // is how the expired-certificate test gets one without a fake clock.
  std::vector<std::string> argv = {"openssl", "x509", "-req", "-in", csr, "-CA", ca_.cert,
                                   "-CAkey", ca_.key, "-CAcreateserial", "-extfile", ext,
                                   "-days", std::to_string(days > 0 ? days : 0), "-out", c.cert};
  r = runCommand(argv, 30s);
  c.ok = r.exit_code == 0;
  c.error = r.err;
  return c;
}

}  // namespace lb::test
