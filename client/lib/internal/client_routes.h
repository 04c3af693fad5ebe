#ifndef STREAMREG_CLIENT_LIB_INTERNAL_CLIENT_ROUTES_H_
#define STREAMREG_CLIENT_LIB_INTERNAL_CLIENT_ROUTES_H_

#include "client/lib/client.h"
#include "client/lib/internal/server_router.h"

namespace streamreg {

// The library's way inside a Client, for its sessions (and the project's
// own tools): the router that says where calls about a model go, which
// server to tell of a failed stream, and how many a call may go to. Not
// installed: users hold a Client and its sessions only.
class ClientRoutes {
 public:
  static ServerRouter& Of(Client& client) { return *client.router_; }
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INTERNAL_CLIENT_ROUTES_H_
