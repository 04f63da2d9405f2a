// silod: one Silo node. `silod --role proxy|target|all --config FILE [overrides]`.
#include <CLI/CLI.hpp>
#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "base/log.h"
#include "config/config.h"
#include "node.h"

int main(int argc, char** argv) {
  // Large buffers (a batch's read-ahead entries, a run's answer) always come from mmap
  // and go back to the system when freed. glibc would otherwise raise its mmap threshold
  // after the first such free, serve later ones from its arenas and keep what they
  // leave, so memory would no longer follow what is in use (docs/shards.md "Batch GET").
  // Setting it also fixes glibc's trim threshold at 128 KiB; keep the heap's top as the
  // dynamic mode would (twice the mmap threshold), so buffers of a few hundred KiB freed
  // and taken again per request do not move the heap's end each time.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  mallopt(M_TRIM_THRESHOLD, 8 << 20);
  CLI::App app{
      "silod: a Silo node (proxy gateway, storage target, or both).\n"
      "The config file holds {\"node\": {...}, \"cluster\": {...}} (docs/configuration.md);\n"
      "flags override it, and each flag's variable (SILOD_ID for --id, ...) stands for a flag not given.\n"
      "Example, one process serving everything on port 8080:\n"
      "  silod --role all --data-dir /var/lib/silo --port 8080",
      "silod"};
  std::string config_path, role, id, host, data_dir, primary, log_level, ready_file, public_url;
  std::string tls_cert, tls_key, tls_ca;
  bool tls_require_client_cert = false;
  std::vector<std::string> mountpaths;
  int port = -1;
  app.add_option("--config", config_path, "Config file (JSON)")->envname("SILOD_CONFIG")->check(CLI::ExistingFile);
  app.add_option("--role", role, "proxy | target | all")->envname("SILOD_ROLE")->check(CLI::IsMember({"proxy", "target", "all"}));
  app.add_option("--id", id, "Node id, stable across restarts")->envname("SILOD_ID");
  app.add_option("--host", host, "Address to listen on")->envname("SILOD_HOST");
  app.add_option("--port", port, "Port to listen on (0: any free port)")->envname("SILOD_PORT")->check(CLI::Range(0, 65535));
  app.add_option("--public-url", public_url, "URL other nodes and clients use to reach this node")
      ->envname("SILOD_PUBLIC_URL");
  app.add_option("--data-dir", data_dir, "Directory for node state (and the default mountpath)")
      ->envname("SILOD_DATA_DIR");
  app.add_option("--mountpath", mountpaths, "A drive directory for objects (repeat for several; the variable: comma-separated)")
      ->envname("SILOD_MOUNTPATHS")
      ->delimiter(',');
  app.add_option("--primary", primary, "URL of the primary proxy to join (on the primary: none, or its own URL)")
      ->envname("SILOD_PRIMARY");
  app.add_option("--log-level", log_level, "trace | debug | info | warn | error")->envname("SILOD_LOG_LEVEL");
  app.add_option("--ready-file", ready_file, "Written with the node's port and pid once it serves")
      ->envname("SILOD_READY_FILE");
  app.add_option("--tls-cert", tls_cert, "PEM certificate (chain) for HTTPS: the port then serves HTTPS only")
      ->envname("SILOD_TLS_CERT");
  app.add_option("--tls-key", tls_key, "PEM private key of --tls-cert")->envname("SILOD_TLS_KEY");
  app.add_option("--tls-ca", tls_ca, "PEM CA bundle trusted for calls to other nodes (and client certificates)")
      ->envname("SILOD_TLS_CA");
  app.add_flag("--tls-require-client-cert", tls_require_client_cert,
               "Mutual TLS: every client must show a certificate --tls-ca signed")
      ->envname("SILOD_TLS_REQUIRE_CLIENT_CERT");
  CLI11_PARSE(app, argc, argv);

  silo::Result<silo::config::Config> loaded =
      config_path.empty() ? silo::Result<silo::config::Config>(silo::config::Config{})
                          : silo::config::load(config_path);
  if (!loaded) {
    std::fprintf(stderr, "silod: %s\n", loaded.error().message().c_str());
    return 2;
  }
  silo::config::Config config = std::move(*loaded);
  auto& node = config.node;
  if (!role.empty()) node.role = role == "proxy" ? silo::config::Role::kProxy
                                 : role == "target" ? silo::config::Role::kTarget
                                                    : silo::config::Role::kAll;
  if (!id.empty()) node.id = id;
  if (!host.empty()) node.host = host;
  if (port >= 0) node.port = static_cast<uint16_t>(port);
  if (!public_url.empty()) node.public_url = public_url;
  if (!data_dir.empty()) node.data_dir = data_dir;
  if (!mountpaths.empty()) node.mountpaths = mountpaths;
  if (!primary.empty()) node.primary_url = primary;
  if (!log_level.empty()) node.log_level = log_level;
  if (!ready_file.empty()) node.ready_file = ready_file;
  if (!tls_cert.empty()) node.tls.cert_file = tls_cert;
  if (!tls_key.empty()) node.tls.key_file = tls_key;
  if (!tls_ca.empty()) node.tls.ca_file = tls_ca;
  if (tls_require_client_cert) node.tls.require_client_cert = true;
  // The admin S3 credentials (CONTRACT.md "Credentials").
  if (const char* key = std::getenv("SILO_ACCESS_KEY"); key != nullptr && *key != '\0') {
    config.cluster.auth.admin_access_key = key;
  }
  if (const char* secret = std::getenv("SILO_SECRET_KEY"); secret != nullptr && *secret != '\0') {
    config.cluster.auth.admin_secret_key = secret;
  }
  if (const silo::Status s = silo::config::finalize(config); !s.is_ok()) {
    std::fprintf(stderr, "silod: %s\n", s.message().c_str());
    return 2;
  }
  if (const silo::Status s = silo::log::init(node.log_level, node.id); !s.is_ok()) {
    std::fprintf(stderr, "silod: %s\n", s.message().c_str());
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a client that goes away is an error code, not a death

  auto created = silo::silod::Node::create(std::move(config));
  if (!created) {
    SILO_LOG_ERROR("cannot start: {}", created.error());
    std::fprintf(stderr, "silod: cannot start: %s\n", created.error().to_string().c_str());
    return 1;
  }
  return (*created)->run();
}
