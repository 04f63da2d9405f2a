#pragma once

// The one way a node maps a request to its handler: a table of (method, path pattern) ->
// handler, searched in the order the routes were added. No handler cuts paths by hand.
#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"
#include "http/message.h"
#include "http/server.h"

namespace silo::http {

// The parameters a matched pattern captured, e.g. {"bucket": "photos"} for
// "/v1/buckets/{bucket}/props". Views into the pattern and the path: valid while both are.
class PathParams {
 public:
  static constexpr size_t kMaxParams = 4;

  // The value of `{name}`. Requires: the matched pattern has it (a handler asking for a
  // parameter its route lacks is a bug).
  std::string_view get(std::string_view name) const;
  size_t size() const { return size_; }

 private:
  friend class PathPattern;
  void clear() { size_ = 0; }
  void add(std::string_view name, std::string_view value) { values_[size_++] = {name, value}; }

  std::array<std::pair<std::string_view, std::string_view>, kMaxParams> values_{};
  size_t size_ = 0;
};

// One path pattern:
//   "/v1/cluster/map"         exactly this path; the rest is "".
//   "/v1/jobs**"              "/v1/jobs" itself or anything under "/v1/jobs/"; the rest is
//                             what follows "/v1/jobs" ("" or "/...").
//   "/v1/internal/objects/*"  anything that starts so; the rest is what follows (may be "").
//   "/v1/jobs/{id}/wait"      a whole segment written {name} matches one non-empty segment
//                             (no '/') and is captured as a parameter; any ending above may
//                             follow.
//   "/v1/users/{path...}"     a final {name...} captures the rest of the path as `name`,
//                             '/' included, maybe empty (as "/v1/users/*" does).
// Immutable; share freely.
class PathPattern {
 public:
  // Requires: `pattern` starts with '/', uses '*' only as one of the endings above, and
  // '{name}' only as a whole segment, at most PathParams::kMaxParams times.
  explicit PathPattern(std::string_view pattern);
  // Whether `path` matches; then `rest` is set as above (a view into `path`).
  bool matches(std::string_view path, std::string_view& rest) const;
  // The same, and `params` holds what the pattern's {name} segments captured.
  bool matches(std::string_view path, std::string_view& rest, PathParams& params) const;
  const std::string& text() const { return text_; }

 private:
  enum class Kind { kExact, kSubtree, kPrefix };
  // Literal text, or (is_param) the name of one captured segment.
  struct Piece {
    std::string text;
    bool is_param = false;
  };
  std::string text_;
  std::vector<Piece> pieces_;  // the pattern without its ending
  std::string tail_name_;      // the name of a final {name...}; empty: none
  Kind kind_ = Kind::kExact;
};

// Routes of one kind of request to handlers that take a `Context` (what the dispatcher
// learned before routing, e.g. whether the caller is an admin) and the rest of the path.
// Filled once at start, then read by every io thread without a lock.
template <typename Context>
class RouteTable {
 public:
  using Handler = std::function<Awaitable<void>(Exchange& exchange, const Context& context, std::string_view rest)>;
  // A handler of a pattern with parameters: it gets them split, never the raw path.
  using ParamHandler = std::function<Awaitable<void>(Exchange& exchange, const Context& context,
                                                     const PathParams& params)>;

  // `method` nullopt: any method.
  void add(std::optional<Method> method, std::string_view pattern, Handler handler) {
    SILO_CHECK(handler) << "route " << pattern << " without a handler";
    routes_.push_back({method, PathPattern(pattern), std::move(handler)});
  }

  // The same for a handler of the pattern's parameters. The dispatcher keeps calling the
  // found handler with `rest`; the parameters are taken again from the request's own path,
  // which is the path the dispatcher routed by.
  void add(std::optional<Method> method, std::string_view pattern, ParamHandler handler) {
    SILO_CHECK(handler) << "route " << pattern << " without a handler";
    add(method, pattern, Handler(ParamRoute{PathPattern(pattern), std::move(handler)}));
  }

  // The handler of the first route that matches, with `rest` set; null when none does.
  const Handler* find(Method method, std::string_view path, std::string_view& rest) const {
    const Route* route = find_route(method, path, rest);
    return route == nullptr ? nullptr : &route->handler;
  }

  // The pattern of the first route that matches (what find() would pick); null when none
  // does. For tests and diagnostics.
  const PathPattern* find_pattern(Method method, std::string_view path) const {
    std::string_view rest;
    const Route* route = find_route(method, path, rest);
    return route == nullptr ? nullptr : &route->pattern;
  }

 private:
  struct Route {
    std::optional<Method> method;
    PathPattern pattern;
    Handler handler;
  };
  // A named function object rather than a capturing lambda: it is a coroutine, and its
  // frame refers to it (it lives in the table, as long as the node).
  struct ParamRoute {
    PathPattern pattern;
    ParamHandler handler;
    Awaitable<void> operator()(Exchange& exchange, const Context& context, std::string_view) const {
      PathParams params;
      std::string_view rest;
      SILO_CHECK(pattern.matches(exchange.request().path, rest, params))
          << "routed " << exchange.request().path << " to " << pattern.text()
          << " that does not match it";
      co_await handler(exchange, context, params);
    }
  };

  const Route* find_route(Method method, std::string_view path, std::string_view& rest) const {
    for (const Route& route : routes_) {
      if (route.method && *route.method != method) continue;
      if (route.pattern.matches(path, rest)) return &route;
    }
    return nullptr;
  }

  std::vector<Route> routes_;
};

}  // namespace silo::http
