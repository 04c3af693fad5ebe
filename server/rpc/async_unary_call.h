#ifndef STREAMREG_SERVER_RPC_ASYNC_UNARY_CALL_H_
#define STREAMREG_SERVER_RPC_ASYNC_UNARY_CALL_H_

#include <functional>
#include <memory>
#include <utility>

#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/async_unary_call.h"
#include "server/rpc/async_call.h"

namespace streamreg {

// How a unary method's handler ends its call, on any thread, once: its
// response (filled by then) and status are sent (as gRPC's
// ServerUnaryReactor::Finish).
class UnaryReactor {
 public:
  virtual void Finish(grpc::Status status) = 0;

 protected:
  ~UnaryReactor() = default;
};

// One call of a unary method served through the completion queue
// (AsyncCall): its request, its response and how it is answered.
template <typename Request, typename Response>
class AsyncUnaryCall final : public AsyncCall, public UnaryReactor {
 public:
  using Writer = grpc::ServerAsyncResponseWriter<Response>;
  // A method: how a call of it is requested (the generated service's
  // RequestName on `queue`) and what handles it. The handler gets the
  // call's context, request and response, which live until it finishes.
  struct Method {
    std::function<void(grpc::ServerContext*, Request*, Writer*,
                       grpc::ServerCompletionQueue*, void*)>
        request;
    std::function<void(grpc::ServerContext*, const Request*, Response*,
                       UnaryReactor*)>
        handle;
    CompletionQueueThread* thread = nullptr;
  };

  // Listens for the next call of `method`.
  static void Listen(std::shared_ptr<const Method> method) {
    new AsyncUnaryCall(std::move(method));
  }

  void Finish(grpc::Status status) override {
    FinishAnswering(writer_, response_, status);
  }

 private:
  explicit AsyncUnaryCall(std::shared_ptr<const Method> method)
      : AsyncCall(method->thread),
        method_(std::move(method)),
        writer_(context()) {
    method_->request(context(), &request_, &writer_, method_->thread->queue(),
                     arrival_tag());
  }

  void Arrived() override {
    Listen(method_);
    method_->handle(context(), &request_, &response_, this);
  }
  void Done() override {}

  const std::shared_ptr<const Method> method_;
  Request request_;
  Response response_;
  Writer writer_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_ASYNC_UNARY_CALL_H_
