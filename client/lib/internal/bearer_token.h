#ifndef STREAMREG_CLIENT_LIB_INTERNAL_BEARER_TOKEN_H_
#define STREAMREG_CLIENT_LIB_INTERNAL_BEARER_TOKEN_H_

#include <memory>
#include <string>

#include "grpcpp/support/client_interceptor.h"

namespace streamreg {

// Makes interceptors that send "authorization: Bearer <token>" with every
// call of a channel (the streamreg server's --auth_tokens). An interceptor
// rather than gRPC's call credentials, which refuse plaintext channels.
class BearerTokenInterceptorFactory final
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerTokenInterceptorFactory(const std::string& token)
      : authorization_("Bearer " + token) {}

  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override;

 private:
  const std::string authorization_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INTERNAL_BEARER_TOKEN_H_
