// A node's membership of its cluster, as the primary and its peers see it: keepalives
// (on the primary), map installs (metasync), an admin's attach of a node started without
// a primary, and the primary's decommission (leave). Split from node.cc along that noun.
#include "node.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <fstream>

#include "base/log.h"
#include "http/reply.h"
#include "wire/json.h"

namespace silo::silod {
namespace {

namespace asio = boost::asio;

constexpr size_t kMaxControlBody = 16 * 1024 * 1024;
// <state>/attached_primary: the primary URL an admin's add gave a node started without one.
constexpr const char* kAttachedFile = "attached_primary";
// Written when the primary retires this node (POST /v1/cluster/leave): it never joins again.
constexpr const char* kLeftFile = "decommissioned";

// Reads an intra-cluster protobuf request body.
template <typename Message>
http::Awaitable<Result<Message>> read_message(http::Exchange& exchange) {
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxControlBody));
  co_return wire::decode<Message>(body, wire::Source::kNetwork);
}

}  // namespace

http::Awaitable<void> Node::handle_keepalive(http::Exchange& exchange) {
  if (!is_primary()) {
    // A node that joins through this proxy (its seed) learns where the primary is.
    const auto map = maps_->node_map();
    http::ResponseHead head;
    head.status = 409;
    head.headers.set("Content-Type", "application/json");
    for (const auto& n : map->nodes()) {
      if (n.id() == map->primary_id() && n.id() != self_.id()) head.headers.set(cluster::kPrimaryUrlHeader, n.url());
    }
    const std::string body =
        wire::error_json(Status::failed_precondition("node {} is not the primary", self_.id()));
    std::ignore = co_await exchange.response().send(std::move(head), body);  // the client may be gone
    co_return;
  }
  auto request = co_await read_message<wire::KeepaliveRequest>(exchange);
  if (!request) {
    co_await http::send_error(exchange, request.error());
    co_return;
  }
  auto response = co_await primary_->keepalive(*request);
  if (!response) {
    co_await http::send_error(exchange, response.error());
    co_return;
  }
  http::ResponseHead head;
  head.headers.set("Content-Type", "application/x-protobuf");
  std::ignore = co_await exchange.response().send(std::move(head), wire::encode(std::move(*response)));
}

http::Awaitable<void> Node::handle_metasync(http::Exchange& exchange) {
  if (is_primary()) {
    co_await http::send_error(exchange, Status::failed_precondition(
                                               "node {} is the primary; it does not take maps from others",
                                               self_.id()));
    co_return;
  }
  auto request = co_await read_message<wire::MetasyncRequest>(exchange);
  if (!request) {
    co_await http::send_error(exchange, request.error());
    co_return;
  }
  const Status s = co_await cluster::install_maps(*maps_, state_disk_,
                                                  request->has_node_map() ? &request->node_map() : nullptr,
                                                  request->has_bucket_map() ? &request->bucket_map() : nullptr);
  if (!s.is_ok()) {
    co_await http::send_error(exchange, s);
    co_return;
  }
  co_await http::send_json(exchange, 200, "{}");
}

std::string Node::left_marker() const { return config_.node.data_dir + "/state/" + kLeftFile; }

std::string Node::read_attached_primary() const {
  std::ifstream in(config_.node.data_dir + "/state/" + kAttachedFile);
  std::string url;
  std::getline(in, url);
  return url;
}

http::Awaitable<void> Node::handle_attach(http::Exchange& exchange) {
  Status s;
  auto body = co_await http::read_all(exchange.body(), 4096);
  if (!body) {
    s = body.error();
  } else if (member_ == nullptr || is_primary()) {
    s = Status::failed_precondition("node {} is the primary", self_.id());
  } else if (member_->has_seed() || !maps_->node_map()->nodes().empty()) {
    s = Status::failed_precondition("node {} belongs to a cluster already (node map v{})", self_.id(),
                                    maps_->node_map()->version());
  } else if (auto primary = http::Endpoint::parse(*body); !primary) {
    s = primary.error();
  } else {
    const std::string url = *body;  // captured by reference inside co_await (docs/adr/0003)
    s = co_await state_disk_.run([this, &url] {
      return cluster::write_file_atomically(config_.node.data_dir + "/state/" + kAttachedFile, url + "\n");
    });
    if (s.is_ok()) {
      member_->set_seed(*primary);
      s = co_await member_->sync();
      if (s.is_ok()) SILO_LOG_INFO("added to the cluster of the primary at {}", *body);
    }
  }
  if (!s.is_ok()) {
    co_await http::send_error(exchange, s);
    co_return;
  }
  co_await http::send_json(exchange, 200, "{}");
}

http::Awaitable<void> Node::handle_leave(http::Exchange& exchange) {
  if (is_primary()) {
    co_await http::send_error(exchange, Status::failed_precondition("node {} is the primary", self_.id()));
    co_return;
  }
  SILO_LOG_INFO("decommissioned by the primary: leaving the cluster and stopping");
  if (member_) member_->stop();  // no keepalive may add this node back
  // Remembered, so that a restart does not join again (docs/kubernetes.md "Scaling").
  const std::string marker = left_marker();
  const Status s = co_await state_disk_.run(
      [&marker] { return cluster::write_file_atomically(marker, "decommissioned\n"); });
  if (!s.is_ok()) SILO_LOG_ERROR("recording the decommission in {}: {}", marker, s);
  co_await http::send_json(exchange, 200, "{}");
  if (!is_stopping_.exchange(true)) asio::co_spawn(io_, shutdown(), asio::detached);
}

}  // namespace silo::silod
