#ifndef STREAMREG_TESTS_SUPPORT_LOOPBACK_SERVERS_H_
#define STREAMREG_TESTS_SUPPORT_LOOPBACK_SERVERS_H_

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "grpcpp/grpcpp.h"

namespace streamreg {

// Serves `services` together (a test's scripted fakes of a streamreg
// server's services) on a loopback port, appending the server to
// *servers; its address ("127.0.0.1:PORT"), or "" (and a null in
// *servers) if it does not start.
inline std::string ServeTogetherOnLoopback(
    std::initializer_list<grpc::Service*> services,
    std::vector<std::unique_ptr<grpc::Server>>* servers) {
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  for (grpc::Service* service : services) builder.RegisterService(service);
  servers->push_back(builder.BuildAndStart());
  if (servers->back() == nullptr) return "";
  return "127.0.0.1:" + std::to_string(port);
}

// Serves each of `services` on a loopback port of its own, appending the
// servers to *servers; their addresses, in order. A server that does not
// start leaves a null in *servers and no address.
inline std::vector<std::string> ServeOnLoopback(
    std::initializer_list<grpc::Service*> services,
    std::vector<std::unique_ptr<grpc::Server>>* servers) {
  std::vector<std::string> addresses;
  for (grpc::Service* service : services) {
    std::string address = ServeTogetherOnLoopback({service}, servers);
    if (!address.empty()) addresses.push_back(std::move(address));
  }
  return addresses;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_LOOPBACK_SERVERS_H_
