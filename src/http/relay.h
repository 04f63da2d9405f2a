#pragma once

#include "http/client.h"
#include "http/server.h"

namespace silo::http {

// Streams the request of `exchange` (method, target, end-to-end headers, body) to `to`
// and the answer back, with one bounded buffer in each direction: back-pressure comes from
// the slower side, memory stays constant whatever the object size. `extra` headers are
// added to the relayed request.
// Returns an error only when nothing was sent to the client yet (the caller answers it);
// a failure after the response began leaves it short, and the server closes the connection.
http::Awaitable<Status> relay(http::Exchange& exchange, http::Client& client, const http::Endpoint& to,
                              const http::Headers& extra);

}  // namespace silo::http
