#ifndef STREAMREG_TESTS_SUPPORT_LOOPBACK_SERVERS_H_
#define STREAMREG_TESTS_SUPPORT_LOOPBACK_SERVERS_H_

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"

namespace streamreg {

// Serves each of `services` (a test's scripted fakes of a streamreg
// server) on a loopback port of its own, appending the servers to
// *servers; their addresses ("127.0.0.1:PORT"), in order. A server that
// does not start leaves a null in *servers and no address.
inline std::vector<std::string> ServeOnLoopback(
    std::initializer_list<grpc::Service*> services,
    std::vector<std::unique_ptr<grpc::Server>>* servers) {
  std::vector<std::string> addresses;
  for (grpc::Service* service : services) {
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(service);
    servers->push_back(builder.BuildAndStart());
    if (servers->back() != nullptr) {
      addresses.push_back("127.0.0.1:" + std::to_string(port));
    }
  }
  return addresses;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_LOOPBACK_SERVERS_H_
