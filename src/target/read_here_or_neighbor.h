#pragma once

// Target::read_here_or_neighbor (a template: the native and the S3 GET share it).
#include "target/target.h"

namespace silo::target {

template <typename ReadFn>
http::Awaitable<Status> Target::read_here_or_neighbor(http::Exchange& exchange, const ObjectRef& object,
                                                      ReadFn read) {
  Status s = co_await read();
  if (s.code() != Code::kNotFound || exchange.response().has_begun()) co_return s;
  if (is_local_only(exchange.request())) {
    // Asked for our copy because we had it a moment ago: it moved on since.
    co_return Status::unavailable("object {} moved while being read; retry", object.name);
  }
  if (!is_rebalancing()) co_return s;
  s = co_await read_from_neighbor(exchange, object);
  if (s.is_ok() || exchange.response().has_begun()) co_return s;
  // Missed here and found nowhere else (or moved on): a copy may have landed here since.
  const Status again = co_await read();
  if (again.code() == Code::kNotFound && !exchange.response().has_begun()) co_return s;
  co_return again;
}

}  // namespace silo::target
