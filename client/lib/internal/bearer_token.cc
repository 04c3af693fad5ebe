#include "client/lib/internal/bearer_token.h"

namespace streamreg {
namespace {

// Adds the authorization metadata to one call.
class BearerTokenInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit BearerTokenInterceptor(const std::string* authorization)
      : authorization_(authorization) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization",
                                                 *authorization_);
    }
    methods->Proceed();
  }

 private:
  const std::string* authorization_;  // the factory's, which outlives calls
};

}  // namespace

grpc::experimental::Interceptor*
BearerTokenInterceptorFactory::CreateClientInterceptor(
    grpc::experimental::ClientRpcInfo* /*info*/) {
  return new BearerTokenInterceptor(&authorization_);
}

}  // namespace streamreg
