#pragma once

// The one way a node maps a request to its handler: a table of (method, path pattern) ->
// handler, searched in the order the routes were added. No handler cuts paths by hand.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "http/message.h"
#include "http/server.h"

namespace silo::http {

// One path pattern:
//   "/v1/cluster/map"         exactly this path; the rest is "".
//   "/v1/jobs**"              "/v1/jobs" itself or anything under "/v1/jobs/"; the rest is
//                             what follows "/v1/jobs" ("" or "/...").
//   "/v1/internal/objects/*"  anything that starts so; the rest is what follows (may be "").
// Immutable; share freely.
class PathPattern {
 public:
  // Requires: `pattern` starts with '/' and uses '*' only as one of the endings above.
  explicit PathPattern(std::string_view pattern);
  // Whether `path` matches; then `rest` is set as above (a view into `path`).
  bool matches(std::string_view path, std::string_view& rest) const;
  const std::string& text() const { return text_; }

 private:
  enum class Kind { kExact, kSubtree, kPrefix };
  std::string text_;
  std::string base_;  // the pattern without its ending
  Kind kind_ = Kind::kExact;
};

// Routes of one kind of request to handlers that take a `Context` (what the dispatcher
// learned before routing, e.g. whether the caller is an admin) and the rest of the path.
// Filled once at start, then read by every io thread without a lock.
template <typename Context>
class RouteTable {
 public:
  using Handler = std::function<Awaitable<void>(Exchange& exchange, const Context& context, std::string_view rest)>;

  // `method` nullopt: any method.
  void add(std::optional<Method> method, std::string_view pattern, Handler handler) {
    SILO_CHECK(handler) << "route " << pattern << " without a handler";
    routes_.push_back({method, PathPattern(pattern), std::move(handler)});
  }

  // The handler of the first route that matches, with `rest` set; null when none does.
  const Handler* find(Method method, std::string_view path, std::string_view& rest) const {
    for (const Route& route : routes_) {
      if (route.method && *route.method != method) continue;
      if (route.pattern.matches(path, rest)) return &route.handler;
    }
    return nullptr;
  }

 private:
  struct Route {
    std::optional<Method> method;
    PathPattern pattern;
    Handler handler;
  };
  std::vector<Route> routes_;
};

}  // namespace silo::http
