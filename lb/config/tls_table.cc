#include "lb/config/tls_table.h"

namespace lb {
namespace {

// A relative certificate path is the config file's folder's, as nginx reads its own.
std::string besideConfig(const WalkContext& ctx, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const size_t slash = ctx.file.rfind('/');
  return slash == std::string::npos ? path : ctx.file.substr(0, slash + 1) + path;
}

}  // namespace

void readListenerTls(WalkContext& ctx, const toml::table& t, const std::string& path,
                     ListenerConfig* l) {
  TableWalker w(ctx, t, path);
  ListenerTlsConfig& tls = l->tls;
  tls.enabled = true;
  tls.pos = w.pos();
  if (const toml::array* a = w.array("certificates", true)) {
    if (a->empty()) w.errorAt("certificates", "must list at least one { cert, key }");
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string cpath = path + ".certificates[" + std::to_string(i) + "]";
      const toml::table* ct = a->get(i)->as_table();
      if (ct == nullptr) {
        ctx.error(posOf(*a->get(i)), cpath,
                  "must be a table { cert = \"...\", key = \"...\" }, got " +
                      typeName(*a->get(i)));
        continue;
      }
      TableWalker cw(ctx, *ct, cpath);
      TlsCertificateConfig c;
      c.cert_pos = c.key_pos = cw.pos();
      if (cw.string("cert", &c.cert, true)) c.cert_pos = posOf(*cw.get("cert"));
      if (cw.string("key", &c.key, true)) c.key_pos = posOf(*cw.get("key"));
      c.cert = besideConfig(ctx, c.cert);
      c.key = besideConfig(ctx, c.key);
      cw.checkUnknownKeys();
      tls.certificates.push_back(std::move(c));
    }
  }
  if (w.string("min_version", &tls.min_version) && tls.min_version != "1.2" &&
      tls.min_version != "1.3")
    w.errorAt("min_version", "must be \"1.2\" or \"1.3\", got '" + tls.min_version + "'");
  if (const toml::array* a = w.array("alpn")) {
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::node* n = a->get(i);
      if (!n->is_string() || n->as_string()->get().empty() ||
          n->as_string()->get().size() > 255) {
        ctx.error(posOf(*n), path + ".alpn[" + std::to_string(i) + "]",
                  "must be a protocol name such as \"http/1.1\"");
        continue;
      }
      const std::string& name = n->as_string()->get();
      // Only an http listener speaks HTTP/2; offering it elsewhere would have a client pick
      // a protocol nobody behind the handshake answers.
      if (name == "h2" && l->protocol != Protocol::kHttp) {
        ctx.error(posOf(*n), path + ".alpn[" + std::to_string(i) + "]",
                  "\"h2\" is HTTP/2, which only http listeners speak; this listener speaks " +
                      std::string(protocolName(l->protocol)));
        continue;
      }
      tls.alpn.push_back(name);
    }
  } else if (l->protocol == Protocol::kHttp) {
    tls.alpn = {"http/1.1"};
  }
  w.checkUnknownKeys();
}

void readClusterTls(WalkContext& ctx, const toml::table& t, const std::string& path,
                    ClusterTlsConfig* tls) {
  TableWalker w(ctx, t, path);
  tls->enabled = true;
  tls->pos = tls->ca_pos = tls->cert_pos = tls->key_pos = w.pos();
  if (w.string("ca", &tls->ca)) tls->ca_pos = posOf(*w.get("ca"));
  w.boolean("verify", &tls->verify);
  if (w.string("server_name", &tls->server_name) && tls->server_name.empty())
    w.errorAt("server_name", "must not be empty (leave it out to check the backend's address)");
  const bool cert = w.string("cert", &tls->cert);
  const bool key = w.string("key", &tls->key);
  if (cert) tls->cert_pos = posOf(*w.get("cert"));
  if (key) tls->key_pos = posOf(*w.get("key"));
  if (cert && !key) w.errorAt("cert", "needs its private key too: key = \"...pem\"");
  if (key && !cert) w.errorAt("key", "needs its certificate too: cert = \"...pem\"");
  tls->ca = besideConfig(ctx, tls->ca);
  tls->cert = besideConfig(ctx, tls->cert);
  tls->key = besideConfig(ctx, tls->key);
  if (w.string("min_version", &tls->min_version) && tls->min_version != "1.2" &&
      tls->min_version != "1.3")
    w.errorAt("min_version", "must be \"1.2\" or \"1.3\", got '" + tls->min_version + "'");
  w.checkUnknownKeys();
}

}  // namespace lb
